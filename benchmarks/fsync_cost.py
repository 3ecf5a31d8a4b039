"""What fsync before the rename (and of the folder after it) costs an output.

Two measurements, each interleaved A B A B so the shared machine's load
falls on both alike, with the ratio per pair:

1. in-process: io.atomic.atomic_output writing N bytes, with fsync (B, the
   code as it is) and with the two syncs replaced by no-ops (A: the writer
   as it was before, minus nothing else);
2. whole process (``--main DIR``): ``onnxop identity x.npy -o y.npy`` from
   an old checkout's src (A) and from this one (B), replacing an existing y.npy.

    python benchmarks/fsync_cost.py --sizes 4K,256M --pairs 5 [--main /work/main]

Prints a Markdown table, the CPU and the load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size(text: str) -> int:
    return int(text[:-1]) * UNITS[text[-1]] if text[-1] in UNITS else int(text)


def in_process(folder: Path, nbytes: int, synced: bool) -> float:
    from onnxop_cli.io import atomic

    saved = atomic._sync, atomic._sync_folder
    if not synced:
        atomic._sync = atomic._sync_folder = lambda fd: None
    data = os.urandom(min(nbytes, 1 << 20))
    try:
        t0 = time.perf_counter()
        with atomic.atomic_output(folder / "y.bin") as f:
            left = nbytes
            while left:
                n = min(left, len(data))
                f.write(data[:n])
                left -= n
        return time.perf_counter() - t0
    finally:
        atomic._sync, atomic._sync_folder = saved


def whole(folder: Path, src: str) -> float:
    env = {**os.environ, "PYTHONPATH": src}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "onnxop_cli", "identity", "x.npy", "-o", "y.npy"],
                   cwd=folder, env=env, check=True, capture_output=True)
    return time.perf_counter() - t0


def pairs(run_a, run_b, n: int) -> tuple[list[float], list[float]]:
    a, b = [], []
    for _ in range(n):
        a.append(run_a())
        b.append(run_b())
    return a, b


def row(label: str, a: list[float], b: list[float]) -> str:
    ratios = [y / x for x, y in zip(a, b)]
    return (f"| {label} | {statistics.median(a) * 1e3:.1f} | {statistics.median(b) * 1e3:.1f} | "
            f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="4K,256M")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--main", help="an old checkout whose src/ is run as A in the whole-process test")
    parser.add_argument("--dir", help="where to write (default: $TMPDIR)")
    args = parser.parse_args()
    import numpy as np

    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    print(f"CPU: {cpu}; load before: {open('/proc/loadavg').read().split()[:3]}")
    print("| case | A: no fsync, ms (median) | B: fsync, ms (median) | B/A per pair (median, range) |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="onnxop-fsync-", dir=args.dir) as tmp:
        folder = Path(tmp)
        for text in args.sizes.split(","):
            n = size(text)
            a, b = pairs(lambda: in_process(folder, n, False), lambda: in_process(folder, n, True), args.pairs)
            print(row(f"atomic_output, {text}", a, b))
            if args.main:
                np.save(folder / "x.npy", np.frombuffer(os.urandom(n), dtype=np.uint8))
                here = str(Path(__file__).resolve().parents[1] / "src")
                old = str(Path(args.main) / "src")
                a, b = pairs(lambda: whole(folder, old), lambda: whole(folder, here), max(2, args.pairs // 2))
                print(row(f"onnxop identity -o y.npy (whole process, old src vs new), {text}", a, b))
    print(f"load after: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
