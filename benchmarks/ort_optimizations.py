"""How far onnxruntime's own graph optimizations move a model's outputs: the
outputs of ``onnxop run MODEL --others onnxruntime`` (its regions run with
optimizations off) against onnxruntime alone at each optimization level.

    python benchmarks/ort_optimizations.py MODEL INPUT.npy [MODEL INPUT.npy ...]

Prints per model and level: elements whose bits differ, of all, and the
largest absolute difference.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort


def main() -> None:
    pairs = list(zip(sys.argv[1::2], sys.argv[2::2]))
    with tempfile.TemporaryDirectory() as tmp:
        for model, x_path in pairs:
            m = onnx.load(model)
            inits = {t.name for t in m.graph.initializer}
            name = next(i.name for i in m.graph.input if i.name not in inits)
            done = subprocess.run([sys.executable, "-m", "onnxop_cli", "run", model, "--input", f"{name}={x_path}",
                                   "--others", "onnxruntime", "-o", f"{tmp}/ours.npz"], capture_output=True, text=True)
            if done.returncode:
                sys.exit(done.stderr)
            ours = np.load(f"{tmp}/ours.npz")
            x = np.load(x_path)
            for level in ("ORT_DISABLE_ALL", "ORT_ENABLE_BASIC", "ORT_ENABLE_ALL"):
                options = ort.SessionOptions()
                options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
                s = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
                for out, theirs in zip(s.get_outputs(), s.run(None, {name: x})):
                    a = ours[out.name]
                    differ = (a.view(np.uint8).reshape(a.size, -1) != theirs.view(np.uint8).reshape(a.size, -1)).any(1)
                    print(f"{model} {out.name} {level}: {int(differ.sum())} of {a.size} differ, "
                          f"max |diff| {float(np.abs(a.astype(np.float64) - theirs).max()):.3g}")


if __name__ == "__main__":
    main()
