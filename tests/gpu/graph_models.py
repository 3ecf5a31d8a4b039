"""Models built by hand for the graph tests (test_graph*.py, test_graph_tensor_ops.py): initializers,
a graph of nodes with fixed-shape inputs, the view chain several tests run, a node with hand-made
attributes; and bit-for-bit equality of two arrays."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto as TP
from onnx import helper, numpy_helper


def i64(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def make(nodes, inputs, outputs, inits=(), opset=21):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info(n, t, None) for n, t in outputs], initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def chain(dtype=TP.FLOAT, shape=(2, 3, 4, 5)):
    """Transpose -> Reshape (merging transposed axes: a step) -> Slice -> Unsqueeze (Constant axes),
    and the Reshape's result as a second output."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1, 3], name="tr"),
        helper.make_node("Reshape", ["t", "shape"], ["r"]),
        helper.make_node("Slice", ["r", "st", "en", "ax", "sp"], ["s"]),
        helper.make_node("Constant", [], ["ua"], value_ints=[0]),
        helper.make_node("Unsqueeze", ["s", "ua"], ["y"]),
    ]
    inits = [i64("shape", [shape[0], shape[1] * shape[2], shape[3]]), i64("st", [-1]), i64("en", [0]),
             i64("ax", [1]), i64("sp", [-2])]
    return make(nodes, [("x", dtype, list(shape))], [("y", dtype), ("r", dtype)], inits)


def same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and \
        np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def bad_attribute(**kw):
    node = helper.make_node("Flatten", ["x"], ["y"], name="f")
    node.attribute.extend(kw["attrs"])
    return make([node], [("x", TP.FLOAT, [2, 3])], [("y", TP.FLOAT)])


def attr(name, value, **kw):
    return helper.make_attribute(name, value, **kw)
