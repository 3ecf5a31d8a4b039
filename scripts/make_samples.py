"""Write the sample files README's examples use (run from the repository root):

    python scripts/make_samples.py

samples/w.npz   two arrays, "weight" (2, 3, 2) float32 and "bias" (3,) int64
samples/h.pb    a bfloat16 TensorProto named "h", shape (2, 3) (numpy cannot hold bfloat16)
samples/s.npy   a (2, 2) text array (an ONNX string tensor)
samples/node/   three ONNX backend node tests written by onnx's own machinery:
                test_flatten_axis1 and test_unsqueeze_two_axes (which onnxop
                runs) and test_relu (which it skips)

Values are small and fixed so that README's printed examples are stable.
(a.npy and x.npy predate this script: np.arange(-60, 60).reshape(2, 3, 4, 5) / 2
and np.arange(60).reshape(3, 4, 5), float32.)
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
from onnx import numpy_helper

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"


def main() -> None:
    weight = (np.arange(12, dtype=np.float32).reshape(2, 3, 2) - 6) / 4
    bias = np.array([1, -2, 3], dtype=np.int64)
    np.savez(SAMPLES / "w.npz", weight=weight, bias=bias)

    h = np.array([[0.5, -1.25, 3.0], [1e-3, -0.0, 256.0]], dtype=ml_dtypes.bfloat16)
    (SAMPLES / "h.pb").write_bytes(numpy_helper.from_array(h, "h").SerializeToString())

    np.save(SAMPLES / "s.npy", np.array([["onnx", "op"], ["ünï", ""]]))

    spec = importlib.util.spec_from_file_location("node_tests", REPO / "scripts" / "node_tests.py")
    node_tests = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(node_tests)
    out = SAMPLES / "node"
    shutil.rmtree(out, ignore_errors=True)
    wanted = {"test_flatten_axis1", "test_unsqueeze_two_axes", "test_relu"}
    for case in node_tests.node_testcases(("flatten", "unsqueeze", "relu")):
        if case.name in wanted:
            print(node_tests.write_case(case, out))


if __name__ == "__main__":
    main()
