"""Where an indexed kernel's time goes (issue 21, docs/indexed-operators.md#speed):
one case of benchmarks/indexed_ops.py against the gather kernel's transpose
of the same output, in process CPU seconds (lavapipe's threads included),
interleaved, with the bytes handed to ``queue.write_buffer`` (the uploads of
data and indices) timed apart; ``--empty`` runs the same calls with the
indexed kernel's body emptied (every entry point returns at once), so the
difference from a run without it is the kernel itself and what is left is
the uploads, the index check's setup and the readback.

    python benchmarks/indexed_breakdown.py
    python benchmarks/indexed_breakdown.py --empty
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

BODY = "fn body(wg: vec3<u32>, lid: u32, kind: u32, check: u32) {"


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", default="GatherElements axis 1")
    ap.add_argument("--side", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--empty", action="store_true", help="the indexed kernel's body emptied")
    args = ap.parse_args(argv)

    import onnxop_cli.gpu.kernels as kernels
    import onnxop_cli.gpu.shaders as shaders

    source = shaders.shader_source

    def patched(name: str) -> str:
        text = source(name)
        if args.empty and name == "indexed_gather.wgsl":
            assert BODY in text
            text = text.replace(BODY, BODY + "\n    if (kind < 1000u) { return; }", 1)
        return text

    shaders.shader_source = kernels.shader_source = patched  # before any pipeline is made
    from indexed_ops import cases

    from onnxop_cli.gpu.device import get_gpu

    gpu = get_gpu("vulkan")
    queue = gpu.queue
    uploads = [0.0]

    class Timed:
        def __getattr__(self, name):
            return getattr(queue, name)

        def write_buffer(self, *a, **k):
            t0 = time.process_time()
            try:
                return queue.write_buffer(*a, **k)
            finally:
                uploads[0] += time.process_time() - t0

    gpu.queue = Timed()
    runs = cases(args.side, np.random.default_rng(0))
    names = ["gather kernel, transpose", args.case]
    for n in names:
        runs[n](gpu)
    times: dict[str, list[float]] = {n: [] for n in names}
    spent: dict[str, list[float]] = {n: [] for n in names}
    loads = []
    for r in range(args.rounds):
        loads.append(open("/proc/loadavg").read().split()[0])
        for n in names if r % 2 == 0 else names[::-1]:
            uploads[0] = 0.0
            t0 = time.process_time()
            runs[n](gpu)
            times[n].append(time.process_time() - t0)
            spent[n].append(uploads[0])
    print(f"adapter {gpu.name}, {gpu.adapter.info.get('description', '')}; kernel body "
          f"{'emptied' if args.empty else 'as shipped'}; load per round {', '.join(loads)}")
    for n in names:
        print(f"{n}: CPU s {[round(t, 3) for t in times[n]]}; in write_buffer {[round(t, 3) for t in spent[n]]}")
    ratio = statistics.median(a / b for a, b in zip(times[names[0]], times[names[1]]))
    print(f"{args.case} GB/s / gather kernel GB/s (median of rounds): {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
