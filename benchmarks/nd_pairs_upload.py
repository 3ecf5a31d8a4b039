"""GatherND pairs with its raw tuples uploaded whole or a band at a time
(gpu/indexed_variants.py's RAW_BAND), through the API, interleaved, each call right
after the gather kernel's transpose of a float32 square of the same output
size: page faults per call (getrusage; deterministic where time is not),
wall and CPU time, and the median of per-round output GB/s ratios.

    python benchmarks/nd_pairs_upload.py --backend vulkan --bands 0,8 --rounds 8

``--bands``: MiB of tuples a dispatch reads, 0 for one upload of all of
them (the layout before 2026-12-02).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from ops_whole_process import cpu, load  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    from onnxop_cli import api
    from onnxop_cli.gpu import indexed_variants

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="vulkan")
    p.add_argument("--side", type=int, default=2048)
    p.add_argument("--bands", default="0,8")
    p.add_argument("--rounds", type=int, default=8)
    a = p.parse_args(argv)
    side, rng = a.side, np.random.default_rng(0)
    f = rng.integers(0, 2**32, (side, side), dtype=np.uint32).view(np.float32)
    pairs = rng.integers(-side, side, (side, side, 2)).astype(np.int64)
    square = rng.integers(0, 2**32, (side, side), dtype=np.uint32).view(np.float32)
    want = f[pairs[..., 0], pairs[..., 1]].tobytes()
    bands = [int(b) for b in a.bands.split(",")]
    call = lambda: api.gather_nd(f, indices=pairs, backend=a.backend)  # noqa: E731
    base = lambda: api.transpose(square, [1, 0], backend=a.backend)  # noqa: E731
    for b in bands:
        indexed_variants.RAW_BAND = (b << 20) or (1 << 62)
        assert call().tobytes() == want
    base()
    got: dict[int, list[tuple[float, float, float, int]]] = {b: [] for b in bands}
    loads = []
    for r in range(a.rounds):
        loads.append(load())
        for b in bands if r % 2 == 0 else bands[::-1]:
            indexed_variants.RAW_BAND = (b << 20) or (1 << 62)
            r0, c0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.process_time(), time.perf_counter()
            call()
            t, c, r1 = time.perf_counter() - t0, time.process_time() - c0, resource.getrusage(resource.RUSAGE_SELF)
            t0 = time.perf_counter()
            base()
            got[b].append((t, c, time.perf_counter() - t0, r1.ru_minflt - r0.ru_minflt))
    print(f"Command: `python benchmarks/nd_pairs_upload.py --backend {a.backend} --bands {a.bands} --rounds "
          f"{a.rounds}`; CPU {cpu()}; load (1 min) per round {', '.join(loads)}; indices int64 ({side}, {side}, 2)")
    print("| tuples a dispatch | page faults a call | wall ms | CPU ms | ratio to the gather kernel |")
    print("|---|---|---|---|---|")
    for b, rows in got.items():
        med = [statistics.median(x[k] for x in rows) for k in range(4)]
        ratio = statistics.median(tb / t for t, _, tb, _ in rows)
        print(f"| {'all' if b == 0 else f'{b} MiB'} | {med[3]:.0f} | {med[0] * 1e3:.0f} | {med[1] * 1e3:.0f} | "
              f"{ratio:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
