"""The lines kernel (gpu/indexed_variants.py ``lines``) against the kernels it replaced,
in one process, interleaved: each round runs every case once with the
lines kernel and once without it (``indexed_variants.ENABLED["lines"]`` off, so
the table takes the element kernel as before), alternating which goes
first, and the figure is the median of the per-round ratios of wall time
of the whole API call (old time / new time: above 1 is faster). Every
output is checked against numpy first.

    python benchmarks/gather_lines_ab.py --backend vulkan --rounds 5
    eval "$(bash scripts/mesa25.sh /work/mesa25)"; python benchmarks/gather_lines_ab.py --backend vulkan
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
from ops_whole_process import cpu, load  # noqa: E402


def cases(rng):
    """name -> (call(backend), the numpy result)."""
    import numpy as np

    from onnxop_cli import api

    def bits(shape, dtype, order="C"):
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        return np.asarray(rng.integers(0, 256, n, dtype=np.uint8).view(dtype).reshape(shape), order=order)

    def keep(n, drop):
        k = np.ones(n, bool)
        k[rng.choice(n, drop, replace=False)] = False
        return k

    wide, k1 = bits((2048, 2304), np.float32), keep(2304, 256)
    f64, k2 = bits((2048, 1152), np.float64), keep(1152, 128)
    fort = bits((2048, 2304), np.float32, "F")
    odd = keep(2304, 257)  # 2047 kept: lines of m not a multiple of 4
    narrow, k3 = bits((1 << 20, 4), np.float32), np.array([1, 0, 1, 1], bool)
    halves, k4 = bits((1024, 2304, 2), np.float16), keep(2304, 256)
    flat, k5 = bits((4 << 20,), np.float32), rng.integers(0, 2, 4 << 20).astype(bool)
    square, cols = bits((2048, 2048), np.float32), rng.integers(-2048, 2048, 2048).astype(np.int64)
    line, idx = bits((4 << 20,), np.float32), rng.integers(0, 4 << 20, 4 << 20).astype(np.int64)
    return {
        "compress axis 1 float32 (2048, 2304)": (lambda b: api.compress(wide, condition=k1, axis=1, backend=b),
                                                 wide[:, k1]),
        "compress axis 1 float64 (2048, 1152)": (lambda b: api.compress(f64, condition=k2, axis=1, backend=b),
                                                 f64[:, k2]),
        "compress axis 1 float32 Fortran": (lambda b: api.compress(fort, condition=k1, axis=1, backend=b),
                                            fort[:, k1]),
        "compress axis 1 float32, 2047 kept": (lambda b: api.compress(wide, condition=odd, axis=1, backend=b),
                                               wide[:, odd]),
        "compress axis 1 float32 (1M, 4), 3 kept": (lambda b: api.compress(narrow, condition=k3, axis=1, backend=b),
                                                    narrow[:, k3]),
        "compress axis 1 float16 (1024, 2304, 2)": (lambda b: api.compress(halves, condition=k4, axis=1, backend=b),
                                                    halves[:, k4]),
        "compress axis None float32 4M, half kept": (lambda b: api.compress(flat, condition=k5, backend=b),
                                                     flat[k5]),
        "gather axis 1 float32 (2048, 2048)": (lambda b: api.gather(square, indices=cols, axis=1, backend=b),
                                               np.take(square, cols, axis=1)),
        "gather axis 0 float32 4M by 4M": (lambda b: api.gather(line, indices=idx, axis=0, backend=b),
                                           np.take(line, idx, axis=0)),
    }


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    from onnxop_cli.gpu import get_gpu, indexed_variants

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default=None)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--only", default="", help="comma-separated substrings of case names")
    a = p.parse_args(argv)
    table = cases(np.random.default_rng(0))
    if a.only:
        table = {k: v for k, v in table.items() if any(s in k for s in a.only.split(","))}
    gpu = get_gpu(a.backend)
    def with_lines(on: bool) -> None:
        indexed_variants.ENABLED["lines"] = on

    def timed(call) -> float:
        t0 = time.perf_counter()
        call(a.backend)
        return time.perf_counter() - t0

    for name, (call, want) in table.items():  # warm, and checked
        for on in (True, False):
            with_lines(on)
            got = call(a.backend)
            assert got.shape == want.shape and got.tobytes() == np.ascontiguousarray(want).tobytes(), (name, on)
    results: dict[str, list[tuple[float, float]]] = {k: [] for k in table}
    loads = []
    for r in range(a.rounds):
        loads.append(load())
        for name, (call, _) in table.items():
            t = {}
            for on in ((True, False) if r % 2 else (False, True)):
                with_lines(on)
                t[on] = timed(call)
            results[name].append((t[False], t[True]))
    with_lines(True)
    print(f"Command: `python benchmarks/gather_lines_ab.py --backend {a.backend or 'auto'} --rounds {a.rounds}`; "
          f"adapter {gpu.name}, {gpu.adapter.info.get('description', '')}; CPU {cpu()}; {os.cpu_count()} CPUs; "
          f"load (1 min) per round {', '.join(loads)}\n")
    print("| case | without lines (ms) | with lines (ms) | speed-up (median of rounds) |\n|---|---|---|---|")
    for name, pairs in results.items():
        old = statistics.median(x for x, _ in pairs) * 1e3
        new = statistics.median(y for _, y in pairs) * 1e3
        print(f"| {name} | {old:.0f} | {new:.0f} | {statistics.median(x / y for x, y in pairs):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
