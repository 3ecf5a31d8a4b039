"""A 5-node data-movement chain: ``onnxop run`` on the whole graph
against onnxruntime CPU, numpy, and onnxop running the five nodes as five
separate commands (an intermediate file between each).

    python benchmarks/graph_chain.py --sizes 256M,1G --rounds 3 --backend vulkan
    python benchmarks/graph_chain.py --sizes 16M --rounds 1      # a quick try
    python benchmarks/graph_chain.py --sizes 256M --rounds 2 --chains tensor-ops --backend vulkan

Three chains on a float32 (a, b, c, d) tensor:

- ``step``:  Transpose(0,2,1,3) -> Reshape(a, c*b, d) -> Slice(axis 0 reversed)
  -> Unsqueeze(0) -> Flatten(2). The Reshape merges two axes the Transpose
  swapped, which no strides can say: onnxop gathers it once into a device
  buffer (a step) and the last three nodes read that with one more gather.
- ``fused``: Transpose(0,2,1,3) -> Slice(axis 3, every 2nd) -> Unsqueeze(0)
  -> Reshape(1, a, c, b, d/2) (a no-op split back) -> Squeeze(0): all
  composable, one gather from the input file to the output file.
- ``tensor-ops``: Transpose(0,2,1,3) -> Concat(t, t, axis 0) -> Reshape(2a, c*b*d)
  -> Split(axis 0, two halves): tensor operators as graph steps. The
  Transpose is gathered into a device buffer, the Concat (pieces kernel)
  reads it twice on the device, the Reshape is a view of the Concat's buffer
  and the Split's two parts stream out to an .npz (members y0, y1); as
  separate commands these are four processes with three files between them.

Measured with benchmarks/process_runs.py's helpers: every process fresh,
tools interleaved in an order rotated each round, medians (min-max), peak RSS
from the child's ru_maxrss, and the CPU other processes took meanwhile (the
machine is shared). Round 1 checks every tool's output against numpy's, bytes
and shape.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import process_runs as wp  # noqa: E402

TOOLS = ("onnxop run", "one onnxop command per node", "onnxruntime CPU", "numpy")

NUMPY = r"""
import sys, numpy as np
chain, src, dst = sys.argv[1:4]
x = np.load(src, mmap_mode="r")
a, b, c, d = x.shape
if chain == "tensor-ops":
    t = x.transpose(0, 2, 1, 3)
    y = np.concatenate([t, t], axis=0).reshape(2 * a, c * b * d)
    np.savez(dst, y0=y[:a], y1=y[a:])
    sys.exit(0)
if chain == "step":
    y = x.transpose(0, 2, 1, 3).reshape(a, c * b, d)[::-1][None].reshape(a, c * b * d)
else:
    y = x.transpose(0, 2, 1, 3)[:, :, :, ::2][None].reshape(1, a, c, b, d // 2)[0]
np.save(dst, np.ascontiguousarray(y))
"""

ORT = r"""
import sys, numpy as np, onnxruntime as ort
model, src, dst = sys.argv[1:4]
s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
x = np.load(src)
ys = s.run(None, {"x": x})
if len(ys) == 1:
    np.save(dst, ys[0])
else:
    np.savez(dst, **{f"y{i}": y for i, y in enumerate(ys)})
"""


def shape_for(nbytes: int) -> tuple[int, int, int, int]:
    """(a, b, c, d) float32 of ``nbytes``: d 256 and c 256 or 16 where the
    size allows, halved for small sizes (64K: (1, 4, 16, 256)); d stays even
    (the fused chain takes every second element of it)."""
    count = nbytes // 4
    d = 256
    c = 256 if count >= 256 * 256 * 16 else 16
    b = 16
    while b * c * d > count and b > 1:
        b //= 2
    while b * c * d > count and c > 1:
        c //= 2
    while b * c * d > count and d > 2:
        d //= 2
    if b * c * d > count or count % (b * c * d) or nbytes % 4:
        raise SystemExit(f"graph_chain.py: size {nbytes} bytes is not a float32 (a, b, c, d) tensor with a whole a "
                         f"(b*c*d = {b * c * d}); give a power of two of 16 bytes or more")
    return (count // (b * c * d), b, c, d)


def model(chain: str, shape, path: Path) -> None:
    import numpy as np
    import onnx
    from onnx import TensorProto as TP
    from onnx import helper, numpy_helper

    a, b, c, d = shape

    def i64(name, v):
        return numpy_helper.from_array(np.array(v, np.int64), name)

    outputs = ["y"]
    if chain == "tensor-ops":
        nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1, 3]),
                 helper.make_node("Concat", ["t", "t"], ["c"], axis=0),
                 helper.make_node("Reshape", ["c", "s1"], ["r"]),
                 helper.make_node("Split", ["r", "sp"], ["y0", "y1"], axis=0)]
        inits = [i64("s1", [2 * a, c * b * d]), i64("sp", [a, a])]
        outputs = ["y0", "y1"]
    elif chain == "step":
        nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1, 3]),
                 helper.make_node("Reshape", ["t", "s1"], ["r"]),
                 helper.make_node("Slice", ["r", "st", "en", "ax", "sp"], ["s"]),
                 helper.make_node("Unsqueeze", ["s", "u"], ["q"]),
                 helper.make_node("Flatten", ["q"], ["y"], axis=2)]
        inits = [i64("s1", [a, c * b, d]), i64("st", [-1]), i64("en", [-(a + 1)]), i64("ax", [0]), i64("sp", [-1]),
                 i64("u", [0])]
    else:
        nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1, 3]),
                 helper.make_node("Slice", ["t", "st", "en", "ax", "sp"], ["s"]),
                 helper.make_node("Unsqueeze", ["s", "u"], ["q"]),
                 helper.make_node("Reshape", ["q", "s1"], ["r"]),
                 helper.make_node("Squeeze", ["r", "u"], ["y"])]
        inits = [i64("st", [0]), i64("en", [d]), i64("ax", [3]), i64("sp", [2]), i64("u", [0]),
                 i64("s1", [1, a, c, b, d // 2])]
    g = helper.make_graph(nodes, chain, [helper.make_tensor_value_info("x", TP.FLOAT, list(shape))],
                          [helper.make_tensor_value_info(n, TP.FLOAT, None) for n in outputs], initializer=inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]), str(path))


def commands(chain: str, shape, backend_args, src: Path, out: Path, tmp: Path) -> dict[str, list[list[str]]]:
    a, b, c, d = shape
    onnxop = wp.onnxop_cmd() + backend_args
    m = tmp / f"{chain}.onnx"
    if chain == "tensor-ops":  # four commands; the concat reads the transposed file twice
        t, cat, r = tmp / "mid-t.npy", tmp / "mid-cat.npy", tmp / "mid-r.npy"
        return {
            "onnxop run": [onnxop + ["run", str(m), str(src), "-q", "-o", str(out)]],
            "one onnxop command per node": [
                onnxop + ["transpose", str(src), "--perm", "0,2,1,3", "-q", "-o", str(t)],
                onnxop + ["concat", str(t), str(t), "--axis", "0", "-q", "-o", str(cat)],
                onnxop + ["reshape", str(cat), "--shape", f"{2 * a},{c * b * d}", "-q", "-o", str(r)],
                onnxop + ["split", str(r), "--axis", "0", "--split", f"{a},{a}", "-q", "-o", str(out)],
            ],
            "onnxruntime CPU": [[wp.PY, "-c", ORT, str(m), str(src), str(out)]],
            "numpy": [[wp.PY, "-c", NUMPY, chain, str(src), str(out)]],
        }
    if chain == "step":
        steps = [["transpose", "--perm", "0,2,1,3"], ["reshape", "--shape", f"{a},{c * b},{d}"],
                 ["slice", "--starts", "-1", "--ends", str(-(a + 1)), "--axes", "0", "--steps", "-1"],
                 ["unsqueeze", "--axes", "0"], ["flatten", "--axis", "2"]]
    else:
        steps = [["transpose", "--perm", "0,2,1,3"], ["slice", "--starts", "0", "--ends", str(d), "--axes", "3",
                                                       "--steps", "2"],
                 ["unsqueeze", "--axes", "0"], ["reshape", "--shape", f"1,{a},{c},{b},{d // 2}"],
                 ["squeeze", "--axes", "0"]]
    five, prev = [], src
    for i, s in enumerate(steps):
        nxt = out if i == len(steps) - 1 else tmp / f"mid{i}.npy"
        five.append(onnxop + s[:1] + [str(prev)] + s[1:] + ["-q", "-o", str(nxt)])
        prev = nxt
    return {
        "onnxop run": [onnxop + ["run", str(m), str(src), "-q", "-o", str(out)]],
        "one onnxop command per node": five,
        "onnxruntime CPU": [[wp.PY, "-c", ORT, str(m), str(src), str(out)]],
        "numpy": [[wp.PY, "-c", NUMPY, chain, str(src), str(out)]],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="256M,1G")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--backend", default=None)
    ap.add_argument("--chains", default="step,fused,tensor-ops")
    ap.add_argument("--tmp", default=tempfile.gettempdir())
    args = ap.parse_args(argv)
    backend_args = ["--backend", args.backend] if args.backend else []
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")),
               platform.processor())
    print(f"# CPU: {cpu}; {os.cpu_count()} cores; adapter: {wp.adapter_line(args.backend)}")
    for size_text in args.sizes.split(","):
        size = wp.parse_size(size_text)
        shape = shape_for(size)
        with tempfile.TemporaryDirectory(dir=args.tmp, prefix="onnxop-graph-bench-") as folder:
            tmp = Path(folder)
            src = tmp / "x.npy"
            wp.make_npy(src, size)
            import numpy as np

            np.save(src, np.load(src).reshape(shape))  # make_npy's shape, re-cut to (a, b, c, d)
            for chain in args.chains.split(","):
                model(chain, shape, tmp / f"{chain}.onnx")
                stats = {t: wp.Stat() for t in TOOLS}
                other: list[float] = []
                for r in range(args.rounds):
                    order = TOOLS[r % len(TOOLS):] + TOOLS[: r % len(TOOLS)]
                    before = len(wp.OTHER_CPU)
                    for tool in order:
                        suffix = ".npz" if chain == "tensor-ops" else ".npy"
                        out = tmp / f"out-{chain}-{tool.replace(' ', '_')}{suffix}"
                        total, peak = 0.0, 0
                        for cmd in commands(chain, shape, backend_args, src, out, tmp)[tool]:
                            wall, rss = wp.run(cmd)
                            total, peak = total + wall, max(peak, rss)
                        stats[tool].add(total, peak)
                        if r == 0 and tool != "numpy":
                            ref = tmp / f"out-{chain}-numpy{suffix}"
                            if not ref.exists():
                                wp.run(commands(chain, shape, backend_args, src, ref, tmp)["numpy"][0])
                            if suffix == ".npz":  # members in order, bytes and shape
                                with np.load(out) as got, np.load(ref) as want:
                                    assert len(got.files) == len(want.files), tool
                                    for g, w in zip(got.files, want.files):
                                        assert got[g].shape == want[w].shape and \
                                            got[g].tobytes() == want[w].tobytes(), (tool, g)
                            else:
                                assert np.load(out).shape == np.load(ref).shape and wp.same_data(out, ref), tool
                        if tool != "numpy":
                            out.unlink()  # the disk holds one output at a time
                    other.append(sum(wp.OTHER_CPU[before:]))
                base = stats["onnxop run"]
                print(f"\n## {chain} chain, {wp.human(size)} float32 {shape}, {args.rounds} rounds; "
                      f"other processes' CPU per round: {', '.join(f'{o:.0f} s' for o in other)}; "
                      f"load: {open('/proc/loadavg').read().split()[:3]}")
                print("| tool | time | peak RSS | time / onnxop run (per round) | RSS / numpy |")
                print("|---|---|---|---|---|")
                for tool in TOOLS:
                    s = stats[tool]
                    print(f"| {tool} | {s.cell()} | {wp.human(s.rss)} | {s.per_round(base):.2f} | "
                          f"{s.rss / stats['numpy'].rss:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
