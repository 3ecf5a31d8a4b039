"""A tensor-operator output of 64 MiB or more whose inputs are not all on
the device is made only when it is read (core/graph_steps.py's LAZY_BYTES):
it must keep alive every device value its kernel reads. A Where that takes
the select piece (Y broadcast along a middle axis: no run form) reads Y, here
a Concat's result on the device, through the piece's *other* side; when only
the source and mask sides were counted, Y's buffer was released before the
output was made, and ``onnxop run -o`` stopped with an internal error.
onnxop's entry (tests/commands.py, in this process), real files; the threshold is lowered to 64 KiB
for it (as tests/gpu/test_shown_chains.py lowers it), so a 64 KiB output is one made when read --
the size is not what is tested, the threshold's side of it is."""

from __future__ import annotations

import os

import numpy as np
from onnx import TensorProto, helper, save

from commands import run_commands
from onnxop_cli.core import graph, graph_steps

ONE_BACKEND = True  # what stays alive is tested, not a kernel
ENV = {**os.environ, "ONNXOP_BACKEND": os.environ.get("ONNXOP_BACKEND", "vulkan")}
A, B, C = 4, 16, 256  # the float32 output: 64 KiB, the threshold below
LAZY_BYTES = A * B * C * 4


def test_a_select_made_when_read_keeps_its_other_side(tmp_path, monkeypatch):
    monkeypatch.setattr(graph_steps, "LAZY_BYTES", LAZY_BYTES)
    monkeypatch.setattr(graph, "LAZY_BYTES", LAZY_BYTES)
    v = helper.make_tensor_value_info
    nodes = [helper.make_node("Concat", ["y1", "y2"], ["y"], axis=0), helper.make_node("Where", ["c", "x", "y"], ["out"])]
    model_graph = helper.make_graph(nodes, "g", [v("c", TensorProto.BOOL, [1, B, C]), v("x", TensorProto.FLOAT, [1, B, C]),
                                           v("y1", TensorProto.FLOAT, [A // 2, 1, C]),
                                           v("y2", TensorProto.FLOAT, [A // 2, 1, C])],
                              [v("out", TensorProto.FLOAT, [A, B, C])])
    save(helper.make_model(model_graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    rng = np.random.default_rng(20261206)
    feeds = {"c": rng.random((1, B, C)) < 0.5, "x": rng.standard_normal((1, B, C), dtype=np.float32),
             "y1": rng.standard_normal((A // 2, 1, C), dtype=np.float32),
             "y2": rng.standard_normal((A // 2, 1, C), dtype=np.float32)}
    for name, a in feeds.items():
        np.save(tmp_path / f"{name}.npy", a)
    (r,) = run_commands([(tmp_path, ["run", "m.onnx", *(f"{n}.npy" for n in feeds), "-o", "out.npy"])], env=ENV)
    assert r.returncode == 0, r.stderr
    want = np.where(feeds["c"], feeds["x"], np.concatenate([feeds["y1"], feeds["y2"]]))
    assert np.load(tmp_path / "out.npy").tobytes() == want.tobytes()
