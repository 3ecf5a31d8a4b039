"""Where's one pass against its old two-piece plan and the gather kernel
(issue 21, docs/operators.md#speed): per round, interleaved and rotated, the
process CPU seconds (all of lavapipe's threads; steadier than wall time on a
shared machine) of the gather kernel writing the output, the two-piece plan
(Y copied over the output, then X under the condition) and the one select
piece ops/where.py plans now. Prints per round: gather/plan (the ratio the
issue asks >= 0.8 of) and old/new.

    python benchmarks/where_one_pass.py 32000000 4
"""
import sys, time, statistics, numpy as np
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.core.view import View, c_strides
from onnxop_cli.gpu import get_gpu
from onnxop_cli.gpu.gather import gather_through_kernel
from onnxop_cli.gpu.pieces import Source, run_pieces
from onnxop_cli.ops.family import Piece
gpu = get_gpu("vulkan")
print("adapter", gpu.name, "load", open("/proc/loadavg").read().split()[0])
n = int(sys.argv[1]) // 4; rows = 512; cols = n // rows; n = rows * cols
rng = np.random.default_rng(0)
whole = rng.integers(0, 2**32, n, dtype=np.uint32)
cond = np.tile(np.array([1, 0, 1, 1], np.uint8), cols // 4 + 1)[:cols]
src = [Source(MemoryBytes(cond)), Source(MemoryBytes(whole)), Source(MemoryBytes(whole[::-1].copy()))]
sh = (rows, cols); cs = c_strides(sh)
old = [Piece(sh, cs, 0, 2, (cols, 1)), Piece(sh, cs, 0, 1, (cols, 1), mask=0, mask_strides=(0, 1))]
new = [Piece(sh, cs, 0, 1, (cols, 1), mask=0, mask_strides=(0, 1), other=2, other_strides=(cols, 1))]
gv = View(sh, (-cols, 1), (rows - 1) * cols)
sink = lambda c: None
def t(f):
    t0 = time.process_time(); f(); return time.process_time() - t0
fs = {"gather": lambda: gather_through_kernel(gpu, MemoryBytes(whole), sink, view=gv, bits=32),
      "old": lambda: run_pieces(gpu, src, sink, pieces=old, count=n, bits=32),
      "new": lambda: run_pieces(gpu, src, sink, pieces=new, count=n, bits=32)}
for f in fs.values(): f()
res = {k: [] for k in fs}
names = list(fs)
for r in range(int(sys.argv[2])):
    for k in names[r % 3:] + names[:r % 3]:
        res[k].append(t(fs[k]))
g = res["gather"]
for k in ("old", "new"):
    print(k, "ratio to gather per round", [round(a / b, 2) for a, b in zip(g, res[k])], "median", round(statistics.median(a / b for a, b in zip(g, res[k])), 2))
print("new/old speed per round", [round(o / w, 2) for o, w in zip(res["old"], res["new"])])
print("gather GB/s", [round(n * 4 / x / 1e9, 2) for x in g])
