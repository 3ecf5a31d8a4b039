"""`onnxop bench`: copy bandwidth on one backend, under each engine.

For each size and engine (wgpu, and Dawn when installed, unless one is
chosen): every copy kernel the adapter can run, the adapter's own
``copy_buffer_to_buffer``, upload and readback the way the streaming copy
does them; and numpy's memcpy on the host. Every round runs each measure of
every engine once (in a rotated order), so a noisy machine slows them alike,
and the ratios kernel/copy (same engine) and kernel/memcpy are medians of
per-round ratios.

The machine may be shared: for each round the CPU time other processes took
(``/proc/stat`` minus this process's own ``/proc/self/stat``) is recorded.
On a CPU adapter, where the kernel runs on the same cores, a round in which
others took more than ``BUSY_SHARE`` of the machine is flagged and left out
of the medians (unless every round is). Every kernel's output is verified
byte for byte against the random source. The table and the --json
document are cli/bench_report.py's.
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import time

from ..errors import UsageError
from .bench_report import BUSY_SHARE, EngineRun, Report, Round, Row, human

CANDIDATE_SIZES = "1M,16M,256M,1G"  # the default, less what available memory cannot hold
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
HOST_BLOCK = 256 << 20  # numpy memcpy runs over blocks of at most this size
MIN_JUDGED = 0.1  # seconds: a shorter round is not judged (/proc/stat counts 10 ms ticks)


def parse_sizes(text: str) -> list[int]:
    """``"1M,16M,1G"`` -> byte counts (K, M, G are powers of 1024)."""
    sizes = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(?:i?B)?\s*", part, re.IGNORECASE)
        if not m or int(m.group(1)) == 0:
            raise UsageError(f"bench: --sizes takes sizes like 1M,16M,1G; got {part.strip()!r}")
        sizes.append(int(m.group(1)) * _UNITS[m.group(2).upper()])
    return sizes


def memory_needed(size: int) -> int:
    """Bytes one size takes: source and output buffers, two host blocks."""
    return 2 * size + 2 * min(size, HOST_BLOCK) + (64 << 20)


def default_sizes(available: int | None = None, engines: int = 1) -> list[int]:
    """CANDIDATE_SIZES that fit in half the memory available now (the
    machine may be shared) with one set of buffers per engine, and always
    the smallest."""
    if available is None:
        available = _mem_available()
    sizes = parse_sizes(CANDIDATE_SIZES)
    return [s for s in sizes if s == sizes[0] or engines * memory_needed(s) <= available // 2]


def _mem_available() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 4 << 30  # unknown: assume a small machine


# --------------------------------------------------------------------- load


class CpuClock:
    """CPU seconds used by the whole machine and by this process (all its
    threads, lavapipe's workers included), from /proc; zeros elsewhere."""

    def __init__(self) -> None:
        self.tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self.cpus = os.cpu_count() or 1

    def read(self) -> tuple[float, float]:
        try:
            with open("/proc/stat") as f:
                fields = [int(x) for x in f.readline().split()[1:]]
            with open("/proc/self/stat") as f:
                own = f.read().rsplit(")", 1)[1].split()
        except (OSError, ValueError, IndexError):
            return 0.0, 0.0
        busy = sum(fields[:8]) - fields[3] - fields[4]  # all but idle and iowait (guest is in user)
        return busy / self.tick, (int(own[11]) + int(own[12])) / self.tick  # utime + stime


def bench_targets(backend: str | None, pinned: bool = False) -> list[str]:
    """The Gpu keys ``bench`` measures: ``backend`` on every installed engine
    (``vulkan``, ``dawn-vulkan``), or on its one engine when ``pinned`` (an
    --engine or $ONNXOP_ENGINE was given) or when ``backend`` names one."""
    from ..gpu import engines
    from ..gpu.device import ENV_BACKEND, gpu_key, resolve

    engine, name = resolve(backend)
    spec = (backend or os.environ.get(ENV_BACKEND) or "").strip().lower()
    prefix, _, rest = spec.partition("-")
    if pinned or os.environ.get(engines.ENV_ENGINE) or (rest and prefix in engines.ENGINES):
        return [gpu_key(engine, name)]
    return [gpu_key(e, name) for e in engines.SIDE_BY_SIDE if engines.installed(e)]


def run_bench(
    backend: str | None,
    sizes: list[int] | None = None,
    *,
    repeats: int = 5,
    warmup: int = 1,
    tune: bool = False,
    pinned: bool = True,
) -> Report:
    """Measure everything at every size on ``backend``'s adapter, on every
    installed engine unless ``pinned`` (see bench_targets), their measures
    interleaved in each round; ``tune`` first measures the kernel choice
    and the schedule questions' answers again and rewrites their cache entries."""
    import numpy as np

    from ..gpu import get_gpu
    from ..gpu.measure import Bench
    from ..gpu.choose import QUESTIONS, ask, choice
    from ..gpu.buffers import can_map

    if repeats < 1 or warmup < 0:
        raise UsageError(f"bench: --repeats must be >= 1 and --warmup >= 0, got {repeats} and {warmup}")
    gpus = [get_gpu(key) for key in bench_targets(backend, pinned)]
    runs = []
    for gpu in gpus:
        chosen = choice(gpu, tune=tune)
        answers = {q: ask(gpu, q, tune=tune) for q in QUESTIONS}
        runs.append(
            EngineRun(
                engine=gpu.engine_name,
                adapter=gpu.name,
                backend=gpu.info.our_backend,
                driver=gpu.info.driver,
                timing=_timing(gpu.features),
                chosen_kernel=chosen.kernel,
                chosen_reason=chosen.reason,
                calibration_gbps=dict(chosen.gbps),
                buffers="mapped" if can_map(gpu) else "staged",
                schedules={q: a.document() | {"gbps": dict(a.gbps)} for q, a in answers.items()},
            )
        )
    clock = CpuClock()
    first = runs[0]
    report = Report(
        adapter=first.adapter,
        backend=first.backend,
        driver=first.driver,
        date=time.strftime("%Y-%m-%d %H:%M %Z"),
        timing=first.timing,
        repeats=repeats,
        warmup=warmup,
        chosen_kernel=first.chosen_kernel,
        chosen_reason=first.chosen_reason,
        calibration_gbps=first.calibration_gbps,
        buffers=first.buffers,
        cpus=clock.cpus,
        load_average=[round(x, 2) for x in os.getloadavg()],
        engines=runs,
    )
    cpu_adapter = any(gpu.info.adapter_type == "CPU" for gpu in gpus)
    for size in sizes or default_sizes(engines=len(gpus)):
        _progress(f"bench: {human(size)} on {', '.join(f'{g.name} ({g.engine_name})' for g in gpus)}")
        benches: dict[str, Bench] = {}
        try:
            for gpu in gpus:
                benches[gpu.engine_name] = Bench(gpu, size)
            rows, rounds = _measure(benches, size, repeats, warmup, np, clock, cpu_adapter)
        finally:
            for bench in benches.values():
                bench.close()
        report.rows += rows
        report.rounds[str(size)] = rounds
    return report


def _timing(features) -> str:
    """How gpu/measure.py times kernels and copy_buffer_to_buffer on a device."""
    if "timestamp-query" not in features:
        return "wall clock"
    if "timestamp-query-inside-encoders" not in features:  # e.g. Dawn: pass timestamps only
        return "GPU timestamps (copy_buffer_to_buffer: wall clock)"
    return "GPU timestamps"


MEMCPY = (None, "numpy memcpy")  # the host's measure: no engine


def _measure(benches: dict, size: int, repeats: int, warmup: int, np, clock: CpuClock, cpu_adapter: bool):
    host_block = min(size, HOST_BLOCK)
    chunk = max(bench.chunk for bench in benches.values())
    host_a = np.random.default_rng(1).integers(0, 256, max(host_block, chunk), dtype=np.uint8)
    host_b = np.empty_like(host_a)

    def memcpy() -> float:
        t0 = time.perf_counter()
        for offset in range(0, size, host_block):
            n = min(host_block, size - offset)
            np.copyto(host_b[:n], host_a[:n])
        return time.perf_counter() - t0

    # (engine, measure) -> one timed run; every engine's measures share each round.
    measures: dict[tuple[str | None, str], object] = {}
    for engine, bench in benches.items():
        for k in bench.kernels:
            measures[engine, f"kernel {k.name}"] = lambda b=bench, name=k.name: b.kernel(name)
        measures[engine, "copy_buffer_to_buffer"] = bench.copy
        measures[engine, "upload"] = lambda b=bench: b.upload(host_a)
        measures[engine, "readback"] = lambda b=bench: b.read_back(host_b)
    measures[MEMCPY] = memcpy
    names = list(measures)

    for _ in range(warmup):
        for run in measures.values():
            run()  # type: ignore[operator]
    times: dict[tuple[str | None, str], list[float]] = {name: [] for name in measures}
    rounds: list[Round] = []
    for r in range(repeats):
        machine0, own0 = clock.read()
        t0 = time.perf_counter()
        for name in names[r % len(names) :] + names[: r % len(names)]:
            times[name].append(measures[name]())  # type: ignore[operator]
        wall = time.perf_counter() - t0
        machine1, own1 = clock.read()
        other = max(0.0, (machine1 - machine0) - (own1 - own0))
        # /proc counts in ticks (10 ms): a shorter round cannot be judged.
        share = other / (wall * clock.cpus) if wall >= MIN_JUDGED else None
        flagged = cpu_adapter and share is not None and share > BUSY_SHARE
        rounds.append(Round(round(wall, 4), round(other, 3), None if share is None else round(share, 3), flagged))

    # Exactness, per kernel: poison the output, run once more, compare all bytes.
    for bench in benches.values():
        for k in bench.kernels:
            bench.poison()
            bench.kernel(k.name)
            bench.verify(f"kernel {k.name}")

    keep = [i for i, rd in enumerate(rounds) if not rd.flagged] or list(range(repeats))
    rows = []
    for engine, name in names:
        ts = [times[engine, name][i] for i in keep]
        gbps = [size / t / 1e9 for t in ts]
        kernel = name[len("kernel ") :] if name.startswith("kernel ") else None
        row = Row(
            size=size,
            engine=engine,
            measure="kernel" if kernel else name,
            kernel=kernel,
            gbps_median=statistics.median(gbps),
            gbps_min=min(gbps),
            gbps_max=max(gbps),
            rounds_used=len(keep),
        )
        if kernel:
            copies = [times[engine, "copy_buffer_to_buffer"][i] for i in keep]
            memcpys = [times[MEMCPY][i] for i in keep]
            row.kernel_per_copy = statistics.median(c / t for c, t in zip(copies, ts))
            row.kernel_per_memcpy = statistics.median(m / t for m, t in zip(memcpys, ts))
            row.verified = True
        rows.append(row)
    return rows, rounds


def _progress(text: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
