"""Every output is written where -o says, zero-size outputs included.

A Split of one part (``num_outputs=1``) has one output: ``-o FILE.npy`` (or
``.pb``) writes that file, not a folder named FILE.npy holding it, for
``onnxop run`` of a one-node model or of a graph and for the ``split``
command; ``-o DIR/`` and ``-o FILE.npz`` hold every output, however many and
however small (an input of zero rows). Commands through onnxop's entry
(tests/commands.py), real files.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from commands import Prepared

ONE_BACKEND = True  # where the outputs go is tested, not a kernel

ENV = {**os.environ, "ONNXOP_BACKEND": os.environ.get("ONNXOP_BACKEND", "vulkan")}


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


HOW = ["run-one-node", "run-graph", "split"]


def command(folder: Path, how: str, parts: int, rows: int) -> list[str]:
    """The command of ``how`` for a split of ``x.npy`` (``rows`` x 3) into ``parts``, in ``folder``."""
    folder.mkdir()
    np.save(folder / "x.npy", np.arange(rows * 3, dtype=np.float32).reshape(rows, 3))
    if how == "split":
        return ["split", "x.npy", "--num-outputs", str(parts)]
    split_model(folder / "m.onnx", parts, rows, graph=how == "run-graph")
    return ["run", "m.onnx", "x.npy"]


prepared = Prepared()  # each test's folders and commands


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict:
    """Both tests' 24 commands, in one process: name -> ((each case, its folder), its results)."""
    return prepared.run(tmp_path_factory, env=ENV)


@prepared
def one_part(tmp_path):
    cases = [(how, suffix, rows) for how in HOW for suffix in (".npy", ".pb") for rows in (0, 4)]
    commands = [(tmp_path / str(k), [*command(tmp_path / str(k), how, 1, rows), "-o", f"y{suffix}"])
                for k, (how, suffix, rows) in enumerate(cases)]
    return [(case, folder) for case, (folder, _) in zip(cases, commands)], commands


def test_one_part_to_a_file_writes_the_file(ran):
    """3 commands x .npy/.pb x zero and four rows: 12 cases, each in its own folder."""
    cases, done = ran["one_part"]
    for ((how, suffix, rows), folder), r in zip(cases, done, strict=True):
        assert r.returncode == 0, (how, suffix, rows, r.stderr)
        assert (folder / f"y{suffix}").is_file(), sorted(p.name for p in folder.iterdir())
        got = loaded(folder / f"y{suffix}")
        x = np.load(folder / "x.npy")
        assert got.shape == x.shape and got.tobytes() == x.tobytes()
        assert f"wrote y{suffix}" in r.stdout, r.stdout


@prepared
def zero_size(tmp_path):
    cases = [(how, to, parts) for how in HOW for to in ("out/", "out.npz") for parts in (1, 2)]
    commands = [(tmp_path / str(k), [*command(tmp_path / str(k), how, parts, 0), "-o", to])
                for k, (how, to, parts) in enumerate(cases)]
    return [(case, folder) for case, (folder, _) in zip(cases, commands)], commands


def test_every_zero_size_output_is_written(ran):
    """3 commands x out/ and out.npz x 1 and 2 parts: 12 cases."""
    cases, done = ran["zero_size"]
    for ((how, to, parts), folder), r in zip(cases, done, strict=True):
        assert r.returncode == 0, (how, to, parts, r.stderr)
        if to == "out.npz":
            with np.load(folder / "out.npz") as z:
                arrays = [z[k] for k in z.files]
        else:
            arrays = [np.load(p) for p in sorted((folder / "out").iterdir())]
        assert [a.shape for a in arrays] == [(0, 3)] * parts, (how, to, parts)
        assert r.stdout.count("wrote") == parts, r.stdout
