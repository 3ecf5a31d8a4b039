"""The indexed kernels' GB/s (gpu/indexed.py, gpu/scatter.py) against the
strided gather kernel (gpu/gather.py) for the same output size, in one
process, interleaved: every round runs each case once, in an order rotated
every round; the figure is output bytes / wall time of the whole call
(upload, index check, kernel, readback into a discarding sink), and the
ratio is the median of per-round ratios to the gather kernel's transpose of
the same bytes.

    python benchmarks/indexed_ops.py --backend vulkan            # 5 rounds, 16 MiB outputs
    eval "$(bash scripts/mesa25.sh /work/mesa25)"; python benchmarks/indexed_ops.py

Cases (float32, a square of --side; indices int64, random):

- gather kernel, transpose: the baseline (an Access with permuted strides);
- Gather axis 0: --side random rows;
- GatherElements axis 1: one random index per output element;
- GatherND: (row, column) pairs, one per output element;
- ReverseSequence: every batch entry reversed over a random length;
- ScatterND, reduction none: a random permutation of the rows, every row written once;
- with --old-kernels, GatherND, ScatterND and ScatterElements again on the kernels
  they ran before the whole-slice ones (gpu/render/slices.py,
  gpu/render/scatter_slices.py) and the line kernel (gpu/render/scatter.py's ``Lines``);
- ScatterElements, add: one random index per update along axis 1 (duplicates: rounds);
- with --before on an adapter that maps its buffers (gpu/indexed_buffers.py), every
  indexed case again staged (``mapped=False``: write_buffer and readback copies),
  Gather on its lookups kernel (``slice_copy=False``: not indexed_slabs.wgsl),
  ReverseSequence and GatherElements on the element kernel (``slice_copy=False``: not
  gpu/render/reverse.py, gather_elements_rows.wgsl), GatherND's pairs on the
  whole-slice words kernel (``indexed_variants.ENABLED["nd pairs"]`` off: not gather_nd_rows.wgsl), and
  the two scatters with their separate index-check pass (``fold=False``).

Beside the output's GB/s, "GB/s (all bytes)" counts every byte the call moves
between host and kernel: the data (and updates) uploaded, the indices
uploaded and the output read back.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def cases(side: int, rng, before: bool = False, old_kernels: bool = False):
    import numpy as np

    from onnxop_cli.gpu import indexed as ix
    from onnxop_cli.gpu import scatter as sc
    from onnxop_cli.gpu.gather import Access, gather_through_kernel
    from onnxop_cli.ops import indexing
    from onnxop_cli.core.sources import MemoryBytes

    x = rng.standard_normal((side, side)).astype(np.float32)
    data = ix.Data(MemoryBytes(x), x.shape, 32)

    def idx(a):
        return ix.Index(MemoryBytes(np.ascontiguousarray(a)), a.shape)

    rows = rng.integers(-side, side, (side,)).astype(np.int64)
    elements = rng.integers(-side, side, (side, side)).astype(np.int64)
    pairs = rng.integers(0, side, (side * side, 2)).astype(np.int64)
    lens = rng.integers(0, side + 1, (side,)).astype(np.int64)
    perm = rng.permutation(side).astype(np.int64).reshape(side, 1)

    out = x.nbytes

    def gathered(table_check, index, slice_copy=True, mapped=None):
        table, check = table_check
        return (lambda gpu: ix.gather_indexed(gpu, data, idx(index), check, table, _discard, slice_copy=slice_copy,
                                              mapped=mapped), x.nbytes + index.nbytes + out)

    def scattered(table_check, index, reduce, slice_copy=True, mapped=None, fold=True):
        table, check = table_check
        return (lambda gpu: sc.scatter_indexed(gpu, data, data, idx(index), check, table, reduce, _discard,
                                               slice_copy=slice_copy, mapped=mapped, fold=fold),
                2 * x.nbytes + index.nbytes + out)

    old = {  # --before: the kernels these cases ran before the whole-slice ones (gpu/render/slices.py)
        "GatherND pairs, lookups kernel (before)": gathered(
            indexing.gather_nd("GND", x.shape, pairs.shape, 0), pairs, False),
        "ScatterND none, claim/apply rounds (before)": scattered(
            indexing.scatter_nd("SND", x.shape, perm.shape, x.shape), perm, sc.Reduce(), False),
        "ScatterElements add, rounds (before)": scattered(
            indexing.scatter_elements("SE", x.shape, elements.shape, x.shape, 1), elements,
            sc.Reduce("add", 2, False), False),
    } if old_kernels else {}

    def now(mapped=None):
        return {
            "Gather axis 0": gathered(indexing.gather("Gather", x.shape, rows.shape, 0), rows, mapped=mapped),
            "GatherElements axis 1": gathered(indexing.gather_elements("GE", x.shape, elements.shape, 1), elements,
                                              mapped=mapped),
            "GatherND pairs": gathered(indexing.gather_nd("GND", x.shape, pairs.shape, 0), pairs, mapped=mapped),
            "ReverseSequence": gathered(indexing.reverse_sequence("RS", x.shape, lens.shape, 0, 1), lens,
                                        mapped=mapped),
            "ScatterND none (permutation)": scattered(indexing.scatter_nd("SND", x.shape, perm.shape, x.shape),
                                                      perm, sc.Reduce(), mapped=mapped),
            "ScatterElements add": scattered(indexing.scatter_elements("SE", x.shape, elements.shape, x.shape, 1),
                                             elements, sc.Reduce("add", 2, False), mapped=mapped),
        }

    staged = {f"{k} (staged, before)": v for k, v in now(False).items()} if before else {}
    if before:  # Gather on its lookups kernel (before indexed_slabs.wgsl), mapped
        staged["Gather axis 0 (lookups kernel, before)"] = gathered(
            indexing.gather("Gather", x.shape, rows.shape, 0), rows, slice_copy=False)
    if before:  # ReverseSequence on the element kernel (before gpu/render/reverse.py), mapped
        staged["ReverseSequence (element kernel, before)"] = gathered(
            indexing.reverse_sequence("RS", x.shape, lens.shape, 0, 1), lens, slice_copy=False)
    if before:  # GatherElements on the element kernel (before gather_elements_rows.wgsl), mapped
        staged["GatherElements axis 1 (element kernel, before)"] = gathered(
            indexing.gather_elements("GE", x.shape, elements.shape, 1), elements, slice_copy=False)
    if before:  # GatherND's pairs on the whole-slice words kernel (before gather_nd_rows.wgsl), mapped
        from onnxop_cli.gpu import indexed_variants

        words, moved = gathered(indexing.gather_nd("GND", x.shape, pairs.shape, 0), pairs)

        def slices_kernel(gpu):
            indexed_variants.ENABLED["nd pairs"] = False
            try:
                return words(gpu)
            finally:
                indexed_variants.ENABLED["nd pairs"] = True

        staged["GatherND pairs (slices kernel, before)"] = (slices_kernel, moved)
    if before:  # the scatters' separate index-check pass (indices.wgsl), mapped
        staged["ScatterND none (check pass, before)"] = scattered(
            indexing.scatter_nd("SND", x.shape, perm.shape, x.shape), perm, sc.Reduce(), fold=False)
        staged["ScatterElements add (check pass, before)"] = scattered(
            indexing.scatter_elements("SE", x.shape, elements.shape, x.shape, 1), elements,
            sc.Reduce("add", 2, False), fold=False)
    return {
        "gather kernel, transpose": (lambda gpu: gather_through_kernel(
            gpu, MemoryBytes(x), _discard, view=Access(x.shape[::-1], (1, side), 0), bits=32), 2 * x.nbytes),
    } | now() | staged | old


def _discard(view: memoryview) -> None:
    pass


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--side", type=int, default=2048, help="side of the float32 square (2048: 16 MiB)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--backend", default="vulkan")
    ap.add_argument("--before", action="store_true",
                    help="also run every indexed case staged (no mapped buffers), interleaved")
    ap.add_argument("--old-kernels", action="store_true",
                    help="also run GatherND, ScatterND and ScatterElements on the kernels before the whole-slice ones")
    args = ap.parse_args(argv)

    from onnxop_cli.gpu.device import get_gpu

    gpu = get_gpu(args.backend)
    both = cases(args.side, np.random.default_rng(0), args.before, args.old_kernels)
    runs = {k: f for k, (f, _) in both.items()}
    moved = {k: m for k, (_, m) in both.items()}
    names = list(runs)
    for name in names:  # compile every pipeline once, outside the timing
        runs[name](gpu)
    nbytes = args.side * args.side * 4
    times: dict[str, list[float]] = {n: [] for n in names}
    load = [os.getloadavg()[0]]
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:
            t0 = time.perf_counter()
            runs[name](gpu)
            times[name].append(time.perf_counter() - t0)
        load.append(os.getloadavg()[0])
    base = times[names[0]]
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    print(f"{gpu.name}, {gpu.info.driver}; CPU {cpu}, {os.cpu_count()} CPUs; Python {platform.python_version()}; "
          f"load average (1 min) per round {', '.join(f'{v:.1f}' for v in load)}")
    print(f"Command: python benchmarks/indexed_ops.py {' '.join(argv if argv is not None else sys.argv[1:])}")
    print(f"{args.rounds} rounds interleaved; output {nbytes / (1 << 20):.0f} MiB float32 per case\n")
    print("| case | median time | GB/s (output) | vs gather kernel (median of per-round ratios) "
          "| GB/s (all bytes) | all bytes vs gather kernel's |")
    print("|---|---|---|---|---|---|")
    for name in names:
        t = statistics.median(times[name])
        ratio = statistics.median(b / s for b, s in zip(base, times[name]))
        every = statistics.median(moved[name] / s / (moved[names[0]] / b) for b, s in zip(base, times[name]))
        print(f"| {name} | {t * 1000:.0f} ms | {nbytes / t / 1e9:.2f} | {ratio:.2f}x "
              f"| {moved[name] / t / 1e9:.2f} | {every:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
