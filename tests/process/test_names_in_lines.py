"""Names from files never forge a line, in every command that prints them.

A model whose input, output and node names hold "\\nonnxop: error: INJECTED",
an .npz member, a tensor file and a node-test folder whose paths hold it, and
an ONNX doc page named with it: ``run`` (printed, its "wrote" lines, --check),
``show --graph``, ``show`` of a model and ``--brief``, ``compare`` (files,
members, folders), ``split`` and ``doc-examples --show`` print each quoted as
``ls -b`` quotes it (render.quote): the newline as ``\\n``. Commands run
through onnxop's entry (tests/commands.py); what a terminal or a log
would receive is checked.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from commands import run_commands

ONE_BACKEND = True  # what is printed is tested, not a kernel

B = "\nonnxop: error: INJECTED"
QUOTED = "\\nonnxop: error: INJECTED"
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
ENV = {**os.environ, "ONNXOP_BACKEND": os.environ.get("ONNXOP_BACKEND", "vulkan")}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    import onnx
    from onnx import TensorProto, helper

    folder = tmp_path_factory.mktemp("names")

    def model(nodes, ins, outs, path):
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ins],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outs])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), folder / path)

    model([helper.make_node("Identity", [f"x{B}"], [f"t{B}"], name=f"first{B}"),
           helper.make_node("Transpose", [f"t{B}"], [f"y{B}"], name=f"second{B}", perm=[1, 0])],
          [f"x{B}"], [f"y{B}"], "graph.onnx")
    model([helper.make_node("Split", [f"x{B}"], [f"a{B}", f"b{B}"], name=f"cut{B}", axis=1, num_outputs=2)],
          [f"x{B}"], [f"a{B}", f"b{B}"], "split.onnx")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(folder / "x.npy", x)
    np.save(folder / f"p{B}.npy", x)
    np.savez(folder / "m.npz", **{f"m{B}": x})
    np.savez(folder / "k.npz", **{f"k{B}": x + 1})
    for side in ("fa", "fb"):  # x.npy in both, and one file each of its own
        (folder / side).mkdir()
        np.save(folder / side / "x.npy", x)
        np.save(folder / side / f"{side}{B}.npy", x)
    tests = folder / f"nt{B}"
    shutil.copytree(SAMPLES / "node" / "test_flatten_axis1", tests / "test_flatten_axis1")
    shutil.copy(SAMPLES / "Flatten-25.txt", folder / f"Flatten{B}.txt")
    return folder


CHECK = f"nt{B}/test_flatten_axis1"
CASES = {
    "run-graph-printed": ["run", "graph.onnx", "x.npy"],
    "run-graph-wrote": ["run", "graph.onnx", f"p{B}.npy", "-o", f"y{B}.npy"],
    "run-graph-folder": ["run", "graph.onnx", "x.npy", "-o", f"out{B}/"],
    "run-split-printed": ["run", "split.onnx", "x.npy"],
    "run-split-wrote": ["run", "split.onnx", "x.npy", "-o", f"s{B}.npz"],
    "run-check": ["run", f"{CHECK}/model.onnx", f"{CHECK}/test_data_set_0", "--check", f"{CHECK}/test_data_set_0"],
    "show-graph": ["show", "graph.onnx", "--graph"],
    "show-split-graph": ["show", "split.onnx", "--graph"],
    "show-model": ["show", "graph.onnx"],
    "show-brief": ["show", "--brief", f"p{B}.npy"],
    "compare-files": ["compare", f"p{B}.npy", "x.npy"],
    "compare-members": ["compare", "m.npz", "k.npz"],
    "compare-unpaired": ["compare", "fa", "fb"],
    "compare-folders": ["compare", f"{CHECK}/test_data_set_0", f"{CHECK}/test_data_set_0"],
    "split-folder": ["split", f"p{B}.npy", "--axis", "1", "--num-outputs", "3", "-o", f"parts{B}/"],
    "split-batch-printed": ["split", f"p{B}.npy", "x.npy", "--axis", "1", "--num-outputs", "3"],
    "doc-examples-show": ["doc-examples", f"Flatten{B}.txt", "--show"],
}


def test_no_name_forges_a_line(hostile, tmp_path):
    """Each of the 17 CASES, in a folder of its own (links to the hostile files)."""
    commands = []
    for case, argv in CASES.items():
        folder = tmp_path / case
        folder.mkdir()
        for f in hostile.iterdir():
            (folder / f.name).symlink_to(f)
        commands.append((folder, argv))
    for case, r in zip(CASES, run_commands(commands, env=ENV), strict=True):
        text = r.stdout + r.stderr
        forged = [line for line in text.splitlines() if line.startswith("onnxop: error: INJECTED")]
        assert not forged, (case, text)
        assert QUOTED in text, (case, text)  # the name is there, quoted
        if r.returncode:  # compare of two different tensors; anything else is one error line
            assert case.startswith("compare") and r.returncode == 1 and not r.stderr, (case, text)
