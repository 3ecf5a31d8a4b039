"""``onnxop run MODEL --others``: which nodes go to the other runtime and what a split run refuses -- an
operator onnxruntime has no kernel for named with the reference, a Max of four inputs, a float16 value
onnxruntime hands on within its run kept there, a node whose output nothing reads left out, the names a
whole run refuses refused alike, external data inside a node's subgraph read from the model's folder.

Real files, the module's commands through onnxop's entry (tests/commands.py, fixture ``ran``).
The mixed model's runs: test_run_others.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from commands import Prepared

F, I64 = TensorProto.FLOAT, TensorProto.INT64

prepared = Prepared()  # each test's folder and commands


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict:
    """Every prepared test's commands, in one process: name -> (what it made, its results)."""
    return prepared.run(tmp_path_factory)


@prepared
def no_kernel(tmp_path):
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]), helper.make_node("Mul", ["t", "t"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 3])],
                              [helper.make_tensor_value_info("y", F, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)]), tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    return [["run", "m.onnx", "x.npy", "--others", "onnxruntime", "-o", "y.npy"],
            ["run", "m.onnx", "x.npy", "--others", "reference", "-o", "z.npy"]]


def test_an_operator_onnxruntime_has_no_kernel_for_names_the_reference(ran):
    """Opset-6 Mul (PyTorch's old exports): onnxruntime has no kernel for it."""
    tmp_path, (r, with_reference) = ran["no_kernel"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert r.returncode != 0 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert "NOT_IMPLEMENTED" in r.stderr and "--others reference runs the others on onnx.reference" in r.stderr
    assert not (tmp_path / "y.npy").exists()
    r = with_reference
    assert r.returncode == 0, r.stderr
    assert np.load(tmp_path / "z.npy").tobytes() == (x.T * x.T).tobytes()


@prepared
def max_of_four(tmp_path):
    nodes = [helper.make_node("Max", ["a", "b", "c", "d"], ["m"]), helper.make_node("Transpose", ["m"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.INT64, [2, 3]) for n in "abcd"],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "m.onnx")
    rng = np.random.default_rng(5)
    values = {n: rng.integers(-(2 ** 62), 2 ** 62, (2, 3)) for n in "abcd"}
    for n, v in values.items():
        np.save(tmp_path / f"{n}.npy", v)
    return (tmp_path, values), [["run", "m.onnx", *(f"{n}.npy" for n in "abcd"), "--others", "onnxruntime",
                                 "-o", "y.npy", "--json"]]


def test_a_max_of_four_inputs_goes_to_the_others(ran):
    """The elementwise kernel has three input bindings: Max of four integer inputs is onnxruntime's under --others."""
    (tmp_path, values), [r] = ran["max_of_four"]
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ran"] == {"onnxruntime": {"Max": 1}, "onnxop": {"Transpose": 1}}
    assert np.load(tmp_path / "y.npy").tobytes() == np.max(np.stack(list(values.values())), axis=0).T.tobytes()


def float16_model(rng) -> onnx.ModelProto:
    """y = Sigmoid(x) * Reshape(w): the others' Sigmoid first in the file, onnxop's Reshape of two Constants after."""
    w = numpy_helper.from_array(rng.standard_normal((10, 100)).astype(np.float16))
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Constant", [], ["w"], value=w),
             helper.make_node("Constant", [], ["shape"], value=numpy_helper.from_array(np.array([1000], np.int64))),
             helper.make_node("Reshape", ["w", "shape"], ["c"]), helper.make_node("Mul", ["s", "c"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1000])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1000])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@prepared
def float16_cut(tmp_path):
    rng = np.random.default_rng(7)
    model = float16_model(rng)
    onnx.save(model, tmp_path / "m.onnx")
    x = (rng.standard_normal(1000) * 3).astype(np.float16)
    np.save(tmp_path / "x.npy", x)
    return (tmp_path, model, x), [["run", "m.onnx", "x.npy", "--others", "onnxruntime", "--verify", "-o", "y.npy",
                                   "--json"]]


def test_a_float16_value_the_others_hand_on_is_not_cut_where_onnxops_nodes_read_nothing_of_theirs(ran):
    """onnxruntime's CPU provider has no float16 Sigmoid or Mul: it computes them in float32 and, in its own
    run, hands Sigmoid's float32 value to Mul. The regions were Sigmoid | Reshape | Mul (the Sigmoid is first
    in the file), so the value crossed as float16, rounded: 231 of 1,000 elements differed from onnxruntime's
    run (PP-OCR's classifier converted to float16 differed in its last bit). onnxop's ready nodes run first."""
    (tmp_path, model, x), [r] = ran["float16_cut"]
    assert r.returncode == 0, r.stderr
    assert [g["runtime"] for g in json.loads(r.stdout)["regions"]] == ["onnxop", "onnxruntime"]
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]
    assert np.load(tmp_path / "y.npy").tobytes() == want.tobytes()


@prepared
def unread_output(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["unread"]), helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 3])],
                              [helper.make_tensor_value_info("y", F, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    np.save(tmp_path / "x.npy", x)
    return (tmp_path, x), [["run", "m.onnx", "x.npy", "--others", others, "-o", f"{others}.npy", "--json"]
                           for others in ("onnxruntime", "reference")]


def test_a_node_whose_output_nothing_reads_is_left_out_on_either_runtime(ran):
    """A Relu whose output no node and no graph output reads: onnxruntime
    takes no model without outputs, and the run once stopped on it (exit 1)."""
    (tmp_path, x), done = ran["unread_output"]
    assert len(done) == 2
    for others, r in zip(("onnxruntime", "reference"), done):
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["ran"] == {"onnxop": {"Transpose": 1}}, r.stdout
        assert np.load(tmp_path / f"{others}.npy").tobytes() == x.T.tobytes()


def _names_model(kind: str) -> onnx.ModelProto:
    """A Relu (the others') and a Transpose (onnxop's) whose names break one rule of the graph's."""
    x = helper.make_tensor_value_info("x", F, [2, 3])
    inputs, outputs, relu_in, relu_out, extra = [x], ["t", "r"], "x", "r", []
    if kind == "undefined":
        relu_in = "nope"
    elif kind == "twice_made":
        relu_out = "t"
        outputs = ["t"]
    elif kind == "input_made":
        relu_out = "x"
        outputs = ["t"]
    elif kind == "twice_listed":
        outputs = ["t", "r", "r"]
    elif kind == "never_made":
        outputs = ["t", "q"]
    elif kind == "two_inputs":
        inputs = [x, x]
    elif kind == "subgraph_undefined":  # an If's branch reads a value nothing defines
        branch = helper.make_graph([helper.make_node("Identity", ["ghost"], ["g"])], "b", [],
                                   [helper.make_tensor_value_info("g", F, None)])
        extra = [helper.make_node("If", ["c"], ["z"], then_branch=branch, else_branch=branch)]
        inputs = [x, helper.make_tensor_value_info("c", TensorProto.BOOL, [])]
    elif kind == "sequence_output":  # (the others made it, then it was 'a list, not a tensor' between regions: exit 1)
        extra = [helper.make_node("SplitToSequence", ["x"], ["s"], axis=0)]
    elif kind == "sequence_input":  # (onnx.reference's SequenceAt took a tensor for one: its first row, exit 0)
        extra = [helper.make_node("SequenceAt", ["s", "i"], ["e"])]
        inputs = [x, helper.make_tensor_sequence_value_info("s", F, None), helper.make_tensor_value_info("i", I64, [])]
        outputs = ["t", "r", "e"]
    nodes = [helper.make_node("Relu", [relu_in], [relu_out]), helper.make_node("Transpose", ["x"], ["t"]), *extra]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info(n, F, None) for n in outputs]
                              + ([helper.make_tensor_sequence_value_info("s", F, None)] if kind == "sequence_output" else []))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


# the refusal a run of the whole model on the graph executor gives (ops/model.py), which the split run gave
# otherwise or not at all (a sequence as a graph input or output: see the kinds above): 'value 'nope' was released before its last reader' (exit 1), 'the graph has no outputs'
# for an output never made, 'the model has 2 input(s) (x, x)', a graph output listed twice written once
NAME_RULES = {
    "undefined": "m.onnx: node 0 ('Relu') reads 'nope', which no input, initializer or node provides",
    "twice_made": "m.onnx: node 1 ('Transpose') produces 't', which is already produced by node 0 ('Relu')",
    "input_made": "m.onnx: node 0 ('Relu') produces 'x', which is already a graph input",
    "twice_listed": "m.onnx: graph output 'r' is listed twice",
    "never_made": "m.onnx: graph output 'q' is never produced",
    "two_inputs": "m.onnx: two graph inputs are named 'x'",
    "subgraph_undefined": "m.onnx: node 2 ('If') reads 'ghost', which no input, initializer or node provides",
    "sequence_output": "m.onnx: graph output 's' is a sequence value; onnxop writes tensors",
    "sequence_input": "m.onnx: graph input 's' is a sequence value; onnxop reads tensors",
}


@prepared
def name_rules(tmp_path):
    commands = []
    np.save(tmp_path / "x.npy", np.ones((2, 3), np.float32))
    np.save(tmp_path / "c.npy", np.array(True))
    np.save(tmp_path / "i.npy", np.array(0, np.int64))
    for kind in NAME_RULES:
        folder = tmp_path / kind
        (folder / "o").mkdir(parents=True)
        onnx.save(_names_model(kind), folder / "m.onnx")
        inputs = {"subgraph_undefined": ["../x.npy", "../c.npy"], "sequence_input": ["../x.npy", "../x.npy", "../i.npy"]
                  }.get(kind, ["../x.npy"])
        commands += [(folder, ["run", "m.onnx", *inputs, "--others", others, "-o", "o/"])
                     for others in ("onnxruntime", "reference")]
    return tmp_path, commands


def test_a_split_run_refuses_the_names_a_whole_run_refuses(ran):
    tmp_path, done = ran["name_rules"]
    assert len(done) == 2 * len(NAME_RULES)
    for (kind, message), r in zip([kv for kv in NAME_RULES.items() for _ in range(2)], done):
        assert r.returncode == 2 and r.stderr == f"onnxop: error: {message}\n", (kind, r.stderr)
        assert not any((tmp_path / kind / "o").iterdir()), kind


def _external_model(folder: Path) -> onnx.ModelProto:
    """A Loop whose body Concats an initializer of its own and a Constant (before a Relu: the others'), both
    held in external data (w.bin beside the model)."""
    from onnx.external_data_helper import convert_model_to_external_data

    def vi(name, elem=F):
        return helper.make_tensor_value_info(name, elem, None)

    body_w = numpy_helper.from_array(np.arange(3000, dtype=np.float32).reshape(1000, 3), "bw")
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Concat", ["v_in", "bw"], ["v_out"], axis=0)], "body",
                             [helper.make_tensor_value_info("i", I64, []),
                              helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []), vi("v_in")],
                             [vi("cond_out", TensorProto.BOOL), vi("v_out")], initializer=[body_w])
    value = numpy_helper.from_array(np.arange(-1500, 1500, dtype=np.float32).reshape(1000, 3), "cv")
    nodes = [helper.make_node("Loop", ["n", "go", "x"], ["v"], body=body),
             helper.make_node("Constant", [], ["k"], value=value), helper.make_node("Relu", ["k"], ["r"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 3])], [vi("v"), vi("r")],
                              initializer=[numpy_helper.from_array(np.array(2, np.int64), "n"),
                                           numpy_helper.from_array(np.array(True), "go")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    convert_model_to_external_data(model, all_tensors_to_one_file=True, location="w.bin", size_threshold=1024,
                                    convert_attribute=True)
    onnx.save(model, folder / "m.onnx")
    return onnx.load(folder / "m.onnx")


@prepared
def external_in_subgraphs(tmp_path):
    (tmp_path / "model").mkdir()
    _external_model(tmp_path / "model")
    np.save(tmp_path / "x.npy", np.ones((2, 3), np.float32))
    np.zeros(6000, np.float32).tofile(tmp_path / "w.bin")  # a w.bin in the working folder, not the model's
    return tmp_path, [["run", "model/m.onnx", "x.npy", "--others", others, "-o", f"{others}/"]
                      for others in ("onnxruntime", "reference")]


def test_external_data_inside_a_node_is_read_from_the_models_folder(ran):
    """A Loop's body's initializer and a Constant's value in external data, run from another folder that
    holds a w.bin of zeros: onnxruntime (handed the region as bytes) read that one (zeros in the output,
    exit 0); onnx.reference refused ('An instance of LargeContainer should be created'). Both now get the
    tensors read from the model's folder."""
    tmp_path, done = ran["external_in_subgraphs"]
    x = np.ones((2, 3), np.float32)
    body_w = np.arange(3000, dtype=np.float32).reshape(1000, 3)
    want_v = np.concatenate([x, body_w, body_w])
    want_r = np.maximum(np.arange(-1500, 1500, dtype=np.float32).reshape(1000, 3), 0)
    for others, r in zip(("onnxruntime", "reference"), done):
        assert r.returncode == 0, (others, r.stderr)
        assert np.load(tmp_path / others / "v.npy").tobytes() == want_v.tobytes(), others
        assert np.load(tmp_path / others / "r.npy").tobytes() == want_r.tobytes(), others


@prepared
def sequence_across(tmp_path):
    """SplitToSequence, SequenceAt (onnxruntime), a Concat of that and a Transpose (onnxop's operators), a
    SequenceInsert of the Concat into the sequence and a SequenceAt of it: the sequence is read on both sides
    of the Concat."""
    nodes = [helper.make_node("SplitToSequence", ["x"], ["seq"], axis=0),
             helper.make_node("Transpose", ["y"], ["yt"], perm=[1, 0]),
             helper.make_node("SequenceAt", ["seq", "one"], ["a"]), helper.make_node("Concat", ["a", "yt"], ["c"], axis=0),
             helper.make_node("SequenceInsert", ["seq", "c"], ["seq2"]), helper.make_node("SequenceAt", ["seq2", "last"], ["z"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [4, 3]),
                                           helper.make_tensor_value_info("y", F, [3, 1])],
                              [helper.make_tensor_value_info("z", F, None)],
                              [numpy_helper.from_array(np.array(1, np.int64), "one"),
                               numpy_helper.from_array(np.array(-1, np.int64), "last")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.arange(12, dtype=np.float32).reshape(4, 3))
    np.save(tmp_path / "y.npy", np.arange(3, dtype=np.float32).reshape(3, 1) - 7)
    return [["run", "m.onnx", "x.npy", "y.npy", "--others", others, "--verify", "--json", "-o", f"{others}.npy"]
            for others in ("onnxruntime", "reference")]


def test_a_sequence_the_others_make_is_not_handed_between_regions(ran):
    """It crossed from one onnxruntime region to a later one around the Concat, and the run stopped (exit 1:
    "'seq' is a list, not a tensor; onnxop passes tensors between regions"), a model onnxruntime runs. The
    Concat now runs with the sequence's nodes; the Transpose, which no sequence waits for, on the GPU."""
    tmp_path, done = ran["sequence_across"]
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    want = session.run(None, {"x": np.load(tmp_path / "x.npy"), "y": np.load(tmp_path / "y.npy")})[0]
    for others, r in zip(("onnxruntime", "reference"), done):
        assert r.returncode == 0, r.stderr
        assert np.load(tmp_path / f"{others}.npy").tobytes() == want.tobytes()
        report = json.loads(r.stdout)
        assert report["ran"] == {"onnxop": {"Transpose": 1}, others: {
            "SplitToSequence": 1, "SequenceAt": 2, "Concat": 1, "SequenceInsert": 1}}
        assert report["verified"] == [{"op": "Transpose", "runtime": "onnxruntime", "nodes": 1}]


@prepared
def error_names_the_models_node(tmp_path):
    """A Relu (onnxruntime) first, then onnxop's Transpose and a Reshape that fails, with a Constant before
    them in the file."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Constant", [], ["s"], value=helper.make_tensor("s", I64, [1], [7]), name="shape"),
             helper.make_node("Transpose", ["r"], ["t"], name="swap"),
             helper.make_node("Relu", ["t"], ["m"], name="relu2"),
             helper.make_node("Reshape", ["m", "s"], ["y"], name="bad")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [3, 2])],
                              [helper.make_tensor_value_info("y", F, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.ones((3, 2), np.float32))
    return [["run", "m.onnx", "x.npy", "--others", others, "-o", "y.npy"] for others in ("onnxruntime", "reference")]


def test_an_error_in_onnxops_region_names_the_node_by_its_place_in_the_model(ran):
    """The Reshape is the model's node 4; the message said node 1, its place in the region's own graph
    (the Constant copied in, then it), which points a reader at the Constant."""
    _, done = ran["error_names_the_models_node"]
    for r in done:
        assert r.returncode == 2 and r.stderr == (
            "onnxop: error: m.onnx: node 4 'bad' (Reshape-13): Reshape: shape [7] (7 elements) does not fit an input of "
            "shape (2, 3) (6 elements)\n"), r.stderr


@prepared
def unread_onnxop_region(tmp_path):
    """A Transpose whose output nothing reads, ready first (a region of onnxop's of its own), and a Relu."""
    nodes = [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Transpose", ["x"], ["unread"], perm=[1, 0])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 3])],
                              [helper.make_tensor_value_info("y", F, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.arange(6, dtype=np.float32).reshape(2, 3) - 2)
    return [["run", "m.onnx", "x.npy", "--others", others, "-o", f"{others}.npy", "--json"]
            for others in ("onnxruntime", "reference")]


def test_a_region_of_onnxops_whose_values_nothing_reads_is_left_out_too(ran):
    """An exporter's leftover node onnxop runs (a Shape or Transpose nothing reads) made a region of onnxop's
    with no outputs, which the graph executor refuses: the run stopped, exit 2, 'the graph has no outputs', on
    a model onnxruntime runs. It is left out and not counted, as the others' such region is."""
    tmp_path, done = ran["unread_onnxop_region"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    for others, r in zip(("onnxruntime", "reference"), done):
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["ran"] == {others: {"Relu": 1}}, r.stdout
        assert np.load(tmp_path / f"{others}.npy").tobytes() == np.maximum(x, 0).tobytes()
