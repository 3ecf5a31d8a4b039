"""core/inference.py: onnx's shape inference in a child process, forked or the kept worker, whose crash
(SIGSEGV: a GatherND of indices declared [2, -1], onnx 1.23) is raised as ``Crashed`` and not this
process's end, and whose next answer is the next model's (a new worker after one died)."""

from __future__ import annotations

import signal

import pytest
from onnx import TensorProto as TP
from onnx import helper

from onnxop_cli.core import inference


def _model(last: int):
    graph = helper.make_graph([helper.make_node("GatherND", ["d", "i"], ["y"]), helper.make_node("Neg", ["y"], ["z"])],
                              "g", [helper.make_tensor_value_info("d", TP.FLOAT, [3, 2]),
                                    helper.make_tensor_value_info("i", TP.INT64, [2, last])],
                              [helper.make_tensor_value_info("z", TP.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("threaded", [(), ("sys",)], ids=["fork", "worker"])
def test_a_crash_of_inference_is_raised_and_the_next_model_inferred(monkeypatch, threaded):
    monkeypatch.setattr(inference, "_THREADED", threaded)  # ("sys",): as if an engine's threads ran here
    with pytest.raises(inference.Crashed) as crashed:
        inference.inferred_graph(_model(-1))
    assert crashed.value.signal == signal.SIGSEGV and "SIGSEGV" in str(crashed.value)
    graph = inference.inferred_graph(_model(1))
    assert [(v.name, [d.dim_value for d in v.type.tensor_type.shape.dim]) for v in graph.value_info] == [("y", [2, 2])]
    assert not graph.node and not graph.initializer  # the typed values only
    assert inference.types_of(_model(-1)).node[0].op_type == "GatherND"  # crashed: the model's own graph
