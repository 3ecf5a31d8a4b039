"""The integer elementwise operators as real commands: a real export's
shape chain (Shape -> Gather -> Cast -> Mul/Div/Add -> Concat -> Reshape)
through ``onnxop run``, and the refusals -- a zero divisor, a float input --
as one ``onnxop: error:`` line with exit 2 and no output file, from the
operator commands and from a graph alike. Expected values from onnx.reference.
What the commands write, print and exit with is under test, not the process:
the module's commands run in one process (tests/commands.py, fixture ``ran``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from commands import Prepared

prepared = Prepared()  # each test's folder and commands


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict:
    """Every prepared test's commands, in one process: name -> (its folder, its results)."""
    return prepared.run(tmp_path_factory)


def _const(name: str, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


def _shape_chain(folder: Path) -> Path:
    """x (2, 3, 4, 5) -> (2, 3 * 4 // 2, -1): the integer arithmetic real exports put before a Reshape."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i01"], ["s01"], axis=0),        # (2, 3)
        helper.make_node("Gather", ["s", "i2"], ["s2"], axis=0),          # (4,)
        helper.make_node("Cast", ["s01"], ["s01i"], to=TensorProto.INT32),
        helper.make_node("Cast", ["s2"], ["s2i"], to=TensorProto.INT32),
        helper.make_node("Mul", ["s01i", "s2i"], ["m"]),                   # (8, 12)
        helper.make_node("Div", ["m", "two"], ["d"]),                      # (4, 6)
        helper.make_node("Sub", ["d", "two"], ["e"]),                      # (2, 4)
        helper.make_node("Add", ["e", "zero"], ["f"]),
        helper.make_node("Less", ["f", "three"], ["small"]),               # (True, False)
        helper.make_node("Where", ["small", "s01i", "d"], ["g"]),          # (2, 6)
        helper.make_node("Cast", ["g"], ["g64"], to=TensorProto.INT64),
        helper.make_node("Concat", ["g64", "minus1"], ["target"], axis=0),  # (2, 6, -1)
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    inits = [_const("i01", [0, 1]), _const("i2", [2]), _const("two", [2], np.int32), _const("zero", [0], np.int32),
             _const("three", [3], np.int32), _const("minus1", [-1])]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    path = folder / "chain.onnx"
    onnx.save(model, path)
    return path


@prepared
def shape_chain(tmp_path):
    np.save(tmp_path / "x.npy", np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32))
    return [["run", _shape_chain(tmp_path), "x.npy", "-o", "y.npy"]]


def test_a_shape_chain_of_integer_arithmetic_runs_as_a_graph(ran):
    tmp_path, [r] = ran["shape_chain"]
    (want,) = ReferenceEvaluator(onnx.load(tmp_path / "chain.onnx")).run(None, {"x": np.load(tmp_path / "x.npy")})
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / "y.npy")
    assert got.shape == want.shape == (2, 6, 10) and got.tobytes() == want.tobytes()


def _one_error_line(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith("onnxop: error: ") and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def _div_model(folder: Path) -> None:
    node = helper.make_node("Div", ["a", "b"], ["q"], name="per_row")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.INT64, [2, 3]),
                                            helper.make_tensor_value_info("b", TensorProto.INT64, [3])],
                              [helper.make_tensor_value_info("q", TensorProto.INT64, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), folder / "div.onnx")


DIVISIONS = (("div", "a.npy", "--b", "b.npy"), ("mod", "a.npy", "--b", "b.npy", "--fmod", "1"))


@prepared
def division_by_zero(tmp_path):
    np.save(tmp_path / "a.npy", np.array([[7, -7, 3], [9, 5, 1]], np.int64))
    np.save(tmp_path / "b.npy", np.array([2, 3, 0], np.int64))
    (tmp_path / "kept.npy").write_bytes(b"before")  # an existing output is not clobbered
    np.save(tmp_path / "first.npy", np.array([[4, 6, 8]], np.int64))
    (tmp_path / "out").mkdir()
    _div_model(tmp_path)
    return [*([*args, "-o", f"q-{args[0]}.npy"] for args in DIVISIONS),
            ["div", "a.npy", "--b", "b.npy", "-o", "kept.npy"],
            # a batch checks its divisors before any output is written, and names the file
            ["div", "first.npy", "a.npy", "--b", "b.npy", "-o", "out/"],
            # in a graph the node is named
            ["run", "div.onnx", "a.npy", "b.npy", "-o", "q.npy"]]


def test_division_by_zero_is_refused_without_output(ran):
    tmp_path, (*by_op, kept, batch, graph) = ran["division_by_zero"]
    for args, r in zip(DIVISIONS, by_op, strict=True):
        line = _one_error_line(r)
        assert "division by zero: B is 0 at output element (0, 2)" in line, args
        assert not (tmp_path / f"q-{args[0]}.npy").exists()
    _one_error_line(kept)
    assert (tmp_path / "kept.npy").read_bytes() == b"before"
    assert "first.npy: Div: division by zero: B is 0 at output element (0, 2)" in _one_error_line(batch)
    assert not list((tmp_path / "out").iterdir())
    line = _one_error_line(graph)
    assert "'per_row'" in line and "division by zero" in line and "(0, 2)" in line
    assert not (tmp_path / "q.npy").exists()


@prepared
def float_inputs(tmp_path):
    np.save(tmp_path / "f.npy", np.ones(3, np.float32))
    np.save(tmp_path / "t.npy", np.array(["1"]))
    return [["add", "f.npy", "--b", "f.npy", "-o", "s.npy"], ["cast", "t.npy", "--to", "16", "-o", "c.npy"]]


def test_float_inputs_are_refused_as_out_of_scope(ran):
    tmp_path, (add, cast) = ran["float_inputs"]
    line = _one_error_line(add)
    assert "float32" in line and "not in its scope" in line
    line = _one_error_line(cast)
    assert "string to bfloat16 is not in its scope" in line
    assert not (tmp_path / "s.npy").exists() and not (tmp_path / "c.npy").exists()


@prepared
def float_casts(tmp_path):
    np.save(tmp_path / "ok.npy", np.array([1.5, -2.5], np.float32))
    np.save(tmp_path / "nan.npy", np.array([1.5, np.nan], np.float32))
    (tmp_path / "out").mkdir()
    return [["cast", "ok.npy", "--to", "7", "-o", "c.npy"], ["cast", "nan.npy", "--to", "7", "-o", "d.npy"],
            ["cast", "ok.npy", "nan.npy", "--to", "7", "-o", "out/"]]


def test_a_float_cast_outside_the_integer_type_is_refused_without_output(ran):
    """numpy's (onnx.reference's) result for NaN or an out-of-range value is the platform's: refused."""
    tmp_path, (r, nan, batch) = ran["float_casts"]
    assert r.returncode == 0, r.stderr
    assert np.load(tmp_path / "c.npy").tolist() == [1, -2]
    line = _one_error_line(nan)
    assert "Cast: the input is NaN, infinite or outside int64 at output element (1)" in line
    line = _one_error_line(batch)
    assert line.startswith("onnxop: error: nan.npy: Cast: the input is NaN")  # checked before any job writes
    assert not (tmp_path / "d.npy").exists() and not list((tmp_path / "out").iterdir())
