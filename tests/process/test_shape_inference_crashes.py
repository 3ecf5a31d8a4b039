"""Models on which onnx's C++ shape inference (1.23) dies of SIGSEGV: ``onnxop run`` asks it which nodes
are onnxop's (ops/nodekinds.value_types), and the crash took onnxop with it (exit 139, no message). It is
asked in a child process now (core/inference.py), and the run goes on with what the model declares.

Real processes: a crash here would end the test's. Triggers found by onnx's issues and a fuzz of one-node
models (docs/safety-inputs.md lists them): an EyeLike with a dtype reading a value inference cannot type
(a com.microsoft node's output, a Split-18 given neither split nor num_outputs), a GatherND whose indices
declare a negative last dimension."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from commands import run_commands


def _save(path, nodes, inputs, outputs, initializers=(), opsets=(("", 21),)) -> None:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(*v) for v in inputs],
                              [helper.make_tensor_value_info(*v) for v in outputs], list(initializers))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets]), path)


def test_a_model_that_crashes_shape_inference_is_refused_or_run(tmp_path):
    """com.microsoft.Gelu -> EyeLike(dtype): the plain run refuses the Gelu in its one line, exit 2 (it was
    exit 139 and nothing printed); --others runs it on onnxruntime and the EyeLike here. The GatherND of
    indices declared [2, -1] runs and gives numpy's gather. The first command forks for inference (no engine
    loaded yet); those after it, in a process holding wgpu's threads, ask the kept worker, whose crash on
    the second model is followed by a new worker for the third (the Split-18 that a check named before)."""
    _save(tmp_path / "gelu.onnx", [helper.make_node("Gelu", ["x"], ["g"], domain="com.microsoft"),
                                   helper.make_node("EyeLike", ["g"], ["e"], dtype=TP.INT8)],
          [("x", TP.FLOAT, [2, 3])], [("e", TP.INT8, [2, 3])], opsets=(("", 21), ("com.microsoft", 1)))
    _save(tmp_path / "gather.onnx", [helper.make_node("GatherND", ["d", "i"], ["y"])],
          [("d", TP.FLOAT, [3, 2]), ("i", TP.INT64, [2, -1])], [("y", TP.FLOAT, None)])
    _save(tmp_path / "split.onnx", [helper.make_node("Split", ["c"], ["a", "b"], axis=0),
                                    helper.make_node("EyeLike", ["a"], ["e"], dtype=TP.INT8)],
          [], [("e", TP.INT8, [1, 2])], [numpy_helper.from_array(np.zeros((2, 2), np.int8), "c")], (("", 18),))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    d = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "d.npy", d)
    np.save(tmp_path / "i.npy", np.array([[0], [2]], np.int64))
    alone = subprocess.run([sys.executable, "-m", "onnxop_cli", "run", "gelu.onnx", "x.npy", "-o", "e.npy"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert (alone.returncode, alone.stdout) == (2, ""), alone
    assert alone.stderr == ("onnxop: error: gelu.onnx: 1 node(s) onnxop does not run: com.microsoft.Gelu x1; "
                            "--others onnxruntime runs them on onnxruntime (--others reference: on onnx.reference)\n")
    runs = run_commands([(tmp_path, ["run", "gather.onnx", "d.npy", "i.npy", "-o", "y.npy"]),
                         (tmp_path, ["run", "gelu.onnx", "x.npy", "--others", "onnxruntime", "-o", "e.npy"]),
                         (tmp_path, ["run", "split.onnx", "-o", "s.npy"])], process=True)
    for r in runs:
        assert r.returncode == 0 and r.stderr == "", r
    assert np.load(tmp_path / "y.npy").tobytes() == d[[0, 2]].tobytes()
    assert np.load(tmp_path / "e.npy").tolist() == np.eye(2, 3, dtype=np.int8).tolist()
    assert np.load(tmp_path / "s.npy").tolist() == [[1, 0]]
