"""Every operator of the family (issue 21) through the Python API, against the
gather kernel making an output of the same size, in one process,
interleaved: each round runs every case once (the order rotated each round),
each case right after a transpose of a float32 square of the same bytes
(the gather kernel, gpu/gather.py), and the figure is the median of the
per-round ratios of output GB/s (output bytes / wall time of the whole API
call: numpy in, upload, kernels, readback, numpy out).

    python benchmarks/family_all.py --backend vulkan --size 16M --rounds 5
    eval "$(bash scripts/mesa25.sh /work/mesa25)"; python benchmarks/family_all.py --backend vulkan

The issue asks each operator's kernel for >= 0.8x the gather kernel's GB/s
for the same output size. benchmarks/family_ops.py (Concat, Split, Pad,
Where by their kernels) and benchmarks/indexed_ops.py (the indexed kernels,
with GB/s over every byte moved) measure the same ratio closer to the
kernels; this covers every operator the same way, as a user calls it.
Operators whose output is metadata (Shape, Size) run no kernel and are left
out. Prints a Markdown table with the command, the CPU and the load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from family_ops import cpu, load  # noqa: E402  (the same CPU name and load as the other family benchmarks)


def cases(side: int, rng):
    """name -> (what it does, a call making a float32-sized output of side*side*4 bytes)."""
    import numpy as np

    from onnxop_cli import api

    n = side * side
    f = rng.integers(0, 2**32, (side, side), dtype=np.uint32).view(np.float32)
    eighth = [np.ascontiguousarray(f[:, k * side // 8:(k + 1) * side // 8]) for k in range(8)]
    rows = rng.permutation(side).astype(np.int64)
    cols = rng.integers(-side, side, (side, side)).astype(np.int64)
    pairs = np.stack([rng.integers(-side, side, n), rng.integers(-side, side, n)], axis=-1).astype(np.int64).reshape(
        side, side, 2)
    lens = rng.integers(0, side + 1, side).astype(np.int64)
    cond = rng.integers(0, 2, (1, side)).astype(bool)
    g = rng.integers(0, 2**32, (side, side), dtype=np.uint32).view(np.float32)
    keep = np.ones(side + side // 8, bool)
    keep[rng.choice(keep.size, side // 8, replace=False)] = False
    wide = rng.integers(0, 2**32, (side, side + side // 8), dtype=np.uint32).view(np.float32)
    u32 = rng.integers(0, 2**32, (side, side), dtype=np.uint32)
    depth = rng.integers(0, side, (side,)).astype(np.int64)
    cache = rng.integers(0, 2**32, (4, side, side // 4), dtype=np.uint32).view(np.float32)
    step = rng.integers(0, 2**32, (4, 1, side // 4), dtype=np.uint32).view(np.float32)
    return {
        "concat (8 inputs, inner axis)": lambda b: api.concat(*eighth, axis=1, backend=b),
        "split (8 outputs)": lambda b: api.split(f, axis=0, num_outputs=8, backend=b),
        "pad (edge, 1 column each side)": lambda b: api.pad(f[:, 1:-1], pads=[0, 1, 0, 1], mode="edge", backend=b),
        "center-crop-pad (crop)": lambda b: api.center_crop_pad(wide, shape=[side, side], backend=b),
        "where (row condition)": lambda b: api.where(cond, x=f, y=g, backend=b),
        "compress (axis 1)": lambda b: api.compress(wide, condition=keep, axis=1, backend=b),
        "trilu (upper)": lambda b: api.trilu(f, backend=b),
        "gather (rows)": lambda b: api.gather(f, indices=rows, axis=0, backend=b),
        "gather-elements (axis 1)": lambda b: api.gather_elements(f, indices=cols, axis=1, backend=b),
        "gather-nd (pairs)": lambda b: api.gather_nd(f, indices=pairs, backend=b),
        "reverse-sequence": lambda b: api.reverse_sequence(f, sequence_lens=lens, batch_axis=0, time_axis=1,
                                                           backend=b),
        "scatter-nd (rows, none)": lambda b: api.scatter_nd(f, indices=rows[:, None], updates=f, backend=b),
        "scatter-elements (add, axis 1)": lambda b: api.scatter_elements(f, indices=cols, updates=f, axis=1,
                                                                         reduction="add", backend=b),
        "tensor-scatter (linear)": lambda b: api.tensor_scatter(cache, update=step, write_indices=depth[:4] % side,
                                                                backend=b),
        "bit-cast (uint32 -> float32)": lambda b: api.bit_cast(u32, to=1, backend=b),
        "one-hot (depth side)": lambda b: api.one_hot(depth, depth=np.array(side, np.int64),
                                                      values=np.array([0, 1], np.float32), backend=b),
        "eye-like": lambda b: api.eye_like(f, backend=b),
        "constant-of-shape": lambda b: api.constant_of_shape(np.array([side, side], np.int64),
                                                             value=np.array([1.5], np.float32), backend=b),
        "tile (2 x 2)": lambda b: api.tile(f[: side // 2, : side // 2], [2, 2], backend=b),
        "expand (a row)": lambda b: api.expand(f[:1], [side, side], backend=b),
    }


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    from onnxop_cli import api
    from onnxop_cli.gpu import get_gpu

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default=None)
    p.add_argument("--size", default="16M", help="output bytes (float32 square), e.g. 16M")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--only", default="", help="comma-separated substrings of case names")
    a = p.parse_args(argv)
    size = int(a.size[:-1]) << {"K": 10, "M": 20, "G": 30}[a.size[-1].upper()] if a.size[-1].isalpha() else int(a.size)
    side = int((size // 4) ** 0.5) // 64 * 64
    rng = np.random.default_rng(0)
    table = cases(side, rng)
    if a.only:
        table = {k: v for k, v in table.items() if any(s in k for s in a.only.split(","))}
    square = rng.integers(0, 2**32, (side, side), dtype=np.uint32).view(np.float32)
    gpu = get_gpu(a.backend)

    def out_bytes(r) -> int:
        return sum(x.nbytes for x in r) if isinstance(r, list) else r.nbytes

    def timed(call) -> tuple[float, int]:
        t0 = time.perf_counter()
        r = call()
        return time.perf_counter() - t0, out_bytes(r)

    for call in table.values():  # warm: pipelines compiled, the output's size checked
        call(a.backend)
    base_call = lambda: api.transpose(square, [1, 0], backend=a.backend)  # noqa: E731
    base_call()
    results: dict[str, list[tuple[float, float]]] = {k: [] for k in table}
    loads = []
    names = list(table)
    for r in range(a.rounds):
        loads.append(load())
        k = r % len(names)
        for name in names[k:] + names[:k]:
            t, nbytes = timed(lambda: table[name](a.backend))
            tb, bb = timed(base_call)
            results[name].append((nbytes / t / 1e9, bb / tb / 1e9))
    lines = [
        f"Command: `python benchmarks/family_all.py --backend {a.backend or 'auto'} --size {a.size} --rounds "
        f"{a.rounds}`; adapter {gpu.name}; CPU {cpu()}; {os.cpu_count()} CPUs; load (1 min) per round "
        f"{', '.join(loads)}; output {side}x{side} float32 ({side * side * 4 / 2**20:.0f} MiB) or as near as the op "
        "allows (GB/s counts its own output's bytes)",
        "",
        "| operator (case) | its GB/s | gather kernel GB/s | ratio (median of rounds) |",
        "|---|---|---|---|",
    ]
    for name in table:
        ours = [x for x, _ in results[name]]
        base = [y for _, y in results[name]]
        ratio = statistics.median(x / y for x, y in results[name])
        lines.append(f"| {name} | {statistics.median(ours):.2f} | {statistics.median(base):.2f} | {ratio:.2f} |")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
