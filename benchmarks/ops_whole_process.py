"""Speed and memory of the operators with tensor inputs: Concat (8 inputs),
Split (8 outputs), Pad and Where; and Gather (process only, `--ops gather`).

Two parts, each measured interleaved (A B A B, the order rotated each round):

- ``kernel``: in one process, each op's kernel's GB/s (the pieces kernel;
  Where's whole-word select, gpu/render/select.py) in output bytes per
  second, sink discarding, against the gather kernel writing an
  output of the same size (a row-reversing slice of one input), per round,
  and the ratio per round (the issue asks >= 0.8);
- ``process``: whole processes on files of --size: onnxop against numpy's
  load-op-save and onnxruntime CPU running a one-node model, wall time and
  peak RSS (the child's ru_maxrss, from benchmarks/process_runs.py's launcher),
  with the other processes' CPU seconds per round (the machine is shared).

    python benchmarks/ops_whole_process.py kernel --backend vulkan --size 64M --rounds 3
    python benchmarks/ops_whole_process.py process --backend vulkan --size 256M --rounds 2
    python benchmarks/ops_whole_process.py process --backend vulkan --size 1G --rounds 2 --ops gather

Prints a Markdown table with the command, the CPU and the load.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import process_runs as wp  # noqa: E402  (the launcher, Stat, sizes)

OPS = ("concat", "split", "pad", "where")
PROCESS_OPS = OPS + ("gather",)


def cpu() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load() -> str:
    try:
        return open("/proc/loadavg").read().split()[0]
    except OSError:
        return "?"


# ------------------------------------------------------------ kernel


def kernel(backend: str | None, size: int, rounds: int) -> str:
    import numpy as np

    from onnxop_cli.core.sources import MemoryBytes
    from onnxop_cli.core.region import Access
    from onnxop_cli.gpu import get_gpu
    from onnxop_cli.gpu.gather import gather_through_kernel
    from onnxop_cli.gpu.pieces import Source, run_pieces
    from onnxop_cli.gpu.word_kernels import run_select
    from onnxop_cli.ops.tensor_op import Piece
    from onnxop_cli.core.region import Select, c_strides, load as load_of  # load() is the machine's load

    gpu = get_gpu(backend)
    n = size // 4  # float32 elements of output
    rows = 8 * 64
    cols = n // rows
    n = rows * cols
    rng = np.random.default_rng(0)
    part = rng.integers(0, 2**32, (rows // 8) * cols, dtype=np.uint32)  # one eighth
    whole = rng.integers(0, 2**32, n, dtype=np.uint32)
    eighth = [Source(MemoryBytes(part))] * 8
    out_shape = (rows // 8, 8 * cols)
    out = c_strides(out_shape)
    plans = {
        # 8 inputs joined on the inner axis (outer dims > 1)
        "concat": (eighth, [Piece((rows // 8, cols), out, k * cols, load_of(k, (rows // 8, cols), (cols, 1)))
                            for k in range(8)]),
        # one of 8 outputs, 8 times: the same bytes as the whole output
        "split": ([Source(MemoryBytes(whole))], [Piece((rows // 8, cols), c_strides((rows // 8, cols)), 0,
                                                      load_of(0, (rows // 8, cols), (cols, 1), k * (rows // 8) * cols))
                                                for k in range(8)]),
        # edge padding of one column each side of every row
        "pad": ([Source(MemoryBytes(whole[: rows * (cols - 2)]))], _pad_pieces(rows, cols)),
        # select between two inputs by a broadcast row condition
        "where": ([Source(MemoryBytes(np.tile(np.array([1, 0, 1, 1], np.uint8), cols // 4 + 1)[:cols])),
                   Source(MemoryBytes(whole)), Source(MemoryBytes(whole[::-1].copy()))],
                  # the select piece ops/where.py keeps as its fallback; it runs the words kernel
                  [Piece((rows, cols), c_strides((rows, cols)), 0, Select(
                      load_of(0, (rows, cols), (0, 1)), load_of(1, (rows, cols), (cols, 1)),
                      load_of(2, (rows, cols), (cols, 1))))]),
    }
    gather_view = Access((rows, cols), (-cols, 1), (rows - 1) * cols)  # rows reversed: the gather kernel proper
    results: dict[str, list[tuple[float, float]]] = {op: [] for op in OPS}

    def sink(chunk) -> None:
        pass

    def timed(f) -> float:
        t0 = time.perf_counter()
        f()
        return time.perf_counter() - t0

    loads = []
    for r in range(rounds):
        loads.append(load())
        for op in OPS[r % 4:] + OPS[: r % 4]:
            sources, pieces = plans[op]
            if op == "split":  # one run per output, as the op runs them
                a = timed(lambda: [run_pieces(gpu, sources, sink, pieces=[p], count=p.size, bits=32) for p in pieces])
            elif op == "where":  # the words kernel, as ops/where.py plans it (the condition a row, X and Y whole)
                a = timed(lambda: run_select(gpu, sources, sink, forms=[(1, cols), (1, n), (1, n)], fallback=pieces,
                                            count=n, bits=32))
            else:
                a = timed(lambda: run_pieces(gpu, sources, sink, pieces=pieces, count=n, bits=32))
            b = timed(lambda: gather_through_kernel(gpu, MemoryBytes(whole), sink, view=gather_view, bits=32))
            results[op].append((n * 4 / a / 1e9, n * 4 / b / 1e9))
    lines = [
        f"Command: `python benchmarks/ops_whole_process.py kernel --backend {backend or 'auto'} --size {wp.human(size)} "
        f"--rounds {rounds}`; adapter {gpu.name}; CPU {cpu()}; load (1 min) per round {', '.join(loads)}",
        "",
        "| op | its kernel GB/s | gather kernel GB/s | ratio (median of rounds) |",
        "|---|---|---|---|",
    ]
    for op in OPS:
        ours = [a for a, _ in results[op]]
        theirs = [b for _, b in results[op]]
        ratio = statistics.median(a / b for a, b in results[op])
        lines.append(f"| {op} | {statistics.median(ours):.2f} | {statistics.median(theirs):.2f} | {ratio:.2f} |")
    return "\n".join(lines)


def _pad_pieces(rows: int, cols: int):
    from onnxop_cli.core.region import c_strides, load
    from onnxop_cli.ops.tensor_op import Piece

    inner = cols - 2
    out = c_strides((rows, cols))
    return [
        Piece((rows, inner), out, 1, load(0, (rows, inner), (inner, 1))),
        Piece((rows, 1), out, 0, load(0, (rows, 1), (inner, 0))),
        Piece((rows, 1), out, cols - 1, load(0, (rows, 1), (inner, 0), inner - 1)),
    ]


# ------------------------------------------------------------ process


BASELINE = r"""
import sys, json, numpy as np
tool, op, out, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
arrays = [np.load(f) for f in files]
if tool == "numpy":
    if op == "concat":
        np.save(out, np.concatenate(arrays, axis=1))
    elif op == "split":
        for k, part in enumerate(np.split(arrays[0], 8, axis=0)):
            np.save(f"{out}_{k}.npy", part)
    elif op == "pad":
        np.save(out, np.pad(arrays[0], [(0, 0), (1, 1)], mode="edge"))
    elif op == "gather":
        np.save(out, np.take(arrays[0], arrays[1], axis=0))
    else:
        np.save(out, np.where(arrays[0], arrays[1], arrays[2]))
else:
    import onnxruntime as rt
    from onnx import TensorProto, helper
    names = [f"i{k}" for k in range(len(arrays))]
    kinds = [TensorProto.BOOL if a.dtype == bool else TensorProto.INT64 if a.dtype == np.int64 else TensorProto.FLOAT
             for a in arrays]
    ins = [helper.make_tensor_value_info(n, t, None) for n, t in zip(names, kinds)]
    inits = []
    outs = ["o"]
    if op == "concat":
        node = helper.make_node("Concat", names, outs, axis=1)
    elif op == "split":
        outs = [f"o{k}" for k in range(8)]
        node = helper.make_node("Split", names, outs, axis=0, num_outputs=8)
    elif op == "pad":
        inits = [helper.make_tensor("p", TensorProto.INT64, [4], [0, 1, 0, 1])]
        node = helper.make_node("Pad", names + ["p"], outs, mode="edge")
    elif op == "gather":
        node = helper.make_node("Gather", names, outs, axis=0)
    else:
        node = helper.make_node("Where", names, outs)
    graph = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    session = rt.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    results = session.run(None, dict(zip(names, arrays)))
    if op == "split":
        for k, part in enumerate(results):
            np.save(f"{out}_{k}.npy", part)
    else:
        np.save(out, results[0])
"""


def process(backend: str | None, size: int, rounds: int, tmp: Path, ops: tuple[str, ...] = OPS) -> str:
    import numpy as np

    wp.start_launcher()
    side = int((size // 4) ** 0.5) // 8 * 8
    rng = np.random.default_rng(0)
    files: dict[str, list[Path]] = {}
    big = tmp / "x.npy"
    np.save(big, rng.integers(0, 2**32, (side, side), dtype=np.uint32).view(np.float32))
    parts = []
    for k in range(8 if "concat" in ops else 0):
        p = tmp / f"p{k}.npy"
        np.save(p, rng.integers(0, 2**32, (side, side // 8), dtype=np.uint32).view(np.float32))
        parts.append(p)
    cond = tmp / "c.npy"
    y = tmp / "y.npy"
    if "where" in ops:
        np.save(cond, rng.integers(0, 2, (1, side)).astype(bool))
        np.save(y, rng.integers(0, 2**32, (side, side), dtype=np.uint32).view(np.float32))
    rows = tmp / "rows.npy"  # Gather: every row once, in random order (1 GiB of data and of output)
    np.save(rows, rng.permutation(side).astype(np.int64))
    files = {"concat": parts, "split": [big], "pad": [big], "where": [cond, big, y], "gather": [big, rows]}
    script = tmp / "baseline.py"
    script.write_text(BASELINE)
    b = ["--backend", backend] if backend else []

    def onnxop(op: str, out: Path) -> list[str]:
        f = [str(p) for p in files[op]]
        if op == "concat":
            return wp.onnxop_cmd() + b + ["concat", *f, "--axis", "1", "-q", "-o", str(out)]
        if op == "split":
            out.mkdir(exist_ok=True)
            return wp.onnxop_cmd() + b + ["split", f[0], "--num-outputs", "8", "-q", "-o", str(out)]
        if op == "pad":
            return wp.onnxop_cmd() + b + ["pad", f[0], "--pads", "0,1,0,1", "--mode", "edge", "-q", "-o", str(out)]
        if op == "gather":
            return wp.onnxop_cmd() + b + ["gather", f[0], "--indices", f[1], "--axis", "0", "-q", "-o", str(out)]
        return wp.onnxop_cmd() + b + ["where", f[0], "--x", f[1], "--y", f[2], "-q", "-o", str(out)]

    tools = ("onnxop", "numpy", "onnxruntime CPU")
    stats = {(op, t): wp.Stat() for op in ops for t in tools}
    other: list[float] = []
    loads: list[str] = []
    for r in range(rounds):
        mark = len(wp.OTHER_CPU)
        loads.append(load())
        for op in ops:
            for tool in tools[r % 3:] + tools[: r % 3]:
                out = tmp / f"out_{op}"
                if tool == "onnxop":
                    cmd = onnxop(op, out if op == "split" else out.with_suffix(".npy"))
                else:
                    which = "numpy" if tool == "numpy" else "ort"
                    cmd = [wp.PY, str(script), which, op, str(out), *map(str, files[op])]
                stats[(op, tool)].add(*wp.run(cmd))
                for f in tmp.glob("out_*"):
                    if f.is_dir():
                        for g in f.iterdir():
                            g.unlink()
                        f.rmdir()
                    else:
                        f.unlink()
        other.append(sum(wp.OTHER_CPU[mark:]))
    nbytes = side * side * 4
    lines = [
        f"Command: `python benchmarks/ops_whole_process.py process --backend {backend or 'auto'} --size {wp.human(size)} "
        f"--rounds {rounds}{' --ops ' + ','.join(ops) if ops != OPS else ''}` (float32 {side}x{side}, {wp.human(nbytes)} per output or input); CPU {cpu()}; "
        f"load (1 min) per round {', '.join(loads)}; other processes' CPU seconds per round "
        f"{', '.join(f'{o:.0f}' for o in other)}",
        "",
        "| op | onnxop | numpy | onnxruntime CPU | onnxop / numpy time | peak RSS onnxop / numpy / ort (MiB) |",
        "|---|---|---|---|---|---|",
    ]
    for op in ops:
        s = [stats[(op, t)] for t in tools]
        ratio = s[0].per_round(s[1])
        rss = " / ".join(f"{x.rss / 2**20:.0f}" for x in s)
        lines.append(f"| {op} | {s[0].cell()} | {s[1].cell()} | {s[2].cell()} | {ratio:.2f} | {rss} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", choices=("kernel", "process"))
    parser.add_argument("--backend", default=None)
    parser.add_argument("--size", default="64M")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tmp", default=None)
    parser.add_argument("--ops", default=",".join(OPS), help=f"process: which of {', '.join(PROCESS_OPS)}")
    args = parser.parse_args(argv)
    size = wp.parse_size(args.size)
    if args.part == "kernel":
        print(kernel(args.backend, size, args.rounds))
        return 0
    with tempfile.TemporaryDirectory(prefix="tensor-ops-bench-", dir=args.tmp) as folder:
        print(process(args.backend, size, args.rounds, Path(folder), tuple(args.ops.split(","))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
