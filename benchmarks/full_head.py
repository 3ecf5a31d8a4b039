"""How fast `onnxop show big.npy --full | head` answers, and in how much memory.

For each size, a float32 .npy of that many bytes is written to --tmp, then

    onnxop show big.npy --full | head

runs as a fresh process whose stdout is read as ``head`` reads it: the first
10 lines, then the pipe is closed (onnxop stops on the broken pipe). Reported:
the time to the first value line and to the exit, and the process's peak RSS
(ru_maxrss from os.wait4). Two kinds of data: ``random`` (normal floats:
numpy's widths are known after the first slice) and ``steps`` (k/8: every
value must be scanned to know the widths, the worst case). Each figure is the
median of --rounds runs.

    python benchmarks/full_head.py                    # 16M and 256M
    python benchmarks/full_head.py --sizes 16M --rounds 3

Before streaming the same command took 52 s and 2.1 GB at 16 MiB,
and 8 min 44 s at 256 MiB.
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


def size_of(text: str) -> int:
    return int(text[:-1]) * UNITS[text[-1].upper()] if text[-1].upper() in UNITS else int(text)


MAKE = """
import sys
import numpy as np
path, n, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if kind == "random":
    values = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
else:
    values = (np.arange(n, dtype=np.float64) % 100_000 / 8).astype(np.float32)
np.save(path, values.reshape(-1, 1024) if n % 1024 == 0 else values)
"""


def make(path: Path, nbytes: int, kind: str) -> None:
    """The file, written by another process: a child forked from this one
    would start with its RSS (ru_maxrss counts from the fork)."""
    subprocess.run([sys.executable, "-c", MAKE, str(path), str(nbytes // 4), kind], check=True)


def run_once(path: Path, lines: int = 10) -> tuple[float, float, float]:
    """(seconds to the first value line, seconds to exit, peak RSS in MiB)."""
    cmd = [sys.executable, "-m", "onnxop_cli", "show", str(path), "--full"]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    first = None
    for i in range(lines):
        line = proc.stdout.readline()
        if not line:
            break
        if first is None and i >= 2:  # after "big.npy:" and the tensor's header line
            first = time.perf_counter() - start
    proc.stdout.close()  # as head does: onnxop meets a broken pipe
    _, status, usage = os.wait4(proc.pid, 0)
    end = time.perf_counter() - start
    return first if first is not None else end, end, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="16M,256M")
    parser.add_argument("--kinds", default="random,steps")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tmp", default=tempfile.gettempdir())
    args = parser.parse_args()

    print(f"Command: `python benchmarks/full_head.py --sizes {args.sizes} --kinds {args.kinds} --rounds {args.rounds}`")
    print(f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}; median of {args.rounds} runs\n")
    print("| `onnxop show big.npy --full \\| head` | data | first line | exit | peak RSS |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        for size in args.sizes.split(","):
            for kind in args.kinds.split(","):
                path = Path(tmp) / "big.npy"
                make(path, size_of(size), kind)
                runs = [run_once(path) for _ in range(args.rounds)]
                first, end, rss = (statistics.median(r[i] for r in runs) for i in range(3))
                print(f"| {size}iB float32 | {kind} | {first:.2f} s | {end:.2f} s | {rss:.0f} MiB |", flush=True)
                path.unlink()


if __name__ == "__main__":
    main()
