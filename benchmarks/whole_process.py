"""Whole-process figures: onnxop (on wgpu, and on Dawn when dawn-python is
installed) against numpy only, onnxruntime and a minimal wgpu-py script,
flattening .npy files of several sizes; peak RSS; many files in one process;
`onnxop --help`; and the kernel ratio from `onnxop bench` (both engines).

Every process runs from scratch (python start-up included), after os.sync()
so none pays for another's writes; tools alternate within each round, in an
order rotated every round, so machine load hits them alike; each figure is
the median over rounds (min-max). Peak RSS is the child's ru_maxrss (os.wait4),
taken from a small launcher process (a child's ru_maxrss starts at its
parent's RSS).
Outputs are checked against the input's bytes once per tool and size.

    python benchmarks/whole_process.py                       # everything
    python benchmarks/whole_process.py --sizes 4K,256M --rounds 5
    python benchmarks/whole_process.py --update-readme README.md
    python benchmarks/whole_process.py --sizes 4K --tools "onnxop,onnxop on Dawn,numpy only"

Writes a markdown table to stdout (and to --out); --update-readme replaces
the table between the ``<!-- bench-table -->`` markers of that file. Needs
about 3x the largest size of free disk in --tmp, and memory for the
baselines: numpy holds the whole tensor, onnxruntime about twice, the
minimal wgpu script about five times, so at 4 GiB only onnxop and numpy run
(--all-baselines to run them all).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = sys.executable
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
BIG_FOR_BASELINES = 2 << 30  # above this, only onnxop and numpy (memory)
DAWN = "onnxop on Dawn"
ONNXOPS = ("onnxop", DAWN)  # onnxop's own runs, one per engine


def onnxop_cmd() -> list[str]:
    exe = Path(PY).with_name("onnxop")
    return [str(exe)] if exe.exists() else [PY, "-m", "onnxop_cli"]


def tools(backend: str | None) -> dict[str, list[str]]:
    backend_args = ["--backend", backend] if backend else []
    found = {"onnxop": onnxop_cmd() + backend_args + ["--engine", "wgpu", "flatten"]}
    if _importable("pydawn"):
        found[DAWN] = onnxop_cmd() + backend_args + ["--engine", "dawn", "flatten"]
    found["numpy only"] = [PY, str(HERE / "flatten_numpy.py")]
    if _importable("onnxruntime"):
        found["onnxruntime CPU"] = [PY, str(HERE / "flatten_onnxruntime.py")]
    found["minimal wgpu-py"] = [PY, str(HERE / "flatten_wgpu_minimal.py")]
    if backend in ("vulkan", "gl"):
        found["minimal wgpu-py"] += ["--backend", backend]
    return found


def _importable(module: str) -> bool:
    return subprocess.run([PY, "-c", f"import {module}"], capture_output=True).returncode == 0


def parse_size(text: str) -> int:
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    return int(text[:-1]) * UNITS[text[-1]] if text[-1] in UNITS else int(text)


def human(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


# --------------------------------------------------------------------- inputs


def make_npy(path: Path, nbytes: int, seed: int = 0) -> None:
    """A float32 .npy of ``nbytes`` data bytes, shape (n/4096, 16, 64) or
    (n/64, 16) for small ones, random bit patterns, written in blocks."""
    import numpy as np

    count = nbytes // 4
    shape = (count // 1024, 16, 64) if count >= 1024 and count % 1024 == 0 else (count // 16, 16)
    assert math.prod(shape) * 4 == nbytes, "sizes must be multiples of 64 bytes"
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<f4", "fortran_order": False, "shape": shape}
        )
        block = 64 << 20
        for offset in range(0, nbytes, block):
            f.write(rng.integers(0, 256, min(block, nbytes - offset), dtype=np.uint8).tobytes())


def data_offset(path: Path) -> int:
    import numpy as np

    with open(path, "rb") as f:
        np.lib.format.read_magic(f)
        np.lib.format.read_array_header_1_0(f)
        return f.tell()


def same_data(a: Path, b: Path) -> bool:
    """Same tensor bytes (the headers differ: the shape changes)."""
    with open(a, "rb") as fa, open(b, "rb") as fb:
        fa.seek(data_offset(a))
        fb.seek(data_offset(b))
        while True:
            x, y = fa.read(64 << 20), fb.read(64 << 20)
            if x != y:
                return False
            if not x:
                return True


# --------------------------------------------------------------------- running


# A child's ru_maxrss starts at its parent's RSS when it was forked (Linux
# keeps the high-water mark across exec), and this script holds numpy and
# test data. So every measured process is started by a small launcher
# process, itself started before anything big is loaded; its own ~10 MB is
# the floor of every RSS figure.
#
# The launcher also reports the CPU time other processes took while the
# child ran (the machine's busy time from /proc/stat, less the child's own):
# on a shared machine that says which rounds were disturbed.
LAUNCHER = r"""
import json, os, subprocess, sys, time
def busy():
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return 0.0
for line in sys.stdin:
    cmd = json.loads(line)
    os.sync()
    b0 = busy()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    other = max(0.0, busy() - b0 - usage.ru_utime - usage.ru_stime)
    print(json.dumps([wall, usage.ru_maxrss * 1024, status, err[-500:], other]), flush=True)
"""
_launcher: subprocess.Popen | None = None


def start_launcher() -> None:
    global _launcher
    if _launcher is None:
        _launcher = subprocess.Popen(
            [PY, "-S", "-c", LAUNCHER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )


OTHER_CPU: list[float] = []  # per process run: CPU seconds other processes took meanwhile


def run(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one process. Dirty pages left by
    the previous run are flushed first (os.sync in the launcher, outside the
    timing), so no tool pays for another's writes."""
    start_launcher()
    assert _launcher is not None and _launcher.stdin and _launcher.stdout
    _launcher.stdin.write(json.dumps(cmd) + "\n")
    _launcher.stdin.flush()
    wall, rss, status, err, other = json.loads(_launcher.stdout.readline())
    if status != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({status}): {err.strip()}")
    OTHER_CPU.append(other)
    return wall, rss


class Stat:
    def __init__(self) -> None:
        self.times: list[float] = []
        self.rss = 0

    def add(self, wall: float, rss: int) -> None:
        self.times.append(wall)
        self.rss = max(self.rss, rss)

    def per_round(self, other: Stat) -> float:
        """Median of this tool's time over the other's, round by round."""
        return statistics.median(a / b for a, b in zip(self.times, other.times))

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    def cell(self) -> str:
        t = self.times
        spread = f" ({min(t):.2f}-{max(t):.2f})" if len(t) > 1 else ""
        return f"{self.median:.2f} s{spread}"


LOAD: dict[int, list[float]] = {}  # per size: other processes' CPU seconds in each round


def flatten_rounds(size: int, names: list[str], cmds: dict[str, list[str]], rounds: int, tmp: Path) -> dict[str, Stat]:
    src = tmp / f"in_{size}.npy"
    make_npy(src, size)
    stats = {name: Stat() for name in names}
    LOAD[size] = []
    try:
        for r in range(rounds):
            mark = len(OTHER_CPU)
            # Rotate the order each round: no tool always runs first or
            # right after the heaviest one.
            for name in names[r % len(names) :] + names[: r % len(names)]:
                out = tmp / "out.npy"
                stats[name].add(*run(command_for(cmds, name, src, out)))
                if r == 0 and not same_data(src, out):
                    raise RuntimeError(f"{name}: output of {human(size)} differs from the input's bytes")
                out.unlink()
            LOAD[size].append(sum(OTHER_CPU[mark:]))
            _progress(f"  {human(size)} round {r + 1}/{rounds}: " + ", ".join(f"{n} {s.times[-1]:.2f}s" for n, s in stats.items()))
    finally:
        src.unlink(missing_ok=True)
    return stats


def _args(name: str, src: Path, out: Path) -> list[str]:
    if name in ONNXOPS:
        return [str(src), "--axis", "1", "-o", str(out)]
    return [str(src), str(out), "1"]


def command_for(cmds: dict[str, list[str]], name: str, src: Path, out: Path) -> list[str]:
    """The tool's command with its file arguments (options stay last for the
    scripts, which read positional arguments first)."""
    base = cmds[name]
    if name == "minimal wgpu-py" and "--backend" in base:
        i = base.index("--backend")
        return base[:i] + _args(name, src, out) + base[i:]
    return base + _args(name, src, out)


def many_files(count: int, rounds: int, cmds: dict[str, list[str]], tmp: Path) -> dict[str, tuple[Stat, Stat]]:
    """Per onnxop engine: one file, and ``count`` files in one process; the
    engines alternate within each round."""
    folder = tmp / "many"
    outdir = tmp / "many_out"
    folder.mkdir()
    outdir.mkdir()
    try:
        files = []
        for i in range(count):
            files.append(folder / f"t{i:03d}.npy")
            make_npy(files[-1], 4096, seed=i)
        stats = {name: (Stat(), Stat()) for name in cmds}
        for _ in range(rounds):
            for name, cmd in cmds.items():
                one, all_ = stats[name]
                one.add(*run(cmd + [str(files[0]), "--axis", "1", "-o", str(outdir)]))
                all_.add(*run(cmd + [str(f) for f in files] + ["--axis", "1", "-o", str(outdir)]))
                for f in files:
                    if not same_data(f, outdir / f.name):
                        raise RuntimeError(f"{name}: {f.name} in the many-files run differs from its input")
                    (outdir / f.name).unlink()
        return stats
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(outdir, ignore_errors=True)


def help_time(rounds: int) -> Stat:
    stat = Stat()
    for _ in range(max(rounds, 5)):
        stat.add(*run(onnxop_cmd() + ["--help"]))
    return stat


def kernel_ratios(backend: str | None, sizes: str) -> dict:
    cmd = onnxop_cmd() + (["--backend", backend] if backend else []) + ["bench", "--sizes", sizes, "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


BENCH_LOAD: dict[int, list[float]] = {}  # per size: the same, from onnxop bench's rounds


def _seconds(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def adapter_line(backend: str | None, engine: str = "wgpu") -> str:
    """The adapter onnxop chooses on ``engine`` and its driver (name and version)."""
    cmd = onnxop_cmd() + (["--backend", backend] if backend else []) + ["--engine", engine, "info", "--json"]
    try:
        chosen = json.loads(subprocess.run(cmd, capture_output=True, text=True).stdout)["chosen"]
    except (ValueError, KeyError, TypeError):
        return "unknown adapter"
    # the name already says the API and the adapter type: "llvmpipe (...) (Vulkan, CPU)"
    return f"{chosen['name']} (--backend {chosen['backend']}), driver {chosen['driver']}"


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# --------------------------------------------------------------------- table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="4K,256M,1G,4G")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--backend", default=None, help="passed to onnxop (default: its auto)")
    ap.add_argument("--many", type=int, default=100, help="files for the many-files row (0: skip)")
    ap.add_argument("--kernel-sizes", default="16M,64M,256M,1G", help="for onnxop bench ('': skip)")
    ap.add_argument("--all-baselines", action="store_true", help="run every baseline at every size")
    ap.add_argument("--tools", default=None, help=f"comma-separated tools to run (default: all; {DAWN!r} when installed)")
    ap.add_argument("--tmp", default=None, help="folder for the test files (default: system temp)")
    ap.add_argument("--out", default=None, help="also write the markdown here")
    ap.add_argument("--update-readme", default=None, metavar="README", help="replace the table between <!-- bench-table --> markers")
    ap.add_argument("--marker", default="bench-table", help="the markers' name: <!-- NAME --> ... <!-- /NAME -->")
    args = ap.parse_args(argv)
    start_launcher()  # first, while this process is still small

    cmds = found = tools(args.backend)
    if args.tools:
        wanted = [t.strip() for t in args.tools.split(",") if t.strip()]
        cmds = {name: cmd for name, cmd in cmds.items() if name in wanted or name == "onnxop"}
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M %Z")
    tmp = Path(tempfile.mkdtemp(prefix="onnxop-bench-", dir=args.tmp))
    rows: list[str] = []
    notes: list[str] = []
    try:
        _progress("onnxop --help")
        helps = help_time(args.rounds)
        rows.append(f"| `onnxop --help` | {helps.cell()} | | | | | | | |")

        results: dict[int, dict[str, Stat]] = {}
        for size in sizes:
            names = list(cmds)
            if size > BIG_FOR_BASELINES and not args.all_baselines:
                names = [n for n in names if n in ONNXOPS or n == "numpy only"]
            _progress(f"flatten {human(size)}: {', '.join(names)}")
            results[size] = flatten_rounds(size, names, cmds, args.rounds, tmp)

        def cell(stats: dict[str, Stat], name: str, what: str) -> str:
            s = stats.get(name)
            if s is None:
                return "not run" if name in found else "not installed"
            return s.cell() if what == "time" else f"{s.rss / (1 << 30):.2f} GiB"

        def ratio(stats: dict[str, Stat], a: str, b: str) -> str:
            return f"{stats[a].per_round(stats[b]):.2f}x" if a in stats and b in stats else ""

        for size, stats in results.items():
            rows.append(
                f"| flatten {human(size)} .npy, whole process | {cell(stats, 'onnxop', 'time')} | "
                f"{cell(stats, DAWN, 'time')} | "
                f"{cell(stats, 'numpy only', 'time')} | {cell(stats, 'onnxruntime CPU', 'time')} | "
                f"{cell(stats, 'minimal wgpu-py', 'time')} | {ratio(stats, 'onnxop', 'numpy only')} | "
                f"{ratio(stats, DAWN, 'onnxop')} | {ratio(stats, 'onnxop', 'minimal wgpu-py')} |"
            )
        for size, stats in results.items():
            if size < (1 << 30):
                continue
            on, np_, dawn = stats["onnxop"], stats["numpy only"], stats.get(DAWN)
            rows.append(
                f"| peak RSS, flatten {human(size)} | {cell(stats, 'onnxop', 'rss')} | {cell(stats, DAWN, 'rss')} | "
                f"{cell(stats, 'numpy only', 'rss')} | {cell(stats, 'onnxruntime CPU', 'rss')} | "
                f"{cell(stats, 'minimal wgpu-py', 'rss')} | {on.rss / np_.rss:.2f}x | "
                f"{f'{dawn.rss / on.rss:.2f}x' if dawn else ''} | |"
            )

        if args.many:
            _progress(f"{args.many} files vs 1")
            many = many_files(args.many, args.rounds, {n: cmds[n] for n in ONNXOPS if n in cmds}, tmp)

            def files_cell(name: str) -> str:
                if name not in many:
                    return "not installed"
                one, all_ = many[name]
                return f"{all_.cell()} (1 file: {one.cell()}; {all_.median / one.median:.2f}x)"

            rows.append(
                f"| flatten {args.many} files of 4 KiB, one process | {files_cell('onnxop')} | "
                f"{files_cell(DAWN)} | | | | | "
                + (f"{many[DAWN][1].per_round(many['onnxop'][1]):.2f}x" if DAWN in many else "")
                + " | |"
            )

        if args.kernel_sizes:
            _progress(f"onnxop bench --sizes {args.kernel_sizes}")
            report = kernel_ratios(args.backend, args.kernel_sizes)
            runs = {e["engine"]: e for e in report["engines"]}

            def kernel_cell(size: int, engine: str) -> str:
                """The engine's chosen kernel at this size, and its ratio to the engine's own copy."""
                if engine not in runs:
                    return "not installed"
                for r in report["rows"]:
                    if r["size"] == size and r["engine"] == engine and r["kernel"] == runs[engine]["chosen_kernel"]:
                        return f"`{r['kernel']}` {r['gbps_median']:.2f} GB/s, {r['kernel_per_copy']:.2f}x of copy"
                return ""

            for size in dict.fromkeys(r["size"] for r in report["rows"]):
                rows.append(
                    f"| kernel vs `copy_buffer_to_buffer`, {human(size)} | "
                    f"{kernel_cell(size, 'wgpu')} | {kernel_cell(size, 'dawn')} | | | | | | |"
                )
            notes.append(
                f"kernel rows: `onnxop bench --sizes {args.kernel_sizes}` (both engines, interleaved), "
                f"median of {report['repeats']} rounds; the ratio is the median of per-round ratios "
                "over the same engine's copy; chosen kernels: "
                + ", ".join(f"{e} `{run['chosen_kernel']}` ({run['chosen_reason']})" for e, run in runs.items())
                + "; timing: "
                + ", ".join(f"{e} {run['timing']}" for e, run in runs.items())
            )
            for size, rounds in report["rounds"].items():
                BENCH_LOAD[int(size)] = [rd["other_cpu_s"] for rd in rounds]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    load_after = os.getloadavg()
    if LOAD or BENCH_LOAD:
        notes.append(
            "CPU seconds other processes took, per round: "
            + "; ".join(f"flatten {human(k)}: {_seconds(v)}" for k, v in LOAD.items())
            + "".join(f"; bench {human(k)}: {_seconds(v)}" for k, v in BENCH_LOAD.items())
        )
    command = "python benchmarks/whole_process.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    dawn = f"; Dawn: {adapter_line(args.backend, 'dawn')}" if DAWN in cmds else ""
    header = [
        f"Measured {started} on {adapter_line(args.backend)}{dawn}, {os.cpu_count()} CPUs, "
        f"{platform.python_implementation()} {platform.python_version()}; "
        f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after "
        f"(other work shares the machine: compare ratios within this table). "
        f"Median of {args.rounds} rounds (min-max), each a fresh process; "
        f"peak RSS is the process's own (ru_maxrss, started from a ~10 MB launcher).",
        "",
        f"Command: `{command.strip()}`",
        "",
        "| what | onnxop | onnxop on Dawn | numpy only | onnxruntime CPU | minimal wgpu-py "
        "| onnxop vs numpy | Dawn vs wgpu | onnxop vs minimal wgpu-py |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    text = "\n".join(header + rows + ([""] + [f"- {n}" for n in notes] if notes else [])) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    if args.update_readme:
        update_readme(Path(args.update_readme), text, args.marker)
    return 0


def update_readme(path: Path, table: str, marker: str = "bench-table") -> None:
    start, end = f"<!-- {marker} -->", f"<!-- /{marker} -->"
    text = path.read_text()
    if start not in text or end not in text:
        raise SystemExit(f"{path}: no {start} ... {end} markers")
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    path.write_text(f"{before}{start}\n{table}{end}{after}")


if __name__ == "__main__":
    sys.exit(main())
