"""A graph is walked in loops, never by recursion over its depth: chains of
hundreds of nodes (views whose results must be gathered -- a Transpose then
a Reshape that merges the transposed axes -- mixed with operators of several
inputs or outputs: Concat, Split, Gather) run through onnxop's entry
(printed, -o, --json and ``show --graph``: tests/commands.py;
the ONNX backend in a process), each exactly as onnx.reference runs them. Python's recursion limit
(1,000 frames by default) is set for them to the frames already on the stack plus HEADROOM: every
chain here is longer than that headroom, so a walk of one frame a node (or a gather step) runs out
of it, as a walk of a real model's thousands of nodes would run out of the default limit. The
depth is what is tested, not the count: onnxop's cost grows with the nodes, onnx.reference's is
small beside it."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from commands import run_commands

ENV = {**os.environ, "ONNXOP_BACKEND": "vulkan"}
HEADROOM = 250  # frames above the caller's that onnxop may use (it needs under 100)
PAIRS = 300  # Transpose + Reshape pairs in the longest unbroken chain of gathers: more steps than HEADROOM
MIXED = 40  # Concat, Split, Gather and 3 pairs, after each other: 360 nodes in one chain, more than HEADROOM


# The four commands the tests below check, run once, in order, in one onnxop process (tests/commands.py)
COMMANDS = {
    "written": ["run", "deep.onnx", "x.npy", "-o", "out/"],
    "printed": ["run", "deep.onnx", "x.npy"],
    "json": ["--json", "run", "deep.onnx", "x.npy"],
    "graph": ["show", "deep.onnx", "--graph"],
}


def _pairs(nodes: list, start: str, prefix: str, shape: str, n: int) -> str:
    """``n`` Transpose + Reshape pairs after ``start``: each Reshape merges
    transposed axes, so each pair is a gather step reading the one before."""
    cur = start
    for i in range(n):
        nodes.append(helper.make_node("Transpose", [cur], [f"{prefix}t{i}"], perm=[1, 0]))
        nodes.append(helper.make_node("Reshape", [f"{prefix}t{i}", shape], [f"{prefix}r{i}"]))
        cur = f"{prefix}r{i}"
    return cur


def deep_model() -> onnx.ModelProto:
    """An int64 (2, 3) constant through PAIRS gather steps: read on the host
    as a Reshape's shape, and concatenated (made on the device); x (2, 3)
    float32 through Concat, Split, Gather and gathers, MIXED times; a
    string tensor through a few gathers."""
    nodes: list = []
    idx = np.arange(6)  # where each element of the constant ends up: its first two are (2, 3) at the end
    for _ in range(PAIRS):
        idx = idx.reshape(2, 3).T.reshape(-1)
    c = np.full(6, 7, dtype=np.int64)
    c[idx[0]], c[idx[1]] = 2, 3
    nodes.append(helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(c.reshape(2, 3), "c")))
    end = _pairs(nodes, "c", "s", "shp", PAIRS)
    nodes.append(helper.make_node("Concat", [end, end], ["k"], axis=0))
    nodes.append(helper.make_node("Reshape", [end, "six"], ["flat"]))
    nodes.append(helper.make_node("Slice", ["flat", "zero", "two"], ["dims"]))
    nodes.append(helper.make_node("Reshape", ["x", "dims"], ["x0"]))
    cur = "x0"
    for i in range(MIXED):
        nodes.append(helper.make_node("Concat", [cur, cur], [f"c{i}"], axis=0))
        nodes.append(helper.make_node("Split", [f"c{i}"], [f"h{i}", f"l{i}"], axis=0, num_outputs=2))
        nodes.append(helper.make_node("Gather", [f"l{i}", "perm"], [f"g{i}"], axis=1))
        cur = _pairs(nodes, f"g{i}", f"b{i}_", "shp", 3)
    nodes.append(helper.make_node("Identity", [cur], ["y"]))
    words = np.array([["a", "bb", "c\nd"], ["", "e", "ff"]], dtype=object)
    nodes.append(helper.make_node("Constant", [], ["w"], value=numpy_helper.from_array(words, "w")))
    nodes.append(helper.make_node("Identity", [_pairs(nodes, "w", "w", "shp", 3)], ["z"]))
    inits = [numpy_helper.from_array(np.array(v, dtype=np.int64), n)
             for n, v in (("shp", [2, 3]), ("six", [6]), ("zero", [0]), ("two", [2]), ("perm", [2, 0, 1]))]
    outputs = [helper.make_tensor_value_info(n, t, shape) for n, t, shape in
               (("y", TensorProto.FLOAT, [2, 3]), ("k", TensorProto.INT64, [4, 3]), ("z", TensorProto.STRING, [2, 3]))]
    g = helper.make_graph(nodes, "deep", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


@pytest.fixture(scope="module")
def deep(tmp_path_factory):
    folder = tmp_path_factory.mktemp("deep")
    model = deep_model()
    assert len(model.graph.node) > 2 * PAIRS + 9 * MIXED > 3 * HEADROOM
    onnx.save(model, folder / "deep.onnx")
    x = np.arange(6, dtype=np.float32).reshape(2, 3) * 1.5 - 2
    np.save(folder / "x.npy", x)
    return folder, ReferenceEvaluator(model).run(None, {"x": x}), len(model.graph.node)


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    if want.dtype == object:
        return got.tolist() == want.tolist()
    return got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()


@pytest.fixture(scope="module")
def ran(deep) -> dict[str, subprocess.CompletedProcess]:
    """The commands run in this process (tests/commands.py) with HEADROOM frames to use."""
    folder = deep[0]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + HEADROOM)
    try:
        done = run_commands([(folder, argv) for argv in COMMANDS.values()], text=False, env=ENV)
    finally:
        sys.setrecursionlimit(limit)
    return dict(zip(COMMANDS, done))


def test_run_writes_a_deep_graph_exactly(deep, ran):
    folder, want, _ = deep
    done = ran["written"]
    assert done.returncode == 0, done.stderr.decode()
    for name, w in zip("ykz", want):
        assert _same(np.load(folder / "out" / f"{name}.npy"), w), name


def test_run_prints_a_deep_graph(deep, ran):
    folder, want, n = deep
    done = ran["printed"]
    assert done.returncode == 0, done.stderr.decode()
    text = done.stdout.decode()
    assert f"Graph: {n} nodes, opset 18" in text
    printed = text.split("Outputs:")[1].replace(" ", "")
    for w in want[:2]:
        assert np.array2string(w, separator=", ").replace(" ", "") in printed
    assert "'c\\nd'" in printed  # the string output, its newline quoted


def test_run_json_of_a_deep_graph(deep, ran):
    folder, want, n = deep
    done = ran["json"]
    assert done.returncode == 0, done.stderr.decode()
    doc = json.loads(done.stdout)
    assert len(doc["nodes"]) == n
    assert [(o["name"], o["shape"], o["dtype"]) for o in doc["runs"][0]["outputs"]] == [
        (name, list(w.shape), w.dtype.name) for name, w in zip("ykz", want)]


def test_show_graph_lists_every_node(deep, ran):
    folder, _, n = deep
    done = ran["graph"]
    assert done.returncode == 0, done.stderr.decode()
    text = done.stdout.decode()
    assert f"{n} nodes" in text.splitlines()[0]
    assert f"    {n - 1}  Identity (opset 18)  " in text


def test_backend_runs_a_deep_graph(deep):
    folder, want, _ = deep
    code = ("import inspect, sys, numpy as np, onnx, onnxop_cli.backend as b\n"
            f"sys.setrecursionlimit(len(inspect.stack(0)) + {HEADROOM})\n"
            "y, k, z = b.prepare(onnx.load('deep.onnx')).run({'x': np.load('x.npy')})\n"
            "np.savez('by.npz', y=y, k=k); print(z.tolist())\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, env=ENV, timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    got = np.load(folder / "by.npz")
    assert _same(got["y"], want[0]) and _same(got["k"], want[1])
    assert done.stdout.decode().strip() == str(want[2].tolist())
