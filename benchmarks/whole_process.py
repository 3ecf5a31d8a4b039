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
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from process_runs import (  # noqa: E402  (how a process is measured, shared with the other benchmarks)
    HERE, OTHER_CPU, PY, Stat, _importable, _progress, _seconds, adapter_line, human, make_npy, onnxop_cmd,
    parse_size, run, same_data, start_launcher,
)

BIG_FOR_BASELINES = 2 << 30  # above this, only onnxop and numpy (memory)
DAWN = "onnxop on Dawn"
ONNXOPS = ("onnxop", DAWN)  # onnxop's own runs, one per engine


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


# --------------------------------------------------------------------- rounds


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
