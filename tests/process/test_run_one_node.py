"""``onnxop run`` on one-node models of the operators of several tensors
(Concat, Gather, Pad, Split, Where, Shape, ...): they take the graph route
like every other model, so every input form, ``--check``, ``-o`` naming and
the model's declarations behave as they do for a graph of many nodes.

Real processes on real files; expected outputs from onnx.reference.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

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


def _onnxop(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "onnxop_cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(params=list(_cases(np.random.default_rng(0))))
def case(request, tmp_path, rng):
    op, attrs, opset, inputs, outputs = _cases(rng)[request.param]
    path, want = _model(tmp_path, op, attrs, opset, inputs, outputs)
    return tmp_path, path, inputs, outputs, want


def test_check_fails_on_a_wrong_expected_output(case):
    folder, path, inputs, outputs, want = case
    data = folder / "test_data_set_0"
    ok = _onnxop("run", path, data, "--check", data, cwd=folder)
    assert ok.returncode == 0, ok.stderr
    assert "bit for bit" in ok.stdout + ok.stderr
    last = np.asarray(want[-1])
    wrong = last.copy().reshape(-1)
    if wrong.size:
        wrong.view(f"u{wrong.dtype.itemsize}")[0] ^= 1  # one bit of one element
    else:
        wrong = np.zeros(7, last.dtype)
    onnx.save_tensor(numpy_helper.from_array(wrong.reshape(last.shape) if wrong.size == last.size else wrong,
                                             outputs[-1]), data / f"output_{len(outputs) - 1}.pb")
    bad = _onnxop("run", path, data, "--check", data, cwd=folder)
    assert bad.returncode == 1, bad.stderr
    assert repr(outputs[-1]) in bad.stderr and "Traceback" not in bad.stderr
    gone = _onnxop("run", path, data, "--check", folder / "nonexistent", cwd=folder)
    assert gone.returncode == 2 and "not a folder" in gone.stderr


@pytest.mark.parametrize("case", ["concat", "split"], indirect=True)  # one route: two operators show it
def test_named_inputs_and_a_data_set_folder_write_outputs_by_name(case):
    folder, path, inputs, outputs, want = case
    named = [a for n, _ in inputs for a in ("--input", f"{n}={n}.npy")]
    r = _onnxop("run", path, *named, "-o", "new/", cwd=folder)  # a folder not made yet
    assert r.returncode == 0, r.stderr
    for n, w in zip(outputs, want):
        assert np.load(folder / "new" / f"{n}.npy").tobytes() == np.asarray(w).tobytes()
    r = _onnxop("run", path, "test_data_set_0", "-o", "all.npz", cwd=folder)
    assert r.returncode == 0, r.stderr
    with np.load(folder / "all.npz") as z:
        assert sorted(z.files) == sorted(outputs)
    if len(outputs) == 1:
        r = _onnxop("run", path, "test_data_set_0", "-o", "result.pb", cwd=folder)
        assert r.returncode == 0, r.stderr
        assert onnx.load_tensor(str(folder / "result.pb")).name == outputs[0]
    r = _onnxop("run", path, "test_data_set_0", "--check", "test_data_set_0", "-o", "x.pb", cwd=folder)
    assert r.returncode == 2 and "drop -o or --check" in r.stderr


@pytest.mark.parametrize("case", ["gather", "where"], indirect=True)
def test_declared_types_and_dims_are_checked(case):
    folder, path, inputs, outputs, want = case
    name, a = inputs[-1]
    wrong = np.zeros((a.shape[0] + 1, *a.shape[1:]), a.dtype)
    np.save(folder / "wrong.npy", wrong)
    files = [f"{n}.npy" for n, _ in inputs[:-1]] + ["wrong.npy"]
    r = _onnxop("run", path, *files, cwd=folder)
    assert r.returncode == 2, r.stderr
    assert f"graph input {name!r} is declared with dim 0" in r.stderr
    np.save(folder / "wrong.npy", a.astype(np.float64 if a.dtype != np.float64 else np.float32))
    r = _onnxop("run", path, *files, cwd=folder)
    assert r.returncode == 2 and f"graph input {name!r} is declared" in r.stderr, r.stderr


@pytest.mark.parametrize("attribute", [
    helper.make_attribute("axis", 1.5),
    helper.make_attribute("axis", "one"),
])
@pytest.mark.parametrize("op", ["Concat", "Gather"])
def test_hostile_attributes_are_refused(tmp_path, op, attribute):
    node = helper.make_node(op, ["x", "y"], ["z"])
    node.attribute.append(attribute)
    model = helper.make_model(helper.make_graph([node], "g", [_info("x", F), _info("y", I64)], [_info("z", F)]),
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.zeros((2, 3), np.float32))
    np.save(tmp_path / "y.npy", np.zeros((2,), np.int64))
    r = _onnxop("run", "m.onnx", "x.npy", "y.npy", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "attribute 'axis' must be INT" in r.stderr and "internal error" not in r.stderr


def test_an_attribute_given_twice_is_refused(tmp_path):
    node = helper.make_node("Concat", ["x", "x"], ["z"], axis=0)
    node.attribute.append(helper.make_attribute("axis", 1))
    model = helper.make_model(helper.make_graph([node], "g", [_info("x", F)], [_info("z", F)]),
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.zeros((2, 3), np.float32))
    r = _onnxop("run", "m.onnx", "x.npy", cwd=tmp_path)
    assert r.returncode == 2 and "'axis' is given twice" in r.stderr, r.stderr


@pytest.mark.parametrize("op, ins, outs, attrs, message", [
    ("Concat", ["x", "x"], ["x"], {"axis": 0}, "which is already a graph input"),
    ("Concat", ["x", "x"], ["y", "w"], {"axis": 0}, "it makes at most 1"),
    ("Split", ["x"], ["y", "y"], {"axis": 0, "num_outputs": 2}, "which is already produced by node 0"),
])
def test_outputs_that_clash_are_refused_before_anything_runs(tmp_path, op, ins, outs, attrs, message):
    node = helper.make_node(op, ins, outs, **attrs)
    graph_outs = list(dict.fromkeys(outs))
    model = helper.make_model(helper.make_graph([node], "g", [_info("x", F)], [_info(n, F) for n in graph_outs]),
                              opset_imports=[helper.make_opsetid("", 18)])
    onnx.save(model, tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.zeros((2, 3), np.float32))
    r = _onnxop("run", "m.onnx", "x.npy", "-o", "out/", cwd=tmp_path)
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
