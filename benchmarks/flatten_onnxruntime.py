"""onnxruntime (CPU): load, run a one-node Flatten model, save.

    python benchmarks/flatten_onnxruntime.py IN.npy OUT.npy [AXIS]
"""

import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper


def main(src: str, dst: str, axis: int = 1) -> None:
    a = np.load(src)
    elem = helper.np_dtype_to_tensor_dtype(a.dtype)
    graph = helper.make_graph(
        [helper.make_node("Flatten", ["x"], ["y"], axis=axis)],
        "flatten",
        [helper.make_tensor_value_info("x", elem, list(a.shape))],
        [helper.make_tensor_value_info("y", elem, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": a})
    np.save(dst, y)


if __name__ == "__main__":
    assert TensorProto and onnx  # imported as a user would
    main(sys.argv[1], sys.argv[2], *(int(x) for x in sys.argv[3:4]))
