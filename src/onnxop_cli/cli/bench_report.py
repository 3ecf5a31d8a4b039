"""`onnxop bench`'s report: its figures (``Report``, one ``Row`` per size,
engine and measure, one ``Round`` per round), the table it prints and the
--json document (cli/bench.py measures them).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

BUSY_SHARE = 0.25  # other processes' share of all CPUs above which a round is flagged


def human(n: int) -> str:
    """A size as the table and the progress lines print it: ``16 MiB``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


@dataclass
class Round:
    wall_s: float
    other_cpu_s: float  # CPU seconds other processes took during the round
    other_share: float | None  # of all CPUs' time during the round; None if too short to tell
    flagged: bool


@dataclass
class Row:
    size: int
    engine: str | None  # wgpu or dawn; None for numpy memcpy (host only)
    measure: str  # kernel, copy_buffer_to_buffer, upload, readback, numpy memcpy
    kernel: str | None
    gbps_median: float
    gbps_min: float
    gbps_max: float
    rounds_used: int
    kernel_per_copy: float | None = None  # over the same engine's copy_buffer_to_buffer
    kernel_per_memcpy: float | None = None
    verified: bool | None = None


@dataclass
class EngineRun:
    """One engine's adapter and kernel choice."""

    engine: str
    adapter: str
    backend: str
    driver: str
    timing: str
    chosen_kernel: str
    chosen_reason: str  # measured, cached, forced, only (see gpu/choose.py)
    calibration_gbps: dict[str, float]
    buffers: str
    # each schedule question's answer (gpu/choose.py): {"name", "reason", "gbps"}
    schedules: dict[str, dict] = field(default_factory=dict)


@dataclass
class Report:
    # The first engine's adapter and choice (wgpu when it runs): ``engines`` has each.
    adapter: str
    backend: str
    driver: str
    date: str
    timing: str
    repeats: int
    warmup: int
    chosen_kernel: str
    chosen_reason: str
    calibration_gbps: dict[str, float]
    buffers: str
    cpus: int
    load_average: list[float]
    engines: list[EngineRun] = field(default_factory=list)
    rounds: dict[str, list[Round]] = field(default_factory=dict)  # per size, in bytes; all engines
    rows: list[Row] = field(default_factory=list)


def render_table(report: Report) -> str:
    lines = [
        f"onnxop bench, {report.date}; {report.cpus} CPUs, load average "
        f"{', '.join(map(str, report.load_average))}; median of {report.repeats} rounds after "
        f"{report.warmup} warm-up, (min-max); GB/s = 10^9 bytes/s"
    ]
    for run in report.engines:
        gbps = ", ".join(f"{k} {v:.2f}" for k, v in run.calibration_gbps.items())
        lines.append(
            f"{run.engine}: {run.adapter} ({run.backend}), driver {run.driver or '?'}; timing: {run.timing}; "
            f"streams through kernel {run.chosen_kernel} ({run.chosen_reason}"
            f"{': ' + gbps + ' GB/s' if gbps else ''}) with {run.buffers} buffers"
        )
        from ..gpu.choose import QUESTIONS, Choice

        # each question's figures in its own unit (gather_source's are a share of memory, not GB/s)
        lines += [f"  schedule {q}: " + Choice(a["name"], a["reason"], a["gbps"], QUESTIONS[q].unit
                                              if q in QUESTIONS else "GB/s").describe()
                  for q, a in run.schedules.items()]
    both = len(report.engines) > 1
    lines += [
        ("engines interleaved in every round; " if both else "")
        + "every kernel's output verified byte for byte",
        "",
    ]
    chosen = {run.engine: run.chosen_kernel for run in report.engines}
    header = ("size", "engine", "measure", "GB/s", "(min-max)", "kernel/copy", "kernel/memcpy")
    table = []
    last = None
    for r in report.rows:
        name = f"kernel {r.kernel}" if r.kernel else r.measure
        if r.kernel is not None and r.kernel == chosen.get(r.engine):
            name += " *"
        table.append(
            (
                human(r.size) if r.size != last else "",
                r.engine or "",
                name,
                f"{r.gbps_median:.2f}",
                f"({r.gbps_min:.2f}-{r.gbps_max:.2f})",
                f"{r.kernel_per_copy:.2f}x" if r.kernel_per_copy is not None else "",
                f"{r.kernel_per_memcpy:.2f}x" if r.kernel_per_memcpy is not None else "",
            )
        )
        last = r.size
    from .tables import columns, render

    cols = columns(header, names=header[:3], right=(header[3], header[5], header[6]))
    lines.append(render(cols, table))
    lines += ["", "* the kernel onnxop uses on this adapter and engine", "", "CPU time other processes took, per round:"]
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
    from ..render.json import base

    doc = base("bench")
    doc.update(asdict(report))
    return doc
