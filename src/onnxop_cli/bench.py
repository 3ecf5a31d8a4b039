"""`onnxop bench`: copy bandwidth on one adapter.

For each size: every copy kernel the adapter can run, the adapter's own
``copy_buffer_to_buffer``, upload and readback the way the streaming copy
does them, and numpy's memcpy on the host. Every round runs each measure
once (in a rotated order), so a noisy machine slows them alike, and the
ratios kernel/copy and kernel/memcpy are medians of per-round ratios.

The machine may be shared: for each round the CPU time other processes took
(``/proc/stat`` minus this process's own ``/proc/self/stat``) is recorded.
On a CPU adapter, where the kernel runs on the same cores, a round in which
others took more than ``BUSY_SHARE`` of the machine is flagged and left out
of the medians (unless every round is). Every kernel's output is verified
byte for byte against the random source.
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field

from .errors import UsageError

CANDIDATE_SIZES = "1M,16M,256M,1G"  # the default, less what available memory cannot hold
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
HOST_BLOCK = 256 << 20  # numpy memcpy runs over blocks of at most this size
BUSY_SHARE = 0.25  # other processes' share of all CPUs above which a round is flagged
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


def default_sizes(available: int | None = None) -> list[int]:
    """CANDIDATE_SIZES that fit in half the memory available now (the
    machine may be shared), and always the smallest."""
    if available is None:
        available = _mem_available()
    sizes = parse_sizes(CANDIDATE_SIZES)
    return [s for s in sizes if s == sizes[0] or memory_needed(s) <= available // 2]


def _mem_available() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 4 << 30  # unknown: assume a small machine


def human(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


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


@dataclass
class Round:
    wall_s: float
    other_cpu_s: float  # CPU seconds other processes took during the round
    other_share: float | None  # of all CPUs' time during the round; None if too short to tell
    flagged: bool


@dataclass
class Row:
    size: int
    measure: str  # kernel, copy_buffer_to_buffer, upload, readback, numpy memcpy
    kernel: str | None
    gbps_median: float
    gbps_min: float
    gbps_max: float
    rounds_used: int
    kernel_per_copy: float | None = None
    kernel_per_memcpy: float | None = None
    verified: bool | None = None


@dataclass
class Report:
    adapter: str
    backend: str
    driver: str
    date: str
    timing: str
    repeats: int
    warmup: int
    chosen_kernel: str
    chosen_reason: str  # measured, cached, forced, only (see gpu/calibrate.py)
    calibration_gbps: dict[str, float]
    buffers: str
    cpus: int
    load_average: list[float]
    rounds: dict[str, list[Round]] = field(default_factory=dict)  # per size, in bytes
    rows: list[Row] = field(default_factory=list)


def run_bench(
    backend: str | None, sizes: list[int] | None = None, *, repeats: int = 5, warmup: int = 1, tune: bool = False
) -> Report:
    """Measure everything at every size on ``backend``'s adapter; ``tune``
    first measures the kernel choice again and rewrites its cache entry."""
    import numpy as np

    from .gpu import get_gpu
    from .gpu.bench import Bench
    from .gpu.calibrate import choice
    from .gpu.copy import can_map

    if repeats < 1 or warmup < 0:
        raise UsageError(f"bench: --repeats must be >= 1 and --warmup >= 0, got {repeats} and {warmup}")
    gpu = get_gpu(backend)
    chosen = choice(gpu, tune=tune)
    clock = CpuClock()
    report = Report(
        adapter=gpu.name,
        backend=gpu.info.our_backend,
        driver=gpu.info.driver,
        date=time.strftime("%Y-%m-%d %H:%M %Z"),
        timing="GPU timestamps" if "timestamp-query" in gpu.features else "wall clock",
        repeats=repeats,
        warmup=warmup,
        chosen_kernel=chosen.kernel,
        chosen_reason=chosen.reason,
        calibration_gbps=dict(chosen.gbps),
        buffers="mapped" if can_map(gpu) else "staged",
        cpus=clock.cpus,
        load_average=[round(x, 2) for x in os.getloadavg()],
    )
    cpu_adapter = gpu.info.adapter_type == "CPU"
    for size in sizes or default_sizes():
        _progress(f"bench: {human(size)} on {gpu.name}")
        bench = Bench(gpu, size)
        try:
            rows, rounds = _measure(bench, size, repeats, warmup, np, clock, cpu_adapter)
        finally:
            bench.close()
        report.rows += rows
        report.rounds[str(size)] = rounds
    return report


def _measure(bench, size: int, repeats: int, warmup: int, np, clock: CpuClock, cpu_adapter: bool):
    host_block = min(size, HOST_BLOCK)
    host_a = np.random.default_rng(1).integers(0, 256, max(host_block, bench.chunk), dtype=np.uint8)
    host_b = np.empty_like(host_a)

    def memcpy() -> float:
        t0 = time.perf_counter()
        for offset in range(0, size, host_block):
            n = min(host_block, size - offset)
            np.copyto(host_b[:n], host_a[:n])
        return time.perf_counter() - t0

    measures: dict[str, object] = {f"kernel {k.name}": (lambda name=k.name: bench.kernel(name)) for k in bench.kernels}
    measures["copy_buffer_to_buffer"] = bench.copy
    measures["upload"] = lambda: bench.upload(host_a)
    measures["readback"] = lambda: bench.read_back(host_b)
    measures["numpy memcpy"] = memcpy
    names = list(measures)

    for _ in range(warmup):
        for run in measures.values():
            run()  # type: ignore[operator]
    times: dict[str, list[float]] = {name: [] for name in measures}
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
    for k in bench.kernels:
        bench.poison()
        bench.kernel(k.name)
        bench.verify(f"kernel {k.name}")

    keep = [i for i, rd in enumerate(rounds) if not rd.flagged] or list(range(repeats))
    rows = []
    for name in names:
        ts = [times[name][i] for i in keep]
        gbps = [size / t / 1e9 for t in ts]
        kernel = name[len("kernel ") :] if name.startswith("kernel ") else None
        row = Row(
            size=size,
            measure="kernel" if kernel else name,
            kernel=kernel,
            gbps_median=statistics.median(gbps),
            gbps_min=min(gbps),
            gbps_max=max(gbps),
            rounds_used=len(keep),
        )
        if kernel:
            copies = [times["copy_buffer_to_buffer"][i] for i in keep]
            memcpys = [times["numpy memcpy"][i] for i in keep]
            row.kernel_per_copy = statistics.median(c / t for c, t in zip(copies, ts))
            row.kernel_per_memcpy = statistics.median(m / t for m, t in zip(memcpys, ts))
            row.verified = True
        rows.append(row)
    return rows, rounds


def _progress(text: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


# --------------------------------------------------------------------- output


def render_table(report: Report) -> str:
    gbps = ", ".join(f"{k} {v:.2f}" for k, v in report.calibration_gbps.items())
    lines = [
        f"onnxop bench on {report.adapter} ({report.backend}), driver {report.driver or '?'}",
        f"{report.date}; {report.cpus} CPUs, load average {', '.join(map(str, report.load_average))}; "
        f"timing: {report.timing}; median of {report.repeats} rounds after "
        f"{report.warmup} warm-up, (min-max); GB/s = 10^9 bytes/s",
        f"onnxop streams through kernel {report.chosen_kernel} ({report.chosen_reason}"
        f"{': ' + gbps + ' GB/s' if gbps else ''}) with {report.buffers} buffers; "
        "every kernel's output verified byte for byte",
        "",
    ]
    header = ("size", "measure", "GB/s", "(min-max)", "kernel/copy", "kernel/memcpy")
    table = [header]
    last = None
    for r in report.rows:
        name = f"kernel {r.kernel}" if r.kernel else r.measure
        if r.kernel == report.chosen_kernel:
            name += " *"
        table.append(
            (
                human(r.size) if r.size != last else "",
                name,
                f"{r.gbps_median:.2f}",
                f"({r.gbps_min:.2f}-{r.gbps_max:.2f})",
                f"{r.kernel_per_copy:.2f}x" if r.kernel_per_copy is not None else "",
                f"{r.kernel_per_memcpy:.2f}x" if r.kernel_per_memcpy is not None else "",
            )
        )
        last = r.size
    from .tables import columns, render

    cols = columns(header, names=header[:2], right=(header[2], header[4], header[5]))
    lines.append(render(cols, table[1:]))
    lines += ["", "* the kernel onnxop uses on this adapter", "", "CPU time other processes took, per round:"]
    for size, rounds in report.rounds.items():
        figures = ", ".join(
            f"{rd.other_cpu_s:.2f} s"
            + (f" ({rd.other_share:.0%})" if rd.other_share is not None else " (round too short to judge)")
            + (" !" if rd.flagged else "")
            for rd in rounds
        )
        lines.append(f"  {human(int(size))}: {figures}")
    if any(rd.flagged for rounds in report.rounds.values() for rd in rounds):
        lines.append(f"  ! others took over {BUSY_SHARE:.0%} of the CPUs: round left out of the medians")
    return "\n".join(lines)


def bench_document(report: Report) -> dict:
    """The --json document: the common keys (command, status, exit_code) and the figures."""
    from .report import base

    doc = base("bench")
    doc.update(asdict(report))
    return doc
