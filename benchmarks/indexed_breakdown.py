"""Where an indexed kernel's time goes (docs/indexed-operators.md#speed):
one case of benchmarks/indexed_ops.py against the gather kernel's transpose
of the same output, in process CPU seconds (lavapipe's threads included),
interleaved, with the uploads of data and indices (``Buffers.upload``,
mapped or staged) timed apart; ``--empty`` runs the same calls with the
indexed kernels' bodies emptied (the indexed gather's, gpu/render/indexed.py, and the runs kernels
gpu/render/rows.py's return at once; the lines kernel, gpu/render/lines.py, is not emptied), so the
difference from a run without it is the kernel itself and what is left is
the uploads, the index check's setup and the readback.

    python benchmarks/indexed_breakdown.py
    python benchmarks/indexed_breakdown.py --empty
    python benchmarks/indexed_breakdown.py --case "GatherND pairs" --empty
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
EMPTY = {  # shader -> (the line a kernel's body starts after, the early return put there)
    "gather-elements": ("let e0 = start(wg, lid);", "if (e0 < 0xffffffffu) { return; }"),  # render/rows.py's
    "gather-nd": ("let p0 = start(wg, lid);", "if (p0 < 0xffffffffu) { return; }"),
}


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", default="GatherElements axis 1")
    ap.add_argument("--side", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--empty", action="store_true", help="the indexed kernel's body emptied")
    args = ap.parse_args(argv)

    import onnxop_cli.gpu.shaders as shaders

    source = shaders.shader_source

    def patched(name: str, **constants: int) -> str:
        text = source(name, **constants)
        if args.empty and name in EMPTY:
            line, early = EMPTY[name]
            assert line in text
            text = text.replace(line, line + "\n    " + early)
        return text

    shaders.shader_source = patched  # before any pipeline is made
    if args.empty:  # the rendered indexed gather: its body's text, before any kernel is rendered
        import onnxop_cli.gpu.render.indexed as rendered

        rendered._BODY = rendered._BODY.replace(BODY, BODY + "\n    if (kind < 1000u) { return; }")
    from onnxop_cli.gpu.render import rows

    for kernel in rows.KERNELS.values():  # rendered: the frame's text, emptied the same way
        line, early = EMPTY[kernel.NAME]
        text = kernel.wgsl().replace(line, line + "\n    " + early) if args.empty else kernel.wgsl()
        object.__setattr__(kernel, "wgsl", lambda text=text: text)
    from indexed_ops import cases

    from onnxop_cli.gpu.device import get_gpu
    from onnxop_cli.gpu.indexed_buffers import Buffers

    gpu = get_gpu("vulkan")
    uploads = [0.0]
    upload = Buffers.upload

    def timed(self, *a, **k):
        t0 = time.process_time()
        try:
            return upload(self, *a, **k)
        finally:
            uploads[0] += time.process_time() - t0

    Buffers.upload = timed
    runs = {k: f for k, (f, _) in cases(args.side, np.random.default_rng(0)).items()}  # (call, bytes moved)
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
        print(f"{n}: CPU s {[round(t, 3) for t in times[n]]}; in uploads {[round(t, 3) for t in spent[n]]}")
    ratio = statistics.median(a / b for a, b in zip(times[names[0]], times[names[1]]))
    print(f"{args.case} GB/s / gather kernel GB/s (median of rounds): {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
