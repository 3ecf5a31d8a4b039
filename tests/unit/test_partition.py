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


def _sequence_model(reader: str = "Concat"):
    """SplitToSequence -> SequenceAt (onnxruntime) -> ``reader`` of its tensor and a Transpose (onnxop) ->
    SequenceInsert of that into the sequence -> SequenceAt (onnxruntime): the sequence is read on both sides
    of the onnxop node."""
    nodes = [helper.make_node("SplitToSequence", ["x"], ["seq"], axis=0),
             helper.make_node("Transpose", ["y"], ["yt"], perm=[1, 0]),
             helper.make_node("SequenceAt", ["seq", "one"], ["a"]),
             helper.make_node(reader, ["a", "yt"], ["c"], axis=0),
             helper.make_node("SequenceInsert", ["seq", "c"], ["seq2"]),
             helper.make_node("SequenceAt", ["seq2", "last"], ["z"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3]),
                                       helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 1])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
                          [helper.make_tensor("one", TensorProto.INT64, [], [1]),
                           helper.make_tensor("last", TensorProto.INT64, [], [-1])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _placed(model):
    return [(r.runtime, [n.op_type for n in r.nodes]) for r in partition.split(model, "onnxruntime").regions]


def test_a_sequence_never_crosses_between_regions():
    """The Concat between the two readers of 'seq' cut the others' nodes in two, and the run stopped with
    exit 1 after the first region ('seq' is a list, not a tensor; onnxop passes tensors between regions),
    a model onnxruntime runs. The nodes between a sequence's maker and its reader go to the others;
    the Transpose, which no sequence waits for, stays onnxop's."""
    placed = _placed(_sequence_model())
    assert placed == [("onnxop", ["Transpose"]),
                      ("onnxruntime", ["SplitToSequence", "SequenceAt", "Concat", "SequenceInsert", "SequenceAt"])]


def test_a_node_onnxop_runs_that_reads_or_makes_a_sequence_is_the_others():
    """An Identity of a sequence was onnxop's (Identity is), so the sequence crossed to it and back."""
    nodes = [helper.make_node("SplitToSequence", ["x"], ["seq"], axis=0), helper.make_node("Identity", ["seq"], ["s2"]),
             helper.make_node("ConcatFromSequence", ["s2"], ["c"], axis=1)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])],
                          [helper.make_tensor_value_info("c", TensorProto.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    assert _placed(model) == [("onnxruntime", ["SplitToSequence", "Identity", "ConcatFromSequence"])]
    assert dict(partition.others_in(model))["Identity (sequence)"] == 1


def test_an_if_that_reads_a_sequence_goes_to_the_others_whole():
    """The host runs an If's branch as a model fed tensors: an If reading a sequence from outside runs on the
    others, with the nodes that make and read the sequence, and the Transpose before them stays onnxop's."""
    then = helper.make_graph([helper.make_node("SequenceAt", ["seq", "one"], ["o"])], "then", [],
                             [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)])
    other = helper.make_graph([helper.make_node("SequenceAt", ["seq", "zero"], ["o"])], "else", [],
                              [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
             helper.make_node("SplitToSequence", ["t"], ["seq"], axis=0),
             helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4]),
                                       helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [helper.make_tensor("one", TensorProto.INT64, [], [1]),
                           helper.make_tensor("zero", TensorProto.INT64, [], [0])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    assert _placed(model) == [("onnxop", ["Transpose"]), ("onnxruntime", ["SplitToSequence", "If"])]


def test_a_sequence_shape_inference_cannot_type_is_known_by_its_operators_schema():
    """After a node onnx has no schema for (com.microsoft's Gelu) shape inference types nothing, so the
    sequence was not known to be one and crossed around the Concat as before: SplitToSequence's output and
    SequenceInsert's are sequences by their schemas."""
    model = _sequence_model()
    model.graph.node.insert(0, helper.make_node("Gelu", ["x0"], ["x"], domain="com.microsoft"))
    model.graph.input[0].name = "x0"
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    assert _placed(model) == [("onnxop", ["Transpose"]), ("onnxruntime", [
        "Gelu", "SplitToSequence", "SequenceAt", "Concat", "SequenceInsert", "SequenceAt"])]


def test_an_optional_a_node_makes_stays_with_the_others_and_an_optional_graph_input_does_not():
    """An empty Optional is None in onnxruntime's hands: an Identity of it was onnxop's, and the run stopped
    (exit 1, "'o' is a NoneType, not a tensor"). A graph input declared optional is a tensor from its file:
    the Transpose reading it stays onnxop's (marking it optional made the check of crossings look up its
    producer, which a graph input has not: KeyError, an internal error)."""
    optional = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2, 3]))
    nodes = [helper.make_node("Optional", [], ["o"], type=helper.make_tensor_type_proto(TensorProto.FLOAT, [2, 3])),
             helper.make_node("Identity", ["o"], ["o2"]), helper.make_node("OptionalHasElement", ["o2"], ["has"]),
             helper.make_node("Transpose", ["x"], ["t"]), helper.make_node("Relu", ["t"], ["r"])]
    g = helper.make_graph(nodes, "g", [helper.make_value_info("x", optional)],
                          [helper.make_tensor_value_info("has", TensorProto.BOOL, []),
                           helper.make_tensor_value_info("r", TensorProto.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    assert _placed(model) == [("onnxop", ["Transpose"]),
                              ("onnxruntime", ["Optional", "Identity", "OptionalHasElement", "Relu"])]
    assert dict(partition.others_in(model))["Identity (optional)"] == 1


def test_an_unnamed_if_is_named_by_its_place_in_its_graph():
    """An If with no name was "If node ''", which names none: its index in its graph is given."""
    import pytest

    from onnxop_cli.errors import InputError

    def branch(to):
        return helper.make_graph([helper.make_node("Cast", ["x"], ["o"], to=to)], "b", [],
                                 [helper.make_tensor_value_info("o", to, None)])

    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("If", ["c"], ["y"], then_branch=branch(TensorProto.INT64),
                              else_branch=branch(TensorProto.FLOAT))]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
                                       helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    with pytest.raises(InputError, match=r"^If node 1: its output 0 is int64 from its then_branch"):
        partition.split(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]), "onnxruntime")


def test_a_region_s_typed_inputs_are_the_bytes_onnx_s_helper_makes():
    """core/others.typed_input builds a graph input from the protobuf class (onnx's helpers load ml_dtypes):
    the same bytes as helper.make_tensor_value_info for a scalar (a shape present and empty), an empty
    dimension and a ranked shape, of a few types."""
    import numpy as np

    from onnxop_cli.core.others import typed_input
    from onnxop_cli.core.tensor import Tensor

    for shape in [(), (0,), (3,), (2, 3, 4)]:
        for dtype in ["float32", "int64", "bool", "uint8"]:
            t = Tensor.from_numpy(np.zeros(shape, dtype=dtype), "x")
            want = helper.make_tensor_value_info("x", t.dtype.onnx_type, list(shape))
            assert typed_input("x", t).SerializeToString() == want.SerializeToString(), (shape, dtype)
