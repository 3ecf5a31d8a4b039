"""Real exports at old opsets, through ``onnxop run``'s entry (the three tests' commands: tests/commands.py).

onnx's own PyTorch node tests (onnx/backend/test/data/pytorch-*) are opset 6
and 9 models: every one whose nodes onnxop runs goes through ``onnxop run
MODEL test_data_set_0 --check test_data_set_0``. PyTorch's GLU export
(test_GLU) starts with Split-2 at axis -1, then Sigmoid and Mul, which
onnxop does not run: its Split node, cut out as a model of its own, runs on
test_GLU's input and is checked against onnx.reference's outputs. OneHot-9
left at its own default axis (-1) runs too. (The sweep of every operator,
opset and negative axis is tests/gpu/test_negative_axes.py.)
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from commands import run_commands


# The commands and the opset rules are under test, not a kernel: one backend (conftest).
ONE_BACKEND = True

DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
PYTORCH = sorted(p for p in DATA.glob("pytorch-*/*") if (p / "model.onnx").is_file())


def runs_whole(folder: Path) -> bool:
    """onnxop runs every node, at its types too (float Add is not onnxop's: ops/nodekinds.py)."""
    from onnxop_cli.ops.nodekinds import others_in

    return others_in(onnx.load(folder / "model.onnx"), unknown=False) == []


RUNNABLE = [p for p in PYTORCH if runs_whole(p)]


def _env(backend: str) -> dict:
    return {**os.environ, "ONNXOP_BACKEND": backend}


def test_the_pytorch_folders_that_use_these_operators_are_found():
    names = {p.name for p in RUNNABLE}
    assert {"test_operator_chunk", "test_operator_concat2", "test_operator_flatten", "test_operator_index",
            "test_operator_view", "test_Embedding", "test_PixelShuffle"} <= names
    glu = onnx.load(DATA / "pytorch-converted" / "test_GLU" / "model.onnx")
    assert glu.opset_import[0].version == 6
    assert [(n.op_type, n.attribute[0].i) for n in glu.graph.node[:1]] == [("Split", -1)]


def _pytorch(tmp: Path) -> list[tuple]:
    """Each of RUNNABLE, from a folder of its own that stays empty."""
    commands = []
    for folder in RUNNABLE:
        data = folder / "test_data_set_0"
        (tmp / folder.name).mkdir()
        commands.append((tmp / folder.name, ["run", folder / "model.onnx", data, "--check", data]))
    return commands


def _cut(m: onnx.ModelProto, count: int, outputs: list[np.ndarray]) -> onnx.ModelProto:
    """The model's first ``count`` nodes as a model whose outputs are theirs (typed as ``outputs``)."""
    nodes = list(m.graph.node[:count])
    names = [o for n in nodes for o in n.output]
    graph = helper.make_graph(nodes, "cut", list(m.graph.input), [
        helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
        for name, a in zip(names, outputs)])
    return helper.make_model(graph, opset_imports=list(m.opset_import), ir_version=m.ir_version)


def _glu(tmp: Path) -> list[tuple]:
    """test_GLU's and test_GLU_dim's Split, each checked against onnx.reference's outputs."""
    from onnx.reference import ReferenceEvaluator

    commands = []
    for name in ("test_GLU", "test_GLU_dim"):
        folder = DATA / "pytorch-converted" / name
        m = onnx.load(folder / "model.onnx")
        x = numpy_helper.to_array(onnx.load_tensor(str(folder / "test_data_set_0" / "input_0.pb")))
        untyped = helper.make_model(helper.make_graph(list(m.graph.node[:1]), "cut", list(m.graph.input), [
            onnx.ValueInfoProto(name=o) for o in m.graph.node[0].output]), opset_imports=list(m.opset_import))
        want = ReferenceEvaluator(untyped).run(None, {m.graph.input[0].name: x})
        here = tmp / name
        expected = here / "expected"
        expected.mkdir(parents=True)
        onnx.save(_cut(m, 1, want), here / "split.onnx")
        for k, a in enumerate(want):
            onnx.save_tensor(numpy_helper.from_array(a), str(expected / f"output_{k}.pb"))
        commands.append((here, ["run", "split.onnx", folder / "test_data_set_0", "--check", expected]))
    return commands


INDICES = np.array([[0, 3], [-1, 7]], np.int64)


def _one_hot_model() -> onnx.ModelProto:
    node = helper.make_node("OneHot", ["i", "d", "v"], ["y"])  # axis left out: OneHot-9's default, -1
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("i", onnx.TensorProto.INT64, [2, 2])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 2, 5])],
        [numpy_helper.from_array(np.array(5, np.int64), "d"), numpy_helper.from_array(np.array([0.5, 3.0], np.float32), "v")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)], ir_version=7)


def _one_hot(tmp: Path) -> list[tuple]:
    (tmp / "one_hot").mkdir()
    onnx.save(_one_hot_model(), tmp / "one_hot" / "one_hot.onnx")
    np.save(tmp / "one_hot" / "i.npy", INDICES)
    return [(tmp / "one_hot", ["run", "one_hot.onnx", "i.npy", "-q", "-o", "y.npy"])]


@pytest.fixture(scope="module")
def ran(tmp_path_factory, backend) -> dict[str, list]:
    """The three tests' commands in one onnxop process (tests/commands.py): each group's
    (folder, argv, CompletedProcess)."""
    tmp = tmp_path_factory.mktemp("older")
    groups = {name: make(tmp) for name, make in (("pytorch", _pytorch), ("glu", _glu), ("one_hot", _one_hot))}
    done = iter(run_commands([c for commands in groups.values() for c in commands], env=_env(backend)))
    return {name: [(*c, next(done)) for c in commands] for name, commands in groups.items()}


def test_every_pytorch_node_test_that_onnxop_runs_runs_and_checks(ran):
    for (here, _, done), folder in zip(ran["pytorch"], RUNNABLE, strict=True):
        assert done.returncode == 0, (folder.name, done.stderr)
        assert done.stdout.endswith(f"equal {folder / 'test_data_set_0'}'s output_*.pb, bit for bit\n"), done.stdout
        assert list(here.iterdir()) == []


def test_the_split_of_pytorch_s_glu_export_runs(ran):
    """test_GLU and test_GLU_dim."""
    assert len(ran["glu"]) == 2
    for here, _, done in ran["glu"]:
        assert done.returncode == 0, done.stderr
        assert done.stdout == f"Split: 2 output(s) equal {here / 'expected'}'s output_*.pb, bit for bit\n"


def test_one_hot_9_at_its_own_default_axis(ran):
    from onnx.reference import ReferenceEvaluator

    ((here, _, done),) = ran["one_hot"]
    assert done.returncode == 0, done.stderr
    want = ReferenceEvaluator(_one_hot_model()).run(None, {"i": INDICES})[0]
    got = np.load(here / "y.npy")
    assert got.shape == want.shape == (2, 2, 5) and got.tobytes() == want.tobytes()
