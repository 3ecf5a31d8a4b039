"""Split's outputs with and without one shared run (gpu/pieces.Runs, held by
core/apply_tensors._outputs), interleaved in one process: each pair runs the node
once with every output making its own run, then once sharing, and the
figure is the median of the per-pair time ratios (old / new). Outputs are
checked against numpy every call.

    python benchmarks/split_reuse_ab.py --backend vulkan --pairs 15
"""

from __future__ import annotations

import argparse
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
    from onnxop_cli.core import apply_tensors

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default=None)
    p.add_argument("--pairs", type=int, default=15)
    p.add_argument("--side", type=int, default=2048)
    p.add_argument("--outputs", type=int, default=8)
    a = p.parse_args(argv)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2**32, (a.side, a.side), dtype=np.uint32).view(np.float32)
    want = np.split(x, a.outputs, axis=0)
    shared = apply_tensors._outputs

    def each(gpu, plans, tensors, sinks, names):
        return apply_tensors._each_output(gpu, plans, tensors, sinks, names, None)

    def timed(outputs) -> float:
        apply_tensors._outputs = outputs
        try:
            t0 = time.perf_counter()
            got = api.split(x, axis=0, num_outputs=a.outputs, backend=a.backend)
            t = time.perf_counter() - t0
        finally:
            apply_tensors._outputs = shared
        assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
        return t

    timed(shared), timed(each)
    loads = [load()]
    ratios = [timed(each) / timed(shared) for _ in range(a.pairs)]
    loads.append(load())
    print(f"Command: `python benchmarks/split_reuse_ab.py --backend {a.backend or 'auto'} --pairs {a.pairs}`; "
          f"Split of float32 {a.side}x{a.side} into {a.outputs} along axis 0; CPU {cpu()}; load {', '.join(loads)}")
    print(f"shared run speed-up (time without / with), median of {a.pairs} pairs: {statistics.median(ratios):.3f} "
          f"(range {min(ratios):.2f}-{max(ratios):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
