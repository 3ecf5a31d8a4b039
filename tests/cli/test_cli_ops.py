"""The operator commands generated from the registry, and `onnxop run`:
results equal numpy's, the node printed as the docs print it (constant
inputs under Inputs from the opset that made them inputs), JSON, and every
refusal one line naming the operator and the values, with no output left."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from conftest import cli, error_of, random_array
from onnxop_cli.errors import ExitCode
from onnxop_cli.ops import SPECS

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True

X = (2, 3, 4)
D2S = lambda x, b: x.reshape(1, 2, b, b, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(1, 2, 2 * b, 2 * b)  # noqa: E731
CASES = [
    (X, ["transpose", "--perm", "2,0,1"], lambda x: x.transpose(2, 0, 1)),
    (X, ["transpose"], lambda x: x.T),
    (X, ["slice", "--starts", "0", "--ends", "-1", "--axes", "1", "--steps", "2"], lambda x: x[:, 0:-1:2]),
    (X, ["slice", "--starts", "-1,9", "--ends", "-99,0", "--axes", "2,0", "--steps", "-2,-1"],
     lambda x: x[1:0:-1, :, ::-2]),
    (X, ["slice", "--starts", "5", "--ends", "9"], lambda x: x[5:9]),  # empty result
    ((2, 1, 4), ["expand", "--shape", "3,1,3,1"], lambda x: np.broadcast_to(x, (3, 2, 3, 4))),
    (X, ["tile", "--repeats", "2,1,3"], lambda x: np.tile(x, (2, 1, 3))),
    (X, ["reshape", "--shape", "0,-1"], lambda x: x.reshape(2, 12)),
    (X, ["reshape", "--shape", "", "--opset", "5"], None),
    ((1, 3, 1), ["squeeze", "--axes", "0,-1"], lambda x: x.reshape(3)),
    ((1, 3, 1), ["squeeze"], lambda x: x.reshape(3)),
    (X, ["identity"], lambda x: x),
    ((1, 8, 2, 2), ["depth-to-space", "--blocksize", "2", "--mode", "CRD"], lambda x: D2S(x, 2)),
    ((1, 2, 4, 6), ["space-to-depth", "--blocksize", "2"],
     lambda x: x.reshape(1, 2, 2, 2, 3, 2).transpose(0, 3, 5, 1, 2, 4).reshape(1, 8, 2, 3)),
]


@pytest.mark.parametrize("shape,argv,reference", [c for c in CASES if c[2]], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_each_command_matches_numpy(backend, cwd, capsys, rng, shape, argv, reference):
    x = random_array(rng, shape, "float32")
    np.save("x.npy", x)
    code, out, err = cli(capsys, argv[0], "x.npy", *argv[1:], "-o", "y.npy", "-b", backend)
    assert code == 0, err
    expected = np.ascontiguousarray(reference(x))
    y = np.load("y.npy")
    assert y.shape == expected.shape and y.tobytes() == expected.tobytes()
    op = next(s.op_type for s in SPECS.values() if s.command == argv[0])
    assert out == f"{op}: x {shape} float32 -> y {expected.shape} float32, wrote y.npy\n"


def test_reshape_to_a_scalar_needs_an_empty_shape(backend, cwd, capsys):
    np.save("x.npy", np.array([[7.5]], np.float32))
    code, _, err = cli(capsys, "reshape", "x.npy", "--shape", "", "-o", "y.npy", "-b", backend)
    assert code == 0, err
    assert np.load("y.npy").shape == () and np.load("y.npy") == 7.5


def test_print_mode_lists_inputs_and_attributes_by_opset(backend, cwd, capsys):
    np.save("x.npy", np.arange(6, dtype=np.int32).reshape(2, 3))
    code, out, _ = cli(capsys, "slice", "x.npy", "--starts", "1", "--ends", "3", "--axes", "1", "-b", backend)
    assert code == 0
    assert out == (
        "Node:\n  Slice(x, starts, ends, axes) -> (output)\n\n"
        "Inputs:\n  x: shape=(2, 3), dtype=int32\n    [[0, 1, 2],\n     [3, 4, 5]]\n"
        "  starts: shape=(1,), dtype=int64\n    [1]\n  ends: shape=(1,), dtype=int64\n    [3]\n"
        "  axes: shape=(1,), dtype=int64\n    [1]\n\n"
        "Outputs:\n  output: shape=(2, 2), dtype=int32\n    [[1, 2],\n     [4, 5]]\n"
    )
    code, out, _ = cli(capsys, "slice", "x.npy", "--starts", "1", "--ends", "3", "--axes", "1", "--opset", "9",
                       "-b", backend)
    assert out.startswith("Node:\n  Slice(x) -> (output)\n\nAttributes:\n  starts = [1]\n  ends = [3]\n  axes = [1]\n")
    code, out, _ = cli(capsys, "transpose", "x.npy", "--perm", "1,0", "-b", backend)
    assert out.startswith("Node:\n  Transpose(x) -> (transposed)\n\nAttributes:\n  perm = [1, 0]\n\nInputs:\n")


def test_json_lists_constant_inputs_with_their_values(backend, cwd, capsys):
    np.save("x.npy", np.ones((2, 3), np.uint8))
    code, out, _ = cli(capsys, "tile", "x.npy", "--repeats", "2,1", "-o", "y.npy", "--json", "-b", backend)
    doc = json.loads(out)
    assert code == 0 and doc["command"] == "tile" and doc["op"] == "Tile" and doc["attributes"] == {}
    (run,) = doc["runs"]
    assert run["inputs"][1] == {"name": "repeats", "path": None, "shape": [2], "dtype": "int64", "values": [2, 1]}
    assert run["outputs"][0]["shape"] == [4, 3]


@pytest.mark.parametrize("argv,message", [
    (["transpose", "--perm", "0,0"], "x.npy: Transpose: perm [0, 0] is not a permutation of 0..1 for an input of rank 2"),
    (["slice", "--starts", "0", "--ends", "1", "--steps", "0"], "x.npy: Slice: step 0 on axis 0; steps must not be 0"),
    (["slice", "--starts", "0", "--ends", "1", "--axes", "2"],
     "x.npy: Slice: axis 2 is out of range [-2, 1] for an input of rank 2"),
    (["slice", "--starts", "0,1", "--ends", "1"],
     "x.npy: Slice: starts has 2, ends has 1, axes has 2, steps has 2 values; they must have as many"),
    (["slice", "--starts", "0", "--ends", "1", "--steps", "1", "--opset", "9"],
     "Slice-1 (opset 9) has no steps (it takes starts, ends, axes); steps is in opsets 10+"),
    (["tile", "--repeats", "2"], "x.npy: Tile: repeats [2] has 1 values for an input of rank 2; it needs one per axis"),
    (["tile", "--repeats", "2,-1"], "x.npy: Tile: repeats [2, -1] has a negative count"),
    (["expand", "--shape", "3,3"], "x.npy: Expand: shape [3, 3] does not broadcast with input shape (2, 3) (axis 0: 2 vs 3)"),
    (["reshape", "--shape", "4,-1"], "x.npy: Reshape: cannot infer the -1 of shape [4, -1] for an input of shape (2, 3) (6 elements)"),
    (["reshape", "--shape", "0,x"], "Reshape: --shape must be comma-separated integers, got '0,x' (example: --shape 0,-1)"),
    (["squeeze", "--axes", "1"], "x.npy: Squeeze: axis 1 of input shape (2, 3) has size 3, not 1"),
    (["depth-to-space", "--blocksize", "2"], "x.npy: DepthToSpace: the input must have rank 4 (N, C, H, W), got shape (2, 3)"),
    (["depth-to-space", "--blocksize", "2", "--mode", "XYZ"], "DepthToSpace: --mode must be one of DCR, CRD, got 'XYZ'"),
    (["space-to-depth", "--blocksize", "2", "--mode", "CRD", "--opset", "13"],
     "SpaceToDepth-13 (opset 13) has no mode (it takes blocksize); mode is in opsets 28+"),
    (["expand", "--opset", "7", "--shape", "1"], "Expand does not exist before opset 8 (asked for 7)"),
    (["tile"], "Tile-13 needs repeats"),
])
def test_refusals_are_one_line_and_leave_no_output(cwd, capsys, argv, message):
    np.save("x.npy", np.ones((2, 3), np.float32))
    code, out, err = cli(capsys, argv[0], "x.npy", *argv[1:], "-o", "y.npy")
    assert code == ExitCode.USAGE and out == ""
    assert error_of(err) == message
    assert not (cwd / "y.npy").exists()


# ------------------------------------------------------------------ run


def save_model(path, op_type, inputs, attrs=None, inits=(), opset=21, outputs=("y",)):
    node = helper.make_node(op_type, [name for name, _ in inputs], list(outputs), **(attrs or {}))
    infos = [helper.make_tensor_value_info(name, t, None) for name, t in inputs
             if name not in {i.name for i in inits}]
    graph = helper.make_graph([node], "g", infos, [helper.make_tensor_value_info(o, 0, None) for o in outputs],
                              initializer=list(inits))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), str(path))


F, I64 = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64


def test_run_takes_attributes_initializers_and_files_from_the_model(backend, cwd, capsys, rng):
    x = random_array(rng, (3, 4, 5), "float32")
    np.save("x.npy", x)
    save_model(cwd / "slice.onnx", "Slice", [("x", F), ("starts", I64), ("ends", I64), ("axes", I64)],
               inits=[numpy_helper.from_array(np.array([-1], np.int64), "axes")])
    np.save("starts.npy", np.array([1], np.int64))
    np.save("ends.npy", np.array([4], np.int64))
    code, out, err = cli(capsys, "run", "slice.onnx", "x.npy", "starts.npy", "ends.npy", "-o", "y.npy", "-b", backend)
    assert code == 0, err
    assert np.load("y.npy").tobytes() == np.ascontiguousarray(x[:, :, 1:4]).tobytes()
    assert out == "Slice: x (3, 4, 5) float32 -> y (3, 4, 3) float32, wrote y.npy\n"
    save_model(cwd / "t.onnx", "Transpose", [("x", F)], {"perm": [1, 2, 0]}, opset=13)
    code, out, _ = cli(capsys, "run", "t.onnx", "x.npy", "--json", "-b", backend)
    doc = json.loads(out)
    assert code == 0 and doc["command"] == "run" and doc["op"] == "Transpose" and doc["opset"] == 13
    assert doc["attributes"] == {"perm": [1, 2, 0]} and doc["runs"][0]["outputs"][0]["shape"] == [4, 5, 3]


def _gelu_then_add() -> onnx.ModelProto:
    """Add(com.microsoft.Gelu(x), x): shape inference cannot type the Gelu's output, so the float Add's type is
    not known before running; the refusal counted only the Gelu, where --others ran both on onnxruntime
    (an onnxruntime-optimized PP-OCR classifier: '87 node(s)', 154 ran there)."""
    nodes = [helper.make_node("Gelu", ["x"], ["g"], domain="com.microsoft"), helper.make_node("Add", ["g", "x"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])


@pytest.mark.parametrize("make,files,message", [
    (lambda p: save_model(p, "Tile", [("x", F), ("r", I64)]), ["x.npy"],
     "m.onnx: the model has 2 input(s) (x, r), 1 file(s) were given"),
    (lambda p: save_model(p, "Pow", [("x", F), ("i", F)]), ["x.npy", "x.npy"],
     "m.onnx: 1 node(s) onnxop does not run: Pow x1; --others onnxruntime runs them on onnxruntime "
     "(--others reference: on onnx.reference)"),
    (lambda p: onnx.save(_gelu_then_add(), p), ["x.npy"],  # the Add's counted too: --others sends it there
     "m.onnx: 1 node(s) onnxop does not run: com.microsoft.Gelu x1; and 1 with an input whose type onnx's "
     "shape inference cannot tell (Add (float) x1), which go to the others too; --others onnxruntime runs them"),
    (lambda p: save_model(p, "Transpose", [("x", F)], {"perm": [0, 0]}), ["x.npy"],
     "m.onnx: node 0 (Transpose-21): Transpose: perm [0, 0] is not a permutation of 0..1 for an input of rank 2"),
    (lambda p: save_model(p, "Transpose", [("x", F)], {"axis": 1}), ["x.npy"], "m.onnx: node 0 (Transpose-21) has no attribute 'axis'"),
    (lambda p: save_model(p, "Reshape", [("x", F), ("s", F)]), ["x.npy", "x.npy"],
     "m.onnx: node 0 (Reshape-21) input 'shape' must be a 1-D int64 (or int32) tensor, got shape (2, 3) of float32"),
    (lambda p: p.write_bytes(b"not a model"), ["x.npy"], "m.onnx: not an ONNX model"),
])
def test_run_refusals(cwd, capsys, make, files, message):
    np.save("x.npy", np.ones((2, 3), np.float32))
    make(cwd / "m.onnx")
    code, out, err = cli(capsys, "run", "m.onnx", *files, "-o", "y.npy")
    assert code == ExitCode.USAGE and out == "" and error_of(err).startswith(message)
    assert not (cwd / "y.npy").exists()


def test_run_in_a_real_process(backend, cwd):
    np.save("x.npy", np.arange(6, dtype=np.int16).reshape(2, 3))
    save_model(cwd / "e.onnx", "Expand", [("x", onnx.TensorProto.INT16), ("shape", I64)],
               inits=[numpy_helper.from_array(np.array([2, 2, 3], np.int64), "shape")])
    done = subprocess.run([sys.executable, "-m", "onnxop_cli", "run", "e.onnx", "x.npy", "-o", "y.npy", "-b", backend],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert np.array_equal(np.load("y.npy"), np.broadcast_to(np.arange(6, dtype=np.int16).reshape(2, 3), (2, 2, 3)))


def test_an_output_too_large_for_pb_is_refused_before_any_work(cwd, capsys, monkeypatch):
    """The size checked is the output's: Tile makes more than it reads."""
    from onnxop_cli.io import tensorproto

    monkeypatch.setattr(tensorproto, "PROTOBUF_LIMIT", 1000)
    np.save("x.npy", np.ones((10, 10), np.float32))  # 400 bytes in, 1600 out
    code, _, err = cli(capsys, "tile", "x.npy", "--repeats", "2,2", "-o", "y.pb")
    assert code == ExitCode.USAGE
    assert error_of(err) == (
        "y.pb: 1600 bytes do not fit a .pb (at most 1000 bytes of data: protobuf messages stay under 2 GiB); "
        "write a .npy or .npz file instead"
    )
    assert not (cwd / "y.pb").exists()
