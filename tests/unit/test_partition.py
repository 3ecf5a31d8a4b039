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


def test_onnxops_ready_nodes_run_first_so_the_others_run_is_not_cut_where_it_waits_for_them():
    """Relu first in the file, then a Reshape of two Constants (onnxop's, reading nothing), then an Add of
    both: the regions were Relu | Reshape | Add, the Relu's value crossing between two onnxruntime regions
    (a float16 one rounded there). Now Reshape | Relu, Add."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Constant", [], ["w"], value=helper.make_tensor("w", TensorProto.FLOAT, [2, 3], [1] * 6)),
             helper.make_node("Constant", [], ["s"], value=helper.make_tensor("s", TensorProto.INT64, [1], [6])),
             helper.make_node("Reshape", ["w", "s"], ["c"]), helper.make_node("Add", ["r", "c"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6])])
    regions = partition.split(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "onnxruntime").regions
    assert [(r.runtime, [n.op_type for n in r.nodes]) for r in regions] == [
        ("onnxop", ["Constant", "Constant", "Reshape"]), ("onnxruntime", ["Relu", "Add"])]
