"""Re-layout kernel against the flat copy, in one process, same run.

    python scripts/bench_relayout.py [vulkan|gl] [MiB]

Each case is a tensor of the same size (default 32 MiB) flattened in memory
through core.apply; best of 3 after a warm-up, printed with its ratio to the
C-ordered flat copy of the same number of bytes.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from onnxop_cli import core
from onnxop_cli.ops import flatten_node
from onnxop_cli.tensor import Tensor


def main() -> None:
    backend = sys.argv[1] if len(sys.argv) > 1 else "vulkan"
    mib = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    rng = np.random.default_rng(0)
    rows = mib * 256  # rows of 4096 bytes
    c = rng.integers(0, 2**32, (rows, 1024), dtype=np.uint32).view(np.float32)
    cases = {
        "C-order copy": c,
        "Fortran f4": np.asfortranarray(c),
        "big-endian f4": c.astype(">f4"),
        "Fortran u1": np.asfortranarray(rng.integers(0, 256, (rows, 4096), dtype=np.uint8)),
    }
    for a in cases.values():  # warm-up: device, pipelines
        core.apply(flatten_node(), Tensor.from_numpy(a[:8]), backend=backend)
    best = {}
    for name, a in cases.items():
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            core.apply(flatten_node(), Tensor.from_numpy(a), backend=backend)
            times.append(time.perf_counter() - t0)
        best[name] = min(times)
    base = best["C-order copy"]
    for name, seconds in best.items():
        print(f"{backend:6s} {name:14s} {seconds * 1000:8.1f} ms  {seconds / base:5.2f}x  ({cases[name].nbytes >> 20} MiB)")


if __name__ == "__main__":
    main()
