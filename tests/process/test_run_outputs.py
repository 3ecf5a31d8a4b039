"""Every output is written where -o says, zero-size outputs included.

A Split of one part (``num_outputs=1``) has one output: ``-o FILE.npy`` (or
``.pb``) writes that file, not a folder named FILE.npy holding it, for
``onnxop run`` of a one-node model or of a graph and for the ``split``
command; ``-o DIR/`` and ``-o FILE.npz`` hold every output, however many and
however small (an input of zero rows). Real processes, real files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ONE_BACKEND = True  # where the outputs go is tested, not a kernel

ENV = {**os.environ, "ONNXOP_BACKEND": os.environ.get("ONNXOP_BACKEND", "vulkan")}


def onnxop(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "onnxop_cli", *argv], cwd=cwd, env=ENV, capture_output=True,
                          text=True, timeout=120)


def split_model(path: Path, parts: int, rows: int, graph: bool) -> None:
    """Split of ``x`` (rows x 3 float32) into ``parts`` outputs y0, y1, ...;
    ``graph``: behind an Identity, so the model is a graph of two nodes."""
    import onnx
    from onnx import TensorProto, helper

    outs = [f"y{k}" for k in range(parts)]
    nodes = [helper.make_node("Split", ["t" if graph else "x"], outs, axis=0, num_outputs=parts)]
    if graph:
        nodes.insert(0, helper.make_node("Identity", ["x"], ["t"]))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 3])],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outs])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), path)


def loaded(path: Path) -> np.ndarray:
    if path.suffix == ".pb":
        from onnx import TensorProto, numpy_helper

        t = TensorProto()
        t.ParseFromString(path.read_bytes())
        return numpy_helper.to_array(t)
    return np.load(path)


@pytest.mark.parametrize("rows", [0, 4], ids=["zero-size", "four-rows"])
@pytest.mark.parametrize("suffix", [".npy", ".pb"])
@pytest.mark.parametrize("how", ["run-one-node", "run-graph", "split"])
def test_one_part_to_a_file_writes_the_file(tmp_path, how, suffix, rows):
    x = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)
    np.save(tmp_path / "x.npy", x)
    if how == "split":
        argv = ["split", "x.npy", "--num-outputs", "1"]
    else:
        split_model(tmp_path / "m.onnx", 1, rows, graph=how == "run-graph")
        argv = ["run", "m.onnx", "x.npy"]
    r = onnxop(tmp_path, *argv, "-o", f"y{suffix}")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / f"y{suffix}").is_file(), sorted(p.name for p in tmp_path.iterdir())
    got = loaded(tmp_path / f"y{suffix}")
    assert got.shape == x.shape and got.tobytes() == x.tobytes()
    assert f"wrote y{suffix}" in r.stdout, r.stdout


@pytest.mark.parametrize("parts", [1, 2])
@pytest.mark.parametrize("to", ["out/", "out.npz"])
@pytest.mark.parametrize("how", ["run-one-node", "run-graph", "split"])
def test_every_zero_size_output_is_written(tmp_path, how, to, parts):
    np.save(tmp_path / "x.npy", np.zeros((0, 3), np.float32))
    if how == "split":
        argv = ["split", "x.npy", "--num-outputs", str(parts)]
    else:
        split_model(tmp_path / "m.onnx", parts, 0, graph=how == "run-graph")
        argv = ["run", "m.onnx", "x.npy"]
    r = onnxop(tmp_path, *argv, "-o", to)
    assert r.returncode == 0, r.stderr
    if to == "out.npz":
        with np.load(tmp_path / "out.npz") as z:
            arrays = [z[k] for k in z.files]
    else:
        arrays = [np.load(p) for p in sorted((tmp_path / "out").iterdir())]
    assert [a.shape for a in arrays] == [(0, 3)] * parts
    assert r.stdout.count("wrote") == parts, r.stdout
