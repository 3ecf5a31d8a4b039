"""Start-up by engine: the whole-process flatten of a small .npy (4 KiB) with
onnxop on wgpu, onnxop on Dawn, and numpy alone, as fresh processes.

The three alternate within each round so machine load hits them alike; each
figure is the median over rounds (min-max). Outputs are checked to be equal.

    python benchmarks/engines_startup.py --rounds 15 --backend vulkan
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--backend", default="vulkan")
    args = parser.parse_args()
    import numpy as np

    with tempfile.TemporaryDirectory(prefix="onnxop-startup-") as tmp:
        folder = Path(tmp)
        a = np.random.default_rng(0).random((8, 128), dtype=np.float32)  # 4 KiB of data
        np.save(folder / "a.npy", a)
        onnxop = [sys.executable, "-m", "onnxop_cli", "-q", "-b", args.backend, "flatten", "a.npy"]
        runs = {
            "onnxop --engine wgpu": onnxop + ["-o", "wgpu.npy", "--engine", "wgpu"],
            "onnxop --engine dawn": onnxop + ["-o", "dawn.npy", "--engine", "dawn"],
            "numpy only": [
                sys.executable, "-c",
                "import numpy as np; a = np.load('a.npy'); np.save('numpy.npy', a.reshape(a.shape[0], -1))",
            ],
        }
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, command in runs.items():
                start = time.perf_counter()
                subprocess.run(command, cwd=folder, check=True)
                times[name].append(time.perf_counter() - start)
        outputs = [(folder / f).read_bytes() for f in ("wgpu.npy", "dawn.npy", "numpy.npy")]
        assert outputs[0] == outputs[1] == outputs[2], "the three outputs differ"
    print(f"flatten of a 4 KiB .npy, whole process, {args.backend}, {args.rounds} rounds: median (min-max)")
    for name, values in times.items():
        print(f"  {name:20s} {statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})")


if __name__ == "__main__":
    main()
