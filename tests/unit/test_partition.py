"""core/partition.py's split: which values each region hands on."""

from __future__ import annotations

from onnx import TensorProto, helper

from onnxop_cli.core import partition


def _model():
    """Transpose -> Identity (onnxop) -> Relu -> Neg -> Sigmoid (onnxruntime) -> Transpose (onnxop)."""
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]), helper.make_node("Identity", ["t"], ["i"]),
             helper.make_node("Relu", ["i"], ["r"]),
             helper.make_node("Neg", ["r"], ["n"]), helper.make_node("Sigmoid", ["n"], ["s"]),
             helper.make_node("Transpose", ["s"], ["y"], perm=[1, 0])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_verify_keeps_every_value_of_onnxops_regions_and_only_what_is_read_of_the_others():
    """--verify compares every node onnxop ran, so its regions hand on every value they make; it also made
    the others' regions hand on all of theirs (--dump's need, not --verify's), which onnxruntime then kept
    to the region's end: PP-OCR's detector at 1x3x640x640 peaked at 900 MB under --verify, 344 MB now
    (341 MB without it)."""
    runtimes = [r.runtime for r in partition.split(_model(), "onnxruntime").regions]
    assert runtimes == ["onnxop", "onnxruntime", "onnxop"]
    plain = [r.outputs for r in partition.split(_model(), "onnxruntime").regions]
    assert plain == [["i"], ["s"], ["y"]]
    verify = [r.outputs for r in partition.split(_model(), "onnxruntime", keep_onnxop=True).regions]
    assert verify == [["t", "i"], ["s"], ["y"]]
    dump = [r.outputs for r in partition.split(_model(), "onnxruntime", keep_all=True).regions]
    assert dump == [["t", "i"], ["r", "n", "s"], ["y"]]
