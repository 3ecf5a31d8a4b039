"""The gather kernel against the flat copy, in one process, rounds interleaved.

    python scripts/bench_gather.py [vulkan|gl] [MiB] [rounds]

Each case moves the same number of bytes (default 64 MiB) from memory to a
sink that drops them, straight through the kernel functions; the cases take
turns within each round (the machine may be shared), and each is printed
with its median and its ratio to the flat copy's median.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from onnxop_cli.gpu import Access, copy_through_kernel, gather_through_kernel, get_gpu, init_instance
from onnxop_cli.core.tensor import MemoryBytes


def main() -> None:
    backend = sys.argv[1] if len(sys.argv) > 1 else "vulkan"
    mib = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    init_instance([backend])
    gpu = get_gpu(backend)
    nbytes = mib << 20
    source = MemoryBytes(np.random.default_rng(0).integers(0, 256, nbytes, dtype=np.uint8))
    side = int((nbytes // 4) ** 0.5)  # a square f4 matrix
    cube = round((nbytes // 4) ** (1 / 3))
    cases = {
        "flat copy": None,
        "big-endian f4": (Access.row_major((nbytes // 4,)), 32, 4),
        "Fortran f4": (Access.fortran((side, side)), 32, 0),
        "Fortran u1": (Access.fortran((2 * side, 2 * side)), 8, 0),
        "transpose f4 (2,0,1)": (Access((cube, cube, cube), (1, cube * cube, cube)), 32, 0),
    }

    def run(case) -> float:
        t0 = time.perf_counter()
        if case is None:
            copy_through_kernel(gpu, source, lambda chunk: None)
        else:
            view, bits, swap = case
            gather_through_kernel(gpu, source, lambda chunk: None, view=view, bits=bits, swap=swap)
        return time.perf_counter() - t0

    for case in cases.values():  # warm-up: device, pipelines
        run(case)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, case in cases.items():
            times[name].append(run(case))
    base = statistics.median(times["flat copy"])
    for name, ts in times.items():
        median = statistics.median(ts)
        print(f"{backend:6s} {name:22s} {median * 1000:8.1f} ms  {median / base:5.2f}x  ({mib} MiB, {rounds} rounds)")


if __name__ == "__main__":
    main()
