"""Where's paths against the gather kernel (docs/operators.md#speed):
per round, interleaved and rotated, the process CPU seconds (all of
lavapipe's threads; steadier than wall time on a shared machine) of the
gather kernel writing the output, the two-piece plan (Y copied over the
output, then X under the condition), the one select piece of the pieces
kernel (the general path) and the whole-word select ops/where.py plans for
run forms (gpu/render/select.py), X and Y the output's shape (rows, cols). Prints
per round: gather/plan (the ratio the issue asks >= 0.8 of) and old/new.
Third argument: the element type (f4 by default; u1, f2, f8, c16 too);
fourth: the condition, "row" (cols,) broadcast along the rows (default),
"full" (rows, cols) or "column" (rows, 1), a trailing run; fifth "wall"
for wall-clock seconds.

    python benchmarks/where_one_pass.py 32000000 4
    python benchmarks/where_one_pass.py 32000000 4 f4 full
"""
import sys, time, statistics, numpy as np
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.core.region import Access, Masked, Select, c_strides, load
from onnxop_cli.gpu import get_gpu
from onnxop_cli.gpu.gather import gather_through_kernel
from onnxop_cli.gpu.pieces import Source, run_pieces
from onnxop_cli.gpu.word_kernels import run_select
from onnxop_cli.ops.tensor_op import Piece
gpu = get_gpu("vulkan")
print("adapter", gpu.name, gpu.adapter.info.get("description", ""), "load", open("/proc/loadavg").read().split()[0])
dt = np.dtype(sys.argv[3] if len(sys.argv) > 3 else "f4"); bits = dt.itemsize * 8
form = sys.argv[4] if len(sys.argv) > 4 else "row"
clock = time.perf_counter if sys.argv[5:] == ["wall"] else time.process_time
n = int(sys.argv[1]) // dt.itemsize; rows = 512; cols = n // rows; n = rows * cols
rng = np.random.default_rng(0)
whole = rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8).view(dt)
cond, ms, cf = {"row": (np.tile(np.array([1, 0, 1, 1], np.uint8), cols // 4 + 1)[:cols], (0, 1), (1, cols)),
                "full": (rng.integers(0, 2, n, dtype=np.uint8), (cols, 1), (1, n)),
                "column": (rng.integers(0, 2, rows, dtype=np.uint8), (1, 0), (cols, rows))}[form]
print("type", dt, "condition", form, "output bytes", n * dt.itemsize)
src = [Source(MemoryBytes(cond)), Source(MemoryBytes(whole)), Source(MemoryBytes(whole[::-1].copy()))]
sh = (rows, cols); cs = c_strides(sh)
old = [Piece(sh, cs, 0, load(2, sh, (cols, 1))), Piece(sh, cs, 0, Masked(load(1, sh, (cols, 1)), load(0, sh, ms)))]
new = [Piece(sh, cs, 0, Select(load(0, sh, ms), load(1, sh, (cols, 1)), load(2, sh, (cols, 1))))]
gv = Access(sh, (-cols, 1), (rows - 1) * cols)
sink = lambda c: None
def t(f):
    t0 = clock(); f(); return clock() - t0
fs = {"gather": lambda: gather_through_kernel(gpu, MemoryBytes(whole), sink, view=gv, bits=bits),
      "old": lambda: run_pieces(gpu, src, sink, pieces=old, count=n, bits=bits),
      "new": lambda: run_pieces(gpu, src, sink, pieces=new, count=n, bits=bits),
      "words": lambda: run_select(gpu, src, sink, forms=[cf, (1, n), (1, n)], fallback=new, count=n, bits=bits)}
for f in fs.values(): f()
res = {k: [] for k in fs}
names = list(fs)
for r in range(int(sys.argv[2])):
    for k in names[r % len(names):] + names[:r % len(names)]:
        res[k].append(t(fs[k]))
g = res["gather"]
for k in ("old", "new", "words"):
    print(k, "ratio to gather per round", [round(a / b, 2) for a, b in zip(g, res[k])], "median", round(statistics.median(a / b for a, b in zip(g, res[k])), 2))
print("new/old speed per round", [round(o / w, 2) for o, w in zip(res["old"], res["new"])])
print("gather GB/s", [round(n * dt.itemsize / x / 1e9, 2) for x in g])
print("words GB/s", [round(n * dt.itemsize / x / 1e9, 2) for x in res["words"]])
print("load", open("/proc/loadavg").read().split()[0])
