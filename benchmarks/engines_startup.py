"""Start-up by engine: the whole-process flatten of a small .npy (4 KiB) with
onnxop on wgpu, onnxop on Dawn, and numpy alone, as fresh processes.

whole_process.py measures this (its Dawn column); this script runs it with
only those three tools and the 4 KiB size, so the command the README cites
still works:

    python benchmarks/engines_startup.py --rounds 15 --backend vulkan
"""

from __future__ import annotations

import argparse
import sys

from whole_process import DAWN, main as whole_process


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--backend", default="vulkan")
    args = parser.parse_args()
    return whole_process([
        "--sizes", "4K", "--rounds", str(args.rounds), "--backend", args.backend,
        "--many", "0", "--kernel-sizes", "", "--tools", f"onnxop,{DAWN},numpy only",
    ])


if __name__ == "__main__":
    sys.exit(main())
