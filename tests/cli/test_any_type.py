"""``--any-type``: a view runs the same index map on any element type, and is
not for models or conformance.
"""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest
from onnx import numpy_helper

from conftest import cli, error_of, random_array
from pb_files import read_pb, save_pb


@pytest.mark.parametrize("command", [
    ["slice", "--starts", "1", "--ends", "3", "--axes", "1"],
    ["tile", "--repeats", "2,1"],
    ["expand", "--shape", "2,2,4"],
])
@pytest.mark.parametrize("np_type", [ml_dtypes.float8_e4m3fn, ml_dtypes.int4, ml_dtypes.uint2])
def test_any_type_runs_the_same_index_map(cwd, capsys, rng, command, np_type):
    x = (random_array(rng, (2, 4), "uint8") & 3).view(np_type) if np.dtype(np_type).itemsize == 1 and \
        np_type is not ml_dtypes.float8_e4m3fn else random_array(rng, (2, 4), "uint8").view(np_type)
    if np_type is ml_dtypes.int4:
        x = rng.integers(-8, 8, (2, 4)).astype(np_type)
    save_pb(cwd / "x.pb", x, "x")
    code, _, err = cli(capsys, command[0], "x.pb", *command[1:], "-o", "y.pb")
    assert code == 2 and "no opset allows" in error_of(err)  # the default stays the spec
    code, out, err = cli(capsys, command[0], "x.pb", *command[1:], "-o", "y.pb", "--any-type")
    assert code == 0, err
    assert "(--any-type: " in out and "type list excludes" in out
    # the same index map on the bytes as on a type the list allows (uint8 codes)
    codes = x.view(np.uint8)
    code, _, err = cli(capsys, command[0], "codes.npy", *command[1:], "-o", "want.npy") if np.save("codes.npy", codes) \
        is None else (None, None, None)
    assert code == 0, err
    want = np.load("want.npy").view(np_type)
    got = numpy_helper.to_array(read_pb(cwd / "y.pb"))
    assert got.shape == want.shape and got.view(np.uint8).tobytes() == want.view(np.uint8).tobytes()
    code, out, _ = cli(capsys, command[0], "x.pb", *command[1:], "-o", "y.pb", "--any-type", "--json")
    assert json.loads(out)["any_type"] is True


def test_any_type_is_not_for_models_or_conformance():
    from onnxop_cli.docs import conformance
    from onnxop_cli.ops import model

    for module in (conformance, model):
        assert "any_type" not in open(module.__file__).read()
    from onnxop_cli.cli.app import app

    run = next(c for c in app.registered_commands if c.name == "run")
    import inspect

    assert "any_type" not in inspect.signature(run.callback).parameters
