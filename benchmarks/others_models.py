"""Wall time and peak RSS of ``onnxop run MODEL --others onnxruntime`` against
onnxruntime alone (CPU provider, graph optimizations off, as the regions
run) on the same model and input, each a fresh process, interleaved, the
median of ``--rounds`` rounds.

    python benchmarks/others_models.py MODEL INPUT.npy [MODEL INPUT.npy ...] --rounds 3

INPUT.npy feeds the model's first input; NAME=A.npy,NAME2=B.npy feeds inputs by name.

Prints one line per model and tool: median wall seconds, median peak RSS (MiB).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ALONE = """
import sys, numpy as np, onnx, onnxruntime as ort
o = ort.SessionOptions(); o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
s = ort.InferenceSession(sys.argv[1], o, providers=["CPUExecutionProvider"])
given = [p.split("=", 1) for p in sys.argv[2].split(",")] if "=" in sys.argv[2] else [(s.get_inputs()[0].name, sys.argv[2])]
out = s.run(None, {n: np.load(f) for n, f in given})
np.save(sys.argv[3], out[0])
"""


def inputs(x: str) -> list[str]:
    """run's arguments for INPUT.npy (the first input) or NAME=A.npy,NAME2=B.npy."""
    if "=" not in x:
        return [x]
    return [a for pair in x.split(",") for a in ("--input", pair)]


def measure(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one child process."""
    start = time.perf_counter()
    pid = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(pid.pid, 0)
    wall = time.perf_counter() - start
    if status:
        sys.exit(f"failed: {' '.join(cmd)}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pairs", nargs="+")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    pairs = list(zip(args.pairs[::2], args.pairs[1::2]))
    with tempfile.TemporaryDirectory() as tmp:
        tools = {
            "onnxop --others onnxruntime": lambda m, x: [sys.executable, "-m", "onnxop_cli", "run", m, *inputs(x),
                                                           "--others", "onnxruntime", "-o", f"{tmp}/a.npz"],
            "onnxruntime alone": lambda m, x: [sys.executable, "-c", ALONE, m, x, f"{tmp}/b.npy"],
        }
        for model, x in pairs:
            got: dict[str, list[tuple[float, float]]] = {t: [] for t in tools}
            for r in range(args.rounds):
                for t in (list(tools) if r % 2 == 0 else list(tools)[::-1]):
                    got[t].append(measure(tools[t](model, x)))
            for t, runs in got.items():
                print(f"{os.path.basename(model)}  {t}: {statistics.median(w for w, _ in runs):.2f} s, "
                      f"{statistics.median(m for _, m in runs):.0f} MiB peak RSS")


if __name__ == "__main__":
    main()
