"""``onnxop run`` on one-node models of the operators of several tensors
(Concat, Gather, Pad, Split, Where, Shape, ...): they take the graph route
like every other model, so every input form, ``--check``, ``-o`` naming and
the model's declarations behave as they do for a graph of many nodes.

Real files; the module's commands run through onnxop's entry
(tests/commands.py, fixture ``ran``), none of them tests the process itself;
expected outputs from onnx.reference.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from commands import Prepared
from conftest import seeded_rng

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _info(name, elem, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


# (op, attributes, opset, inputs as (name, array), output names)
def _cases(rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    y = rng.standard_normal((2, 3)).astype(np.float32)
    return {
        "concat": ("Concat", {"axis": 0}, 13, [("x", x), ("y", y)], ["z"]),
        "gather": ("Gather", {"axis": 1}, 13, [("x", x), ("i", np.array([2, 0, -1], np.int64))], ["g"]),
        "pad": ("Pad", {"mode": "reflect"}, 18, [("x", x), ("pads", np.array([1, 1, 1, 1], np.int64))], ["p"]),
        "split": ("Split", {"axis": 0}, 18, [("x", x), ("s", np.array([1, 3], np.int64))], ["a", "b"]),
        "where": ("Where", {}, 16, [("c", x > 0), ("x", x), ("w", -x)], ["o"]),
        "shape": ("Shape", {"start": 1}, 15, [("x", x)], ["sh"]),
    }


CASES = list(_cases(np.random.default_rng(0)))


def _elem(a: np.ndarray) -> int:
    return helper.np_dtype_to_tensor_dtype(a.dtype)


def _model(folder: Path, op, attrs, opset, inputs, outputs) -> tuple[Path, list[np.ndarray]]:
    node = helper.make_node(op, [n for n, _ in inputs], outputs, **attrs)
    ins = [_info(n, _elem(a), list(a.shape)) for n, a in inputs]
    outs = [_info(n, 0) for n in outputs]
    model = helper.make_model(helper.make_graph([node], "g", ins, outs),
                              opset_imports=[helper.make_opsetid("", opset)])
    path = folder / "model.onnx"
    onnx.save(model, path)
    want = ReferenceEvaluator(model).run(None, dict(inputs))
    data = folder / "test_data_set_0"
    data.mkdir()
    for k, (n, a) in enumerate(inputs):
        onnx.save_tensor(numpy_helper.from_array(a, n), data / f"input_{k}.pb")
    for k, (n, a) in enumerate(zip(outputs, want)):
        onnx.save_tensor(numpy_helper.from_array(np.asarray(a), n), data / f"output_{k}.pb")
    for n, a in inputs:
        np.save(folder / f"{n}.npy", a)
    return path, want


def _cases_in(root: Path, rng, names) -> list[tuple[Path, Path, list, list, list]]:
    """Each named case's model, inputs and data set, in a folder of its own under ``root``."""
    cases = _cases(rng)
    made = []
    for name in names:
        folder = root / name
        folder.mkdir()
        op, attrs, opset, inputs, outputs = cases[name]
        path, want = _model(folder, op, attrs, opset, inputs, outputs)
        made.append((folder, path, inputs, outputs, want))
    return made


prepare = Prepared()  # each test's folders and commands


@pytest.fixture(scope="module")
def ran(tmp_path_factory, request) -> dict:
    """Every prepared test's commands, in one process: name -> (what it made, its results). The
    inputs are drawn from the module's seed (its node id's, replayable: conftest's failure report)."""
    return prepare.run(tmp_path_factory, seeded_rng(request))


@prepare
def check(tmp_path, rng):
    commands = []
    made = _cases_in(tmp_path, rng, CASES)
    for folder, path, inputs, outputs, want in made:
        data = folder / "test_data_set_0"
        wrong_set = folder / "wrong_set"
        shutil.copytree(data, wrong_set)
        last = np.asarray(want[-1])
        wrong = last.copy().reshape(-1)
        if wrong.size:
            wrong.view(f"u{wrong.dtype.itemsize}")[0] ^= 1  # one bit of one element
        else:
            wrong = np.zeros(7, last.dtype)
        onnx.save_tensor(numpy_helper.from_array(wrong.reshape(last.shape) if wrong.size == last.size else wrong,
                                                 outputs[-1]), wrong_set / f"output_{len(outputs) - 1}.pb")
        commands += [(folder, ["run", path, data, "--check", data]),
                     (folder, ["run", path, data, "--check", wrong_set]),
                     (folder, ["run", path, data, "--check", folder / "nonexistent"])]
    return made, commands


def test_check_fails_on_a_wrong_expected_output(ran):
    """Every case (6 operators): --check passes on onnx.reference's outputs,
    fails (exit 1, naming the output) on one flipped bit, refuses a missing
    folder."""
    made, done = ran["check"]
    results = iter(done)
    for (folder, path, inputs, outputs, want), ok, bad, gone in zip(made, results, results, results, strict=True):
        assert ok.returncode == 0, ok.stderr
        assert "bit for bit" in ok.stdout + ok.stderr
        assert bad.returncode == 1, bad.stderr
        assert repr(outputs[-1]) in bad.stderr and "Traceback" not in bad.stderr
        assert gone.returncode == 2 and "onnxop: error: --check " in gone.stderr and "no such folder" in gone.stderr


@prepare
def named(tmp_path, rng):
    commands = []
    made = _cases_in(tmp_path, rng, ["concat", "split"])
    for folder, path, inputs, outputs, want in made:
        named = [a for n, _ in inputs for a in ("--input", f"{n}={n}.npy")]
        commands += [(folder, ["run", path, *named, "-o", "new/"]),  # a folder not made yet
                     (folder, ["run", path, "test_data_set_0", "-o", "all.npz"]),
                     (folder, ["run", path, "test_data_set_0", "--check", "test_data_set_0", "-o", "x.pb"])]
        if len(outputs) == 1:
            commands.append((folder, ["run", path, "test_data_set_0", "-o", "result.pb"]))
    return made, commands


def test_named_inputs_and_a_data_set_folder_write_outputs_by_name(ran):
    """Concat and Split (one route: two operators show it, one output and two)."""
    made, done = ran["named"]
    results = iter(done)
    for folder, path, inputs, outputs, want in made:
        named, npz, both = next(results), next(results), next(results)
        assert named.returncode == 0, named.stderr
        for n, w in zip(outputs, want):
            assert np.load(folder / "new" / f"{n}.npy").tobytes() == np.asarray(w).tobytes()
        assert npz.returncode == 0, npz.stderr
        with np.load(folder / "all.npz") as z:
            assert sorted(z.files) == sorted(outputs)
        assert both.returncode == 2 and "drop -o or --check" in both.stderr
        if len(outputs) == 1:
            pb = next(results)
            assert pb.returncode == 0, pb.stderr
            assert onnx.load_tensor(str(folder / "result.pb")).name == outputs[0]
    assert next(results, None) is None


@prepare
def declared(tmp_path, rng):
    commands = []
    made = _cases_in(tmp_path, rng, ["gather", "where"])
    for folder, path, inputs, outputs, want in made:
        name, a = inputs[-1]
        np.save(folder / "wrong_dim.npy", np.zeros((a.shape[0] + 1, *a.shape[1:]), a.dtype))
        np.save(folder / "wrong_type.npy", a.astype(np.float64 if a.dtype != np.float64 else np.float32))
        files = [f"{n}.npy" for n, _ in inputs[:-1]]
        commands += [(folder, ["run", path, *files, "wrong_dim.npy"]), (folder, ["run", path, *files, "wrong_type.npy"])]
    return made, commands


def test_declared_types_and_dims_are_checked(ran):
    """Gather's indices and Where's last input: a wrong dim, then a wrong type."""
    made, done = ran["declared"]
    results = iter(done)
    for (folder, path, inputs, outputs, want), dim, dtype in zip(made, results, results, strict=True):
        name = inputs[-1][0]
        assert dim.returncode == 2, dim.stderr
        assert f"graph input {name!r} is declared with dim 0" in dim.stderr
        assert dtype.returncode == 2 and f"graph input {name!r} is declared" in dtype.stderr, dtype.stderr


def _saved(folder: Path, node, inputs, outputs, opset: int) -> None:
    folder.mkdir()
    model = helper.make_model(helper.make_graph([node], "g", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(model, folder / "m.onnx")
    np.save(folder / "x.npy", np.zeros((2, 3), np.float32))
    np.save(folder / "y.npy", np.zeros((2,), np.int64))


@prepare
def hostile(tmp_path, rng):
    commands = []
    for op in ("Concat", "Gather"):
        for k, attribute in enumerate([helper.make_attribute("axis", 1.5), helper.make_attribute("axis", "one")]):
            node = helper.make_node(op, ["x", "y"], ["z"])
            node.attribute.append(attribute)
            folder = tmp_path / f"{op}{k}"
            _saved(folder, node, [_info("x", F), _info("y", I64)], [_info("z", F)], 13)
            commands.append((folder, ["run", "m.onnx", "x.npy", "y.npy"]))
    node = helper.make_node("Concat", ["x", "x"], ["z"], axis=0)
    node.attribute.append(helper.make_attribute("axis", 1))
    _saved(tmp_path / "twice", node, [_info("x", F)], [_info("z", F)], 13)
    commands.append((tmp_path / "twice", ["run", "m.onnx", "x.npy"]))
    return None, commands


def test_hostile_attributes_are_refused(ran):
    """Concat and Gather, each with a float and a string ``axis`` (4 cases),
    and an attribute given twice."""
    *wrong_type, twice = ran["hostile"][1]
    assert len(wrong_type) == 4
    for r in wrong_type:
        assert r.returncode == 2, r.stderr
        assert "attribute 'axis' must be INT" in r.stderr and "internal error" not in r.stderr
    assert twice.returncode == 2 and "'axis' is given twice" in twice.stderr, twice.stderr


CLASHES = [
    ("Concat", ["x", "x"], ["x"], {"axis": 0}, "which is already a graph input"),
    ("Concat", ["x", "x"], ["y", "w"], {"axis": 0}, "it makes at most 1"),
    ("Split", ["x"], ["y", "y"], {"axis": 0, "num_outputs": 2}, "which is already produced by node 0"),
]


@prepare
def clashes(tmp_path, rng):
    commands = []
    for k, (op, ins, outs, attrs, _) in enumerate(CLASHES):
        node = helper.make_node(op, ins, outs, **attrs)
        graph_outs = list(dict.fromkeys(outs))
        _saved(tmp_path / str(k), node, [_info("x", F)], [_info(n, F) for n in graph_outs], 18)
        commands.append((tmp_path / str(k), ["run", "m.onnx", "x.npy", "-o", "out/"]))
    return tmp_path, commands


def test_outputs_that_clash_are_refused_before_anything_runs(ran):
    """The 3 clashes of CLASHES, each in its own folder: refused, no output written."""
    tmp_path, done = ran["clashes"]
    for k, ((*_, message), r) in enumerate(zip(CLASHES, done, strict=True)):
        assert r.returncode == 2 and message in r.stderr, r.stderr
        out = tmp_path / str(k) / "out"
        assert not out.exists() or not any(out.iterdir())
