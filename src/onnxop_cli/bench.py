"""`onnxop bench`: copy bandwidth on one adapter.

For each size: every copy kernel the adapter can run, the adapter's own
``copy_buffer_to_buffer``, upload and readback the way the streaming copy
does them, and numpy's memcpy on the host. Measures are interleaved (one run
of each per repeat) so that a noisy machine slows them alike, and the ratios
kernel/copy and kernel/memcpy are medians of per-repeat ratios. Every
kernel's output is verified byte for byte against the random source.
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field

from .errors import UsageError

DEFAULT_SIZES = "1M,16M,256M,1G"
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
HOST_BLOCK = 256 << 20  # numpy memcpy runs over blocks of at most this size


def parse_sizes(text: str) -> list[int]:
    """``"1M,16M,1G"`` -> byte counts (K, M, G are powers of 1024)."""
    sizes = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(?:i?B)?\s*", part, re.IGNORECASE)
        if not m or int(m.group(1)) == 0:
            raise UsageError(f"bench: --sizes takes sizes like 1M,16M,1G; got {part.strip()!r}")
        sizes.append(int(m.group(1)) * _UNITS[m.group(2).upper()])
    return sizes


def human(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


@dataclass
class Row:
    size: int
    measure: str  # kernel, copy_buffer_to_buffer, upload, readback, numpy memcpy
    kernel: str | None
    gbps_median: float
    gbps_min: float
    gbps_max: float
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
    buffers: str
    load_average: list[float]
    rows: list[Row] = field(default_factory=list)


def run_bench(backend: str | None, sizes: list[int], *, repeats: int = 5, warmup: int = 1) -> Report:
    """Measure everything at every size on ``backend``'s adapter."""
    import numpy as np

    from .gpu import get_gpu
    from .gpu.bench import Bench
    from .gpu.copy import can_map
    from .gpu.kernels import choose

    if repeats < 1 or warmup < 0:
        raise UsageError(f"bench: --repeats must be >= 1 and --warmup >= 0, got {repeats} and {warmup}")
    gpu = get_gpu(backend)
    report = Report(
        adapter=gpu.name,
        backend=gpu.info.our_backend,
        driver=gpu.info.driver,
        date=time.strftime("%Y-%m-%d %H:%M %Z"),
        timing="GPU timestamps" if "timestamp-query" in gpu.features else "wall clock",
        repeats=repeats,
        warmup=warmup,
        chosen_kernel=choose(gpu).name,
        buffers="mapped" if can_map(gpu) else "staged",
        load_average=[round(x, 2) for x in os.getloadavg()],
    )
    for size in sizes:
        _progress(f"bench: {human(size)} on {gpu.name}")
        bench = Bench(gpu, size)
        try:
            report.rows += _measure(bench, size, repeats, warmup, np)
        finally:
            bench.close()
    return report


def _measure(bench, size: int, repeats: int, warmup: int, np) -> list[Row]:
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

    times: dict[str, list[float]] = {name: [] for name in measures}
    for _ in range(warmup):
        for run in measures.values():
            run()  # type: ignore[operator]
    for _ in range(repeats):
        for name, run in measures.items():
            times[name].append(run())  # type: ignore[operator]

    # Exactness, per kernel: poison the output, run once more, compare all bytes.
    for k in bench.kernels:
        bench.poison()
        bench.kernel(k.name)
        bench.verify(f"kernel {k.name}")

    rows = []
    for name, ts in times.items():
        gbps = [size / t / 1e9 for t in ts]
        row = Row(
            size=size,
            measure="kernel" if name.startswith("kernel ") else name,
            kernel=name[len("kernel ") :] if name.startswith("kernel ") else None,
            gbps_median=statistics.median(gbps),
            gbps_min=min(gbps),
            gbps_max=max(gbps),
        )
        if row.kernel:
            row.kernel_per_copy = statistics.median(
                c / t for c, t in zip(times["copy_buffer_to_buffer"], ts)
            )
            row.kernel_per_memcpy = statistics.median(m / t for m, t in zip(times["numpy memcpy"], ts))
            row.verified = True
        rows.append(row)
    return rows


def _progress(text: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


# --------------------------------------------------------------------- output


def render_table(report: Report) -> str:
    lines = [
        f"onnxop bench on {report.adapter}, driver {report.driver or '?'}",
        f"{report.date}; load average {', '.join(map(str, report.load_average))}; "
        f"timing: {report.timing}; median of {report.repeats} repeats after "
        f"{report.warmup} warm-up, (min-max); GB/s = 10^9 bytes/s",
        f"onnxop streams through kernel {report.chosen_kernel} with {report.buffers} buffers; "
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
    lines.append("")
    lines.append("* the kernel onnxop uses on this adapter")
    return "\n".join(lines)


def bench_document(report: Report) -> dict:
    """The --json document: the common keys (command, status, exit_code) and the figures."""
    from .report import base

    doc = base("bench")
    doc.update(asdict(report))
    return doc
