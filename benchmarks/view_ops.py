"""Whole-process figures for the view operators: a 1 GiB Transpose,
Slice and Tile with onnxop, against numpy's load-op-save and onnxruntime CPU
running a one-node model of the same op (benchmarks/view_ops_baselines.py).

Measured as benchmarks/whole_process.py measures flatten, with the helpers
of benchmarks/process_runs.py: every process fresh, tools alternating within
each round in an order rotated every round, medians (min-max) and medians of
per-round ratios, peak RSS from the child's ru_maxrss, other processes' CPU
seconds per round.
In the first round every tool's output is checked to hold the same shape and
bytes as numpy's.

    python benchmarks/view_ops.py --backend vulkan              # 3 rounds
    python benchmarks/view_ops.py --side 4096 --rounds 1        # a quick try (64 MiB)
    python benchmarks/view_ops.py --update-readme README.md     # the <!-- view-table --> block
    eval "$(scripts/mesa25.sh DIR)"; python benchmarks/view_ops.py \
        --update-readme README.md --marker view-table-mesa25    # Mesa 25's

The cases, for a float32 square of --side (16384: 1 GiB):

- transpose: `--perm 1,0`;
- slice: every second row and a column range walked backwards
  (`--starts 0,-1024 --ends SIDE,1024 --axes 0,1 --steps 2,-1`, about 0.44 of the input);
- tile: a square of half the side (a quarter of the bytes) tiled `--repeats 2,2`
  back to the full size.

Needs about 3 GiB free in --tmp and, for the baselines, memory for about
three times the tensor.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import process_runs as wp  # noqa: E402  (the helpers, shared rather than copied)
from whole_process import update_readme  # noqa: E402

TOOLS = ("onnxop", "numpy", "onnxruntime CPU")


def cases(side: int) -> dict[str, tuple[int, dict, list[str]]]:
    """Per op: the input's side, the attributes (as ONNX names them) and onnxop's options."""
    half = side // 2
    slice_spec = {"starts": [0, -1024], "ends": [side, 1024], "axes": [0, 1], "steps": [2, -1]}
    if side <= 2048:
        slice_spec.update(starts=[0, -side // 8], ends=[side, side // 8])
    return {
        "transpose": (side, {"perm": [1, 0]}, ["--perm", "1,0"]),
        "slice": (side, slice_spec, _options(slice_spec)),
        "tile": (half, {"repeats": [2, 2]}, ["--repeats", "2,2"]),
    }


def _options(spec: dict) -> list[str]:
    out: list[str] = []
    for key, values in spec.items():
        out += [f"--{key}", ",".join(str(v) for v in values)]
    return out


def command(tool: str, backend: str | None, op: str, spec: dict, options: list[str], src: Path, dst: Path) -> list[str]:
    if tool == "onnxop":
        backend_args = ["--backend", backend] if backend else []
        return wp.onnxop_cmd() + backend_args + [op, str(src), *options, "-q", "-o", str(dst)]
    which = "numpy" if tool == "numpy" else "onnxruntime"
    return [wp.PY, str(HERE / "view_ops_baselines.py"), which, op, str(src), str(dst), json.dumps(spec)]


def make_square(path: Path, side: int, seed: int = 0) -> None:
    """A float32 (side, side) .npy of random bit patterns (NaN payloads and
    -0.0 among them), written in blocks of rows."""
    import numpy as np

    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": (side, side)})
        rows = max(1, (64 << 20) // (side * 4))
        for start in range(0, side, rows):
            f.write(rng.integers(0, 256, min(rows, side - start) * side * 4, dtype=np.uint8).tobytes())


def fingerprint(path: Path) -> tuple[tuple[int, ...], str]:
    """Shape and a hash of the data bytes (headers may differ in padding)."""
    import numpy as np

    shape = np.load(path, mmap_mode="r").shape
    digest = hashlib.sha1()
    with open(path, "rb") as f:
        f.seek(wp.data_offset(path))
        while block := f.read(64 << 20):
            digest.update(block)
    return shape, digest.hexdigest()


LOAD: dict[str, list[float]] = {}  # per op: other processes' CPU seconds in each round


def op_rounds(op: str, case: tuple[int, dict, list[str]], names: list[str], backend: str | None, rounds: int, tmp: Path) -> dict[str, wp.Stat]:
    side, spec, options = case
    src = tmp / f"in_{side}.npy"
    if not src.exists():
        make_square(src, side)
    stats = {name: wp.Stat() for name in names}
    LOAD[op] = []
    for r in range(rounds):
        mark = len(wp.OTHER_CPU)
        prints: dict[str, tuple] = {}
        for name in names[r % len(names) :] + names[: r % len(names)]:
            out = tmp / "out.npy"
            stats[name].add(*wp.run(command(name, backend, op, spec, options, src, out)))
            if r == 0:
                prints[name] = fingerprint(out)
            out.unlink()
        if r == 0 and len(set(prints.values())) != 1:
            raise RuntimeError(f"{op}: outputs differ: {prints}")
        LOAD[op].append(sum(wp.OTHER_CPU[mark:]))
        wp._progress(f"  {op} round {r + 1}/{rounds}: " + ", ".join(f"{n} {s.times[-1]:.2f}s {s.rss / (1 << 20):.0f}MiB" for n, s in stats.items()))
    return stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--side", type=int, default=16384, help="side of the float32 square (16384: 1 GiB)")
    ap.add_argument("--ops", default="transpose,slice,tile")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--backend", default="vulkan", help="passed to onnxop")
    ap.add_argument("--tmp", default=None, help="folder for the test files (default: system temp)")
    ap.add_argument("--out", default=None, help="also write the markdown here")
    ap.add_argument("--update-readme", default=None, metavar="README", help="replace the table between the --marker markers")
    ap.add_argument("--marker", default="view-table", help="the markers' name: <!-- NAME --> ... <!-- /NAME -->")
    args = ap.parse_args(argv)
    wp.start_launcher()  # first, while this process is still small

    names = [t for t in TOOLS if t != "onnxruntime CPU" or wp._importable("onnxruntime")]
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M %Z")
    tmp = Path(tempfile.mkdtemp(prefix="onnxop-viewbench-", dir=args.tmp))
    all_cases = cases(args.side)
    results: dict[str, dict[str, wp.Stat]] = {}
    try:
        for op in args.ops.split(","):
            wp._progress(f"{op}: {', '.join(names)}")
            results[op] = op_rounds(op, all_cases[op], names, args.backend, args.rounds, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load_after = os.getloadavg()

    rows = []
    for op, stats in results.items():
        side, _, options = all_cases[op]
        on, np_, ort = stats["onnxop"], stats["numpy"], stats.get("onnxruntime CPU")
        gib = lambda s: f"{s.rss / (1 << 30):.2f} GiB"  # noqa: E731
        rows.append(
            f"| `{op} {' '.join(options)}` ({side}x{side}) | {on.cell()} | {np_.cell()} | "
            f"{ort.cell() if ort else 'not installed'} | {on.per_round(np_):.2f}x | "
            f"{f'{on.per_round(ort):.2f}x' if ort else ''} | {gib(on)} / {gib(np_)} / "
            f"{gib(ort) if ort else '-'} | {on.rss / np_.rss:.2f}x |"
        )
    command_line = "python benchmarks/view_ops.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = "\n".join(
        [
            f"Measured {started} on {wp.adapter_line(args.backend)}, {os.cpu_count()} CPUs, "
            f"{platform.python_implementation()} {platform.python_version()}; load average "
            f"{load_before[0]:.1f} before, {load_after[0]:.1f} after (other work shares the "
            f"machine: times are loaded, compare ratios; peak RSS does not depend on load). "
            f"Median of {args.rounds} rounds (min-max), each a fresh process; ratios are medians "
            f"of per-round ratios; peak RSS is the process's own (ru_maxrss). Outputs checked "
            f"identical across tools.",
            "",
            f"Command: `{command_line.strip()}`",
            "",
            "| float32, whole process | onnxop | numpy | onnxruntime CPU | onnxop vs numpy | "
            "onnxop vs onnxruntime | peak RSS onnxop / numpy / onnxruntime | RSS vs numpy |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            "- CPU seconds other processes took, per round: "
            + "; ".join(f"{op}: {wp._seconds(v)}" for op, v in LOAD.items()),
        ]
    ) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    if args.update_readme:
        update_readme(Path(args.update_readme), text, args.marker)
    return 0


if __name__ == "__main__":
    sys.exit(main())
