"""``onnxop run MODEL --others ...`` with If nodes: the condition is read on
the host and the branch it picks is split and run as a model of its own, so
the data movement inside a branch runs on the GPU and is verified there.

Real commands on real files; expected values from onnxruntime's run of the
whole model (graph optimizations off) and from onnx.reference. What the
commands write, print and exit with is under test, not the process: the
module's commands run in one process (tests/commands.py, fixture ``ran``).
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from commands import Prepared
from conftest import seeded_rng

I64, F = TensorProto.INT64, TensorProto.FLOAT


prepared = Prepared()  # each test's folder and commands


@pytest.fixture(scope="module")
def ran(tmp_path_factory, request) -> dict:
    """Every prepared test's commands, in one process: name -> (what it made, its results); the
    inputs drawn from the module's seed (replayable: conftest's failure report)."""
    return prepared.run(tmp_path_factory, seeded_rng(request))


def out(name: str, elem: int = F):
    return helper.make_tensor_value_info(name, elem, None)


def branchy_model() -> onnx.ModelProto:
    """cond = Size(x) > 4 (a Constant's 4). then: Transpose, Concat with an
    outer Relu, an inner If whose else reads an outer value.
    else: Slice, Neg (float: onnxruntime's)."""
    inner_then = helper.make_graph([helper.make_node("Flatten", ["cat"], ["flat"], axis=0)], "inner_then", [],
                                   [out("flat")])
    inner_else = helper.make_graph([helper.make_node("Identity", ["r"], ["kept"])], "inner_else", [], [out("kept")])
    then = helper.make_graph([
        helper.make_node("Transpose", ["x"], ["tx"], perm=[1, 0]),
        helper.make_node("Concat", ["tx", "r2"], ["cat"], axis=0),
        helper.make_node("If", ["c2"], ["picked"], then_branch=inner_then, else_branch=inner_else),
    ], "then", [], [out("cat"), out("picked")])
    other = helper.make_graph([
        helper.make_node("Slice", ["x", "starts", "ends"], ["sl"]),
        helper.make_node("Neg", ["sl"], ["neg"]),
    ], "else", [], [out("neg"), out("sl")])
    nodes = [
        helper.make_node("Constant", [], ["four"], value=numpy_helper.from_array(np.array(4, np.int64), "four")),
        helper.make_node("Size", ["x"], ["size"]),
        helper.make_node("Greater", ["size", "four"], ["c"]),
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Transpose", ["r"], ["r2"], perm=[1, 0]),
        helper.make_node("If", ["c"], ["y", "z"], name="pick", then_branch=then, else_branch=other),
    ]
    inits = [numpy_helper.from_array(np.array([0], np.int64), "starts"),
             numpy_helper.from_array(np.array([1], np.int64), "ends")]
    graph = helper.make_graph(nodes, "branchy", [helper.make_tensor_value_info("x", F, [None, None]),
                                                 helper.make_tensor_value_info("c2", TensorProto.BOOL, [])],
                              [out("y"), out("z")], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def theirs(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


PICKS = {
    "then-then": ((2, 3), True, {"onnxop": {"Concat": 1, "Constant": 1, "Flatten": 1, "Greater": 1, "Size": 1,
                                            "Transpose": 2},
                                 "host": {"If": 2}, "onnxruntime": {"Relu": 1}}),
    "then-else": ((2, 3), False, {"onnxop": {"Concat": 1, "Constant": 1, "Greater": 1, "Identity": 1, "Size": 1,
                                             "Transpose": 2},
                                  "host": {"If": 2}, "onnxruntime": {"Relu": 1}}),
    "else": ((1, 3), True, {"onnxop": {"Constant": 1, "Greater": 1, "Size": 1, "Slice": 1, "Transpose": 1},
                            "host": {"If": 1}, "onnxruntime": {"Neg": 1, "Relu": 1}}),
}


@prepared
def picks(tmp_path, rng):
    model = branchy_model()
    commands, all_feeds = [], {}
    for pick, (shape, c2, _) in PICKS.items():
        folder = tmp_path / pick
        folder.mkdir()
        onnx.save(model, folder / "m.onnx")
        x = rng.standard_normal(shape).astype(np.float32)
        x.reshape(-1)[0] = -0.0
        all_feeds[pick] = feeds = {"x": x, "c2": np.array(c2)}
        for n, v in feeds.items():
            np.save(folder / f"{n}.npy", v)
        commands.append((folder, ["run", "m.onnx", "x.npy", "c2.npy", "--others", "onnxruntime", "--verify", "-o",
                                  "o/", "--dump", "d", "--json"]))
    return (tmp_path, all_feeds), commands


def test_the_picked_branch_runs_on_the_gpu_and_equals_onnxruntime(ran):
    """Each pick of the two Ifs (a folder each)."""
    (tmp_path, all_feeds), done = ran["picks"]
    model = branchy_model()
    assert len(done) == len(PICKS)
    for (pick, (shape, _, counts)), r in zip(PICKS.items(), done):
        assert r.returncode == 0, (pick, r.stderr)
        doc = json.loads(r.stdout)
        assert doc["ran"] == counts, pick
        assert sum(v["nodes"] for v in doc["verified"]) == sum(counts["onnxop"].values()), pick
        for name, want in zip(["y", "z"], theirs(model, all_feeds[pick])):
            got = np.load(tmp_path / pick / "o" / f"{name}.npy")
            assert got.shape == want.shape and got.tobytes() == want.tobytes(), (pick, name)
        branch_values = {"tx", "cat", "picked"} if shape[0] > 1 else {"sl", "neg"}
        assert branch_values <= set(doc["dumped"]), pick


@prepared
def with_reference(tmp_path, rng):
    onnx.save(branchy_model(), tmp_path / "m.onnx")
    feeds = {"x": rng.standard_normal((3, 2)).astype(np.float32), "c2": np.array(True)}
    for n, v in feeds.items():
        np.save(tmp_path / f"{n}.npy", v)
    return (tmp_path, feeds), [["run", "m.onnx", "x.npy", "c2.npy", "--others", "reference", "-o", "o.npz"]]


def test_others_reference_equals_onnx_reference(ran):
    from onnx.reference import ReferenceEvaluator

    (tmp_path, feeds), [r] = ran["with_reference"]
    model = branchy_model()
    assert r.returncode == 0, r.stderr
    with np.load(tmp_path / "o.npz") as z:
        for name, want in zip(["y", "z"], ReferenceEvaluator(model).run(None, feeds)):
            assert z[name].tobytes() == want.tobytes(), name


def _if_model(cond_shape: list[int], depth: int = 1) -> onnx.ModelProto:
    def leaf(k: int):
        return helper.make_graph([helper.make_node("Identity", ["x"], [f"l{k}"])], f"leaf{k}", [], [out(f"l{k}")])

    body = leaf(0)  # each level's else_branch is a leaf, its then_branch the level below
    for k in range(1, depth):
        body = helper.make_graph([helper.make_node("If", ["c"], [f"y{k}"], then_branch=body,
                                                   else_branch=leaf(k))], f"level{k}", [], [out(f"y{k}")])
    node = helper.make_node("If", ["c"], ["y"], name="top", then_branch=body, else_branch=leaf(depth))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F, [2]),
                                            helper.make_tensor_value_info("c", TensorProto.BOOL, cond_shape)],
                              [out("y")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


BAD_CONDITIONS = [
    (np.array([True, False]), "If node 0 'top': its condition must be one bool, got 2 element(s) of bool"),
    (np.array(1, np.int64), "If node 0 'top': its condition must be one bool, got 1 element(s) of int64"),
]


@prepared
def bad_conditions(tmp_path, rng):
    commands = []
    for k, (cond, _) in enumerate(BAD_CONDITIONS):
        folder = tmp_path / str(k)
        folder.mkdir()
        model = _if_model(list(cond.shape))
        model.graph.input[1].type.tensor_type.elem_type = helper.np_dtype_to_tensor_dtype(cond.dtype)
        onnx.save(model, folder / "m.onnx")
        np.save(folder / "x.npy", np.ones(2, np.float32))
        np.save(folder / "c.npy", cond)
        commands.append((folder, ["run", "m.onnx", "x.npy", "c.npy", "--others", "onnxruntime", "-o", "o/"]))
    return [folder for folder, _ in commands], commands


def test_a_bad_condition_is_one_line_and_writes_nothing(ran):
    """Each bad condition in a folder of its own."""
    folders, done = ran["bad_conditions"]
    assert len(done) == len(BAD_CONDITIONS)
    for folder, (_, message), r in zip(folders, BAD_CONDITIONS, done):
        assert r.returncode != 0 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
        assert message in r.stderr
        assert not (folder / "o").exists() or not any((folder / "o").iterdir())


@prepared
def nested(tmp_path, rng):
    onnx.save(_if_model([], 30), tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.array([1.5, -0.0], np.float32))
    np.save(tmp_path / "c.npy", np.array(True))  # down every then_branch
    return [["run", "m.onnx", "x.npy", "c.npy", "--others", "onnxruntime", "-o", "y.npy"]]


def test_ifs_nested_30_deep_run(ran):
    """(protobuf's parser refuses a model nested much deeper: about 33 Ifs)"""
    tmp_path, [r] = ran["nested"]
    assert r.returncode == 0, r.stderr
    assert np.load(tmp_path / "y.npy").tobytes() == np.array([1.5, -0.0], np.float32).tobytes()


def _typed_if(then_type: int, else_type: int, then_declares: int | None = None, then_outputs: int = 1,
              nested: bool = False) -> onnx.ModelProto:
    """If (c) -> y: each branch Casts x to its type and declares it (then_declares: another type); nested: that
    If is inside the then_branch of another whose else_branch is an Identity."""
    def branch(name: str, to: int, declared: int, count: int):
        nodes = [helper.make_node("Cast", ["x"], [f"{name}{k}"], to=to) for k in range(count)]
        return helper.make_graph(nodes, name, [], [out(f"{name}{k}", declared) for k in range(count)])

    node = helper.make_node("If", ["c"], ["y"], name="pick",
                            then_branch=branch("a", then_type, then_declares or then_type, then_outputs),
                            else_branch=branch("b", else_type, else_type, 1))
    if nested:
        inner = helper.make_graph([node], "outer_then", [], [out("y", then_type)])
        node = helper.make_node("If", ["c"], ["z"], name="outer", then_branch=inner,
                                else_branch=helper.make_graph([helper.make_node("Identity", ["x"], ["w"])], "outer_else",
                                                              [], [out("w", then_type)]))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F, [3]),
                                            helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                              [out(node.output[0], then_type)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


# (model, condition, --others, the refusal): ONNX requires an If's branches to agree in their outputs' count and
# types; each ran and wrote the picked branch's (int64 or float32 by the condition), as onnx.reference does
MISMATCHED_BRANCHES = [
    (lambda: _typed_if(I64, F), False, "onnxruntime", "If node 0 'pick': its output 0 is int64 from its then_branch "
     "('a0') and float32 from its else_branch ('b0'); ONNX requires the branches' outputs to agree in type"),
    (lambda: _typed_if(I64, F), True, "reference", "its output 0 is int64 from its then_branch ('a0') and float32"),
    (lambda: _typed_if(F, F, then_outputs=2), False, "onnxruntime",
     "If node 0 'pick': its then_branch makes 2 output(s), its else_branch 1; ONNX requires both to make the If's 1"),
    (lambda: _typed_if(I64, F, nested=True), False, "onnxruntime", "If node 0 'pick': its output 0 is int64"),
    (lambda: _typed_if(I64, F, then_declares=F), True, "onnxruntime", "If node 0 'pick': its then_branch declares "
     "its output 0 ('a0') float32 and makes int64; ONNX requires a branch to make the types it declares"),
]


@prepared
def mismatched_branches(tmp_path, rng):
    commands = []
    for k, (make, cond, others, _) in enumerate(MISMATCHED_BRANCHES):
        folder = tmp_path / str(k)
        folder.mkdir()
        onnx.save(make(), folder / "m.onnx")
        np.save(folder / "x.npy", np.array([1.5, -2.5, 3.7], np.float32))
        np.save(folder / "c.npy", np.array(cond))
        (folder / "o").mkdir()
        commands.append((folder, ["run", "m.onnx", "x.npy", "c.npy", "--others", others, "-o", "o/"]))
    return [folder for folder, _ in commands], commands


def test_branches_that_disagree_are_refused_and_write_nothing(ran):
    """onnxruntime refuses each model when it loads it; onnxop refused none (the nested If's before anything ran)."""
    folders, done = ran["mismatched_branches"]
    assert len(done) == len(MISMATCHED_BRANCHES)
    for folder, (make, _, _, message), r in zip(folders, MISMATCHED_BRANCHES, done):
        assert r.returncode != 0 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
        assert message in r.stderr, r.stderr
        assert not any((folder / "o").iterdir())
        with pytest.raises(Exception, match="TypeInferenceError"):
            ort.InferenceSession(make().SerializeToString(), providers=["CPUExecutionProvider"])


@prepared
def error_in_branch(tmp_path, rng):
    """A Transpose, then If 'pick' whose then_branch's second node, a Reshape, cannot reshape what it is given."""
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Reshape", ["r", "s"], ["o"], name="bad")],
                             "then", [], [out("o")], [helper.make_tensor("s", TensorProto.INT64, [1], [7])])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["o"])], "else", [], [out("o")])
    nodes = [helper.make_node("Transpose", ["x0"], ["x"]),
             helper.make_node("If", ["c"], ["y"], name="pick", then_branch=then, else_branch=other)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x0", F, [3, 2]),
                                           helper.make_tensor_value_info("c", TensorProto.BOOL, [])], [out("y")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.ones((3, 2), np.float32))
    np.save(tmp_path / "c.npy", np.array(True))
    return [["run", "m.onnx", "x.npy", "c.npy", "--others", "onnxruntime", "-o", "y.npy"]]


def test_an_error_in_a_branch_names_the_if_and_the_branch(ran):
    """The Reshape is its branch's node 1, and the message said only 'node 1 'bad'', where the model's
    node 1 is the If."""
    _, [r] = ran["error_in_branch"]
    assert r.returncode == 2 and r.stderr == (
        "onnxop: error: m.onnx: If node 1 'pick', then_branch: node 1 'bad' (Reshape-14): Reshape: shape [7] (7 elements) "
        "does not fit an input of shape (2, 3) (6 elements)\n"), r.stderr
