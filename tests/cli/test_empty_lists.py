"""Empty lists (``--axes ''``, ``--pads ''``...) are taken where the ONNX spec
takes them and refused where its rules refuse them, by the CLI and the API
alike.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from conftest import cli, error_of, random_array


def reference(op_type, x, *, inputs=(), **attrs):
    """onnx's reference evaluator on one node: x, then int64 inputs."""
    from onnx.reference import ReferenceEvaluator

    names = ["x"] + [f"i{k}" for k in range(len(inputs))]
    node = helper.make_node(op_type, names, ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 0, None) for n in names],
                              [helper.make_tensor_value_info("y", 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    feeds = {"x": x} | {f"i{k}": np.array(v, np.int64) for k, v in enumerate(inputs)}
    return ReferenceEvaluator(model).run(None, feeds)[0]


@pytest.mark.parametrize("command,shape,expect", [
    (["tile", "--repeats", ""], (), lambda x: reference("Tile", x, inputs=([],))),
    # (the reference's Expand multiplies by ones, which quiets a signalling NaN: numpy broadcasts bits)
    (["expand", "--shape", ""], (2, 3), lambda x: np.broadcast_to(x, np.broadcast_shapes(x.shape, ()))),
    (["expand", "--shape", ""], (), lambda x: np.broadcast_to(x, np.broadcast_shapes(x.shape, ()))),
    (["transpose", "--perm", ""], (), lambda x: np.transpose(x, ())),
    (["slice", "--starts", "", "--ends", ""], (2, 3), lambda x: reference("Slice", x, inputs=([], []))),
    (["slice", "--starts", "", "--ends", "", "--axes", "", "--steps", ""], (4,),
     lambda x: reference("Slice", x, inputs=([], [], [], []))),
    (["reshape", "--shape", ""], (1, 1), lambda x: reference("Reshape", x, inputs=([],))),
])
def test_an_empty_list_is_taken_where_the_spec_takes_it(cwd, capsys, rng, command, shape, expect):
    x = random_array(rng, shape, "float32") if shape else np.array(rng.standard_normal(), np.float32)
    np.save("x.npy", x)
    code, _, err = cli(capsys, command[0], "x.npy", *command[1:], "-o", "y.npy")
    assert code == 0, err
    want = expect(x)
    got = np.load("y.npy")
    assert got.shape == want.shape and got.tobytes() == np.ascontiguousarray(want).tobytes()


def test_the_api_and_the_cli_agree_on_empty_lists(cwd, capsys):
    from onnxop_cli import api

    np.save("s.npy", np.array(2.5, np.float32))
    code, _, _ = cli(capsys, "tile", "s.npy", "--repeats", "", "-o", "t.npy")
    assert code == 0 and np.load("t.npy").tobytes() == np.asarray(api.tile(np.array(2.5, np.float32), [])).tobytes()


@pytest.mark.parametrize("command,message", [
    (["tile", "v.npy", "--repeats", ""], "v.npy: Tile: repeats [] has 0 values for an input of rank 2; it needs one per axis"),
    (["transpose", "v.npy", "--perm", ""], "v.npy: Transpose: perm [] is not a permutation of 0..1 for an input of rank 2"),
    (["slice", "v.npy", "--starts", "", "--ends", "1"],
     "v.npy: Slice: starts has 0, ends has 1, axes has 0, steps has 0 values; they must have as many"),
    (["unsqueeze", "v.npy", "--axes", ""], "Unsqueeze: axes must not be empty (example: --axes 0,2)"),
])
def test_an_empty_list_the_rules_refuse_is_refused_by_them(cwd, capsys, command, message):
    np.save("v.npy", np.ones((2, 3), np.float32))
    code, _, err = cli(capsys, *command)
    assert code == 2 and error_of(err) == message
