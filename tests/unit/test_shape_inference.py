"""core/inference.py: onnx's shape inference in a child process, forked or the kept worker, whose crash
(SIGSEGV: an EyeLike with a dtype over a com.microsoft node's untyped output, onnx 1.23) is raised as
``Crashed`` and not this process's end, and whose next answer is the next model's (a new worker after one
died). The crash is a null pointer's (address 0x28 under gdb), so every run has it; a GatherND of indices
declared [2, -1] crashes on a stray pointer (0x555000000012), which a forked pytest worker's heap once let
pass, so it is only the model that is inferred after."""

from __future__ import annotations

import signal

import pytest
from onnx import TensorProto as TP
from onnx import helper

from onnxop_cli.core import inference


def _crashing():
    graph = helper.make_graph([helper.make_node("Gelu", ["x"], ["g"], domain="com.microsoft"),
                               helper.make_node("EyeLike", ["g"], ["e"], dtype=TP.INT8)],
                              "g", [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("e", TP.INT8, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])


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
        inference.inferred_graph(_crashing())
    assert crashed.value.signal == signal.SIGSEGV and "SIGSEGV" in str(crashed.value)
    graph = inference.inferred_graph(_model(1))
    assert [(v.name, [d.dim_value for d in v.type.tensor_type.shape.dim]) for v in graph.value_info] == [("y", [2, 2])]
    assert not graph.node and not graph.initializer  # the typed values only
    assert inference.types_of(_crashing()).node[1].op_type == "EyeLike"  # crashed: the model's own graph
