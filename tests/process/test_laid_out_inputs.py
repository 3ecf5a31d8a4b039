"""A big-endian or Fortran-order .npy reaches every consumer on the host as
its values, not as its bytes: the nodes `run --others` hands to onnxruntime
or onnx.reference, `--verify`'s second run, `--check`'s expected files and
`compare`. Once they took a big-endian array's bytes as native numbers:
`--others onnxruntime` wrote denormals with exit 0, `--verify` and `--check`
reported differences that were not there (exit 1), `compare` called equal
files different, and `--others reference` refused the node.

What the commands write, print and exit with is under test, not the process:
the commands run in one process (tests/commands.py)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from commands import Prepared

X = np.array([[1.5, -2.0, 3.0], [-0.0, 5.0, 6.25]], np.float32)
LAYOUTS = {"big": X.astype(">f4"), "fortran-big": np.asfortranarray(X.astype(">f4")), "fortran": np.asfortranarray(X)}
prepared = Prepared()


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict:
    return prepared.run(tmp_path_factory)


def _model(*nodes, out_shape) -> onnx.ModelProto:
    graph = helper.make_graph(list(nodes), "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


@prepared
def consumers(folder):
    # Add of floats is not onnxop's: --others runs it on the other runtime, on the graph input as it came
    onnx.save(_model(helper.make_node("Add", ["x", "x"], ["y"]), out_shape=[2, 3]), folder / "add.onnx")
    onnx.save(_model(helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0]), out_shape=[3, 2]), folder / "t.onnx")
    np.save(folder / "x.npy", X)
    (folder / "expected").mkdir()
    np.save(folder / "expected" / "y.npy", np.asfortranarray(X.T.astype(">f4")))
    commands = []
    for name, x in LAYOUTS.items():
        np.save(folder / f"{name}.npy", x)
        commands += [["run", "add.onnx", f"{name}.npy", "--others", "onnxruntime", "-o", f"ort-{name}.npy"],
                     ["run", "add.onnx", f"{name}.npy", "--others", "reference", "-o", f"ref-{name}.npy"],
                     ["run", "t.onnx", f"{name}.npy", "--verify", "-o", f"verified-{name}.npy"],
                     ["compare", f"{name}.npy", "x.npy"]]
    return commands + [["run", "t.onnx", "x.npy", "--check", "expected"]]


def test_every_host_consumer_takes_the_values_not_the_bytes(ran):
    tmp_path, done = ran["consumers"]
    assert len(done) == 4 * len(LAYOUTS) + 1
    for k, name in enumerate(LAYOUTS):
        ort, ref, verified, compared = done[4 * k: 4 * k + 4]
        for r, out in ((ort, f"ort-{name}"), (ref, f"ref-{name}")):
            assert r.returncode == 0, (out, r.stderr)
            assert np.load(tmp_path / f"{out}.npy").tobytes() == (X + X).tobytes(), out
        assert verified.returncode == 0, (name, verified.stderr)
        assert "Verified 1 node(s) bit for bit" in verified.stdout
        assert compared.returncode == 0 and " same " in compared.stdout, (name, compared.stdout)
    checked = done[-1]
    assert checked.returncode == 0 and "equal expected's files, bit for bit" in checked.stdout, checked.stderr
