"""The streaming chunk size, measured: a whole-process flatten of a 1 GiB
``.npy`` with copy.DEFAULT_CHUNK set to each candidate, fresh processes,
the candidates rotating within each round.

    python benchmarks/chunk_sizes.py --chunks 4,8,16,64 --rounds 3 --backend vulkan

gpu/copy.py's DEFAULT_CHUNK (4 MiB) was chosen with this measurement; run
it again when the kernels, the driver or the machine change.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = (
    "import sys, onnxop_cli.gpu.copy as c; c.DEFAULT_CHUNK = int(sys.argv.pop(1)) << 20; "
    "from onnxop_cli.__main__ import main; sys.argv[0] = 'onnxop'; sys.exit(main())"
)


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--chunks", default="4,8,16,64", help="MiB, comma-separated")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--backend", default="vulkan")
    p.add_argument("--mib", type=int, default=1024, help="size of the .npy (int32)")
    args = p.parse_args(argv)
    chunks = [int(c) for c in args.chunks.split(",")]
    times: dict[int, list[float]] = {c: [] for c in chunks}
    with tempfile.TemporaryDirectory(prefix="onnxop-chunks-") as tmp:
        src, out = Path(tmp) / "x.npy", Path(tmp) / "y.npy"
        side = int((args.mib << 18) ** 0.5)
        np.save(src, np.random.default_rng(0).integers(0, 2**31, (side, side), dtype=np.int32))
        for r in range(args.rounds):
            for c in chunks[r % len(chunks):] + chunks[: r % len(chunks)]:
                t0 = time.perf_counter()
                subprocess.run(
                    [sys.executable, "-c", CHILD, str(c), "flatten", str(src), "--axis", "1",
                     "-o", str(out), "-q", "--backend", args.backend],
                    check=True,
                )
                times[c].append(time.perf_counter() - t0)
        same = np.array_equal(np.load(src, mmap_mode="r"), np.load(out, mmap_mode="r"))
    print(f"flatten of a {side}x{side} int32 .npy ({side * side * 4 >> 20} MiB), --backend {args.backend}, "
          f"{args.rounds} rounds; last output identical to the input: {same}")
    for c in chunks:
        ts = times[c]
        print(f"  chunk {c:3d} MiB: median {statistics.median(ts):.2f} s ({min(ts):.2f}-{max(ts):.2f})")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
