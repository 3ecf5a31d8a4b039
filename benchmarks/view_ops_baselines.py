"""The baselines of benchmarks/view_ops.py: load a .npy, apply one view
operator, save, with numpy alone or with onnxruntime CPU running a one-node
model of the same op.

    python benchmarks/view_ops_baselines.py numpy|onnxruntime OP IN.npy OUT.npy SPEC_JSON

OP is transpose, slice or tile; SPEC_JSON its attributes as view_ops.py
gives them ({"perm": [1, 0]}, {"starts": ..., "ends": ..., "axes": ..., "steps": ...},
{"repeats": ...}).
"""

import json
import sys

import numpy as np


def with_numpy(op: str, a: np.ndarray, spec: dict) -> np.ndarray:
    # ascontiguousarray: the saved result is materialised, as an op's output is.
    if op == "transpose":
        return np.ascontiguousarray(a.transpose(spec["perm"]))
    if op == "slice":
        index = [slice(None)] * a.ndim
        for start, end, axis, step in zip(spec["starts"], spec["ends"], spec["axes"], spec["steps"]):
            index[axis] = slice(start, end, step)
        return np.ascontiguousarray(a[tuple(index)])
    if op == "tile":
        return np.tile(a, spec["repeats"])
    raise SystemExit(f"unknown op {op}")


def with_onnxruntime(op: str, a: np.ndarray, spec: dict) -> np.ndarray:
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    elem = helper.np_dtype_to_tensor_dtype(a.dtype)
    inits = []
    if op == "transpose":
        node = helper.make_node("Transpose", ["x"], ["y"], perm=spec["perm"])
    else:
        names = ["starts", "ends", "axes", "steps"] if op == "slice" else ["repeats"]
        inits = [numpy_helper.from_array(np.array(spec[n], dtype=np.int64), n) for n in names]
        node = helper.make_node(op.capitalize(), ["x", *names], ["y"])
    graph = helper.make_graph(
        [node],
        op,
        [helper.make_tensor_value_info("x", elem, list(a.shape))],
        [helper.make_tensor_value_info("y", elem, None)],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": a})
    return y


def main(tool: str, op: str, src: str, dst: str, spec: str) -> None:
    apply = {"numpy": with_numpy, "onnxruntime": with_onnxruntime}[tool]
    np.save(dst, apply(op, np.load(src), json.loads(spec)))


if __name__ == "__main__":
    main(*sys.argv[1:6])
