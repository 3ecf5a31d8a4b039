"""Hostile attributes in .onnx models (which onnx.checker
rejects) are refused in one line naming the node and the attribute, exit 2,
by `run` and by each `conformance` case -- never truncated (Flatten
axis=1.5 is not run as 1), never an internal error, and one bad folder does
not end a conformance run. Real commands on real files: the three that run
onnxop run one process (tests/commands.py), what they print and write being
under test, not the process."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import AttributeProto, TensorProto, helper, numpy_helper

from commands import run_commands
from conftest import cli, random_array, seeded_rng
from onnxop_cli.errors import InputError
from onnxop_cli.ops.attributes import node_attributes

ENV = {**os.environ, "ONNXOP_BACKEND": "vulkan"}
A = helper.make_attribute


def attr(name, kind, **fields):
    a = AttributeProto(name=name, type=getattr(AttributeProto, kind))
    for k, v in fields.items():
        if isinstance(v, list):
            getattr(a, k).extend(v)
        else:
            setattr(a, k, v)
    return a


def model(op, attrs, shape, opset=13, name="n0"):
    node = helper.make_node(op, ["x"], ["y"], name=name)
    node.attribute.extend(attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


HOSTILE = [
    # (id, op, attributes, opset, the end of the message)
    ("float-for-int", "Flatten", [A("axis", 1.5)], 13, "attribute 'axis' must be INT (an integer), the model gives FLOAT"),
    ("whole-float-for-int", "Flatten", [A("axis", 1.0)], 13, "attribute 'axis' must be INT (an integer), the model gives FLOAT"),
    ("string-for-int", "Flatten", [A("axis", "1")], 13, "attribute 'axis' must be INT (an integer), the model gives STRING"),
    ("tensor-for-int", "Flatten", [A("axis", helper.make_tensor("t", TensorProto.INT64, [], [1]))], 13,
     "attribute 'axis' must be INT (an integer), the model gives TENSOR"),
    ("graph-for-int", "Flatten", [A("axis", helper.make_graph([], "empty", [], []))], 13,
     "attribute 'axis' must be INT (an integer), the model gives GRAPH"),
    ("ref-attr", "Flatten", [attr("axis", "INT", ref_attr_name="a")], 13,
     "attribute 'axis' refers to a function's attribute ('a'), which only a function body may do"),
    ("int-for-ints", "Unsqueeze", [A("axes", 0)], 11, "attribute 'axes' must be INTS (a list of integers), the model gives INT"),
    ("floats-for-ints", "Unsqueeze", [A("axes", [0.5])], 11,
     "attribute 'axes' must be INTS (a list of integers), the model gives FLOATS"),
    ("float-for-ints", "Transpose", [A("perm", 0.5)], 13, "attribute 'perm' must be INTS (a list of integers), the model gives FLOAT"),
    ("duplicated", "Flatten", [A("axis", 0), A("axis", 2)], 13, "attribute 'axis' is given twice"),
    ("two-fields", "Flatten", [attr("axis", "INT", i=1, f=2.5)], 13, "attribute 'axis' is INT but also holds a 'f' value"),
    ("undefined-type", "Flatten", [attr("axis", "UNDEFINED", i=1)], 13, "attribute 'axis' has no valid type (type 0)"),
    ("invalid-utf8", "DepthToSpace", [A("blocksize", 2), attr("mode", "STRING", s=b"D\xffR")], 13,
     "attribute 'mode' is not valid UTF-8 (byte 1: 0xff)"),
]
SHAPES = {"Flatten": (2, 3, 4), "Unsqueeze": (2, 3, 4), "Transpose": (2, 3, 4), "DepthToSpace": (1, 4, 2, 2)}


@pytest.mark.parametrize("case", HOSTILE, ids=[c[0] for c in HOSTILE])
def test_in_process_each_is_one_input_error(case):
    _, op, attrs, opset, message = case
    m = model(op, attrs, SHAPES[op], opset)
    with pytest.raises(InputError) as e:
        node_attributes(m.graph.node[0], opset)
    assert e.value.message == f"{op} node 'n0': {message}"


@pytest.mark.parametrize("case", HOSTILE, ids=[c[0] for c in HOSTILE])
def test_run_refuses_it_in_one_line(cwd, capsys, monkeypatch, rng, case):
    """In-process, one case each (a process each cost a second apiece); the
    real processes: test_a_node_name_with_a_newline_stays_on_its_line and
    test_conformance_fails_the_bad_folders_and_goes_on (every case)."""
    _, op, attrs, opset, message = case
    onnx.save(model(op, attrs, SHAPES[op], opset), cwd / "m.onnx")
    np.save(cwd / "x.npy", random_array(rng, SHAPES[op], "float32"))
    monkeypatch.setenv("ONNXOP_BACKEND", ENV["ONNXOP_BACKEND"])
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "-o", "y.npy")
    assert code == 2, err
    # run reads the model as a graph (core/graph.py): the node by its index, name and version
    from onnxop_cli.ops import op_version

    version = op_version(op, opset)
    assert err == f"onnxop: error: m.onnx: node 0 'n0' ({op}-{version.since_version}): {message}\n"
    assert out == ""
    assert not (cwd / "y.npy").exists()


def node_test(folder, m, x, y):
    folder.mkdir(parents=True)
    onnx.save(m, folder / "model.onnx")
    (folder / "test_data_set_0").mkdir()
    (folder / "test_data_set_0" / "input_0.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    (folder / "test_data_set_0" / "output_0.pb").write_bytes(numpy_helper.from_array(y, "y").SerializeToString())


@pytest.fixture(scope="module")
def ran(tmp_path_factory, request) -> dict:
    """Each case's folder, input and command's CompletedProcess, the three run in one process."""
    rng = seeded_rng(request)
    injected, valid, conformance = (tmp_path_factory.mktemp(n) for n in ("injected", "valid", "conformance"))
    onnx.save(model("Flatten", [A("axis", 1.5)], (2, 3, 4), name="n\nonnxop: error: INJECTED"), injected / "m.onnx")
    np.save(injected / "x.npy", random_array(rng, (2, 3, 4), "float32"))
    a = random_array(rng, (2, 3, 4), "float32")
    onnx.save(model("Flatten", [A("axis", 2)], (2, 3, 4)), valid / "m.onnx")
    np.save(valid / "x.npy", a)
    x = random_array(rng, (2, 3, 4), "float32")
    node_test(conformance / "cases" / "a_good", model("Flatten", [A("axis", 2)], x.shape), x, x.reshape(6, 4))
    for i, (_, op, attrs, opset, _) in enumerate(HOSTILE):
        xi = random_array(rng, SHAPES[op], "float32")
        node_test(conformance / "cases" / f"b_bad{i:02}", model(op, attrs, xi.shape, opset), xi, xi)
    node_test(conformance / "cases" / "c_good", model("Flatten", [A("axis", 1)], x.shape), x, x.reshape(2, 12))
    commands = {"injected": (injected, ["run", "m.onnx", "x.npy"]),
                "valid": (valid, ["run", "m.onnx", "x.npy", "-o", "y.npy"]),
                "conformance": (conformance, ["conformance", "cases"])}
    done = run_commands(list(commands.values()), env=ENV)
    assert len(done) == len(commands)
    return {"valid input": a} | {name: (folder, r) for (name, (folder, _)), r in zip(commands.items(), done)}


def test_a_node_name_with_a_newline_stays_on_its_line(ran):
    _, done = ran["injected"]
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "'n\\nonnxop: error: INJECTED'" in done.stderr


def test_valid_attributes_still_run(ran):
    folder, done = ran["valid"]
    assert done.returncode == 0, done.stderr
    assert np.load(folder / "y.npy").tobytes() == ran["valid input"].reshape(6, 4).tobytes()


def test_conformance_fails_the_bad_folders_and_goes_on(ran):
    _, done = ran["conformance"]
    assert done.returncode == 1, done.stderr  # some cases failed
    assert "internal error" not in done.stdout + done.stderr
    # a model that breaks the spec is refused: the outcome "error", never "wrong"
    assert done.stdout.rstrip().endswith(f"2 passed, {len(HOSTILE)} failed ({len(HOSTILE)} error), 0 skipped"), done.stdout
    for _, _, _, _, message in HOSTILE:
        assert message.split("'")[1] in done.stdout
