"""What a runtime comparison says once per operator about a case onnxop
leaves out of scope: OutOfScope's ``reason``, a field set where the refusal
is raised (not read back out of the message), without node or input names."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from onnxop_cli.core.tensor import Tensor
from onnxop_cli.docs.runtimes.base import Lacks
from onnxop_cli.docs.runtimes.onnxop import OnnxopRuntime


def one_node(node, inputs, out_type, opset):
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", out_type, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def refusal(model, feeds, tmp_path) -> str:
    loaded = OnnxopRuntime().load(model, tmp_path)
    with pytest.raises(Lacks) as e:
        loaded.session.run([Tensor.from_numpy(a) for a in feeds])
    return str(e.value)


@pytest.mark.parametrize("dtype, name", [(np.float16, "float16"), (np.float32, "float32")])
def test_float_arithmetic_names_the_type_once(tmp_path, dtype, name):
    onnx_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    inputs = [helper.make_tensor_value_info(n, onnx_type, [2]) for n in ("the_a", "the_b")]
    model = one_node(helper.make_node("Add", ["the_a", "the_b"], ["y"], name="node_name"), inputs, onnx_type, 14)
    got = refusal(model, [np.ones(2, dtype), np.ones(2, dtype)], tmp_path)
    assert got == f"{name} inputs: out of scope"


def test_an_arithmetic_mode_names_the_mode(tmp_path):
    inputs = [helper.make_tensor_value_info("x", TensorProto.INT32, [1, 1, 2, 2]),
              helper.make_tensor_value_info("scales", TensorProto.FLOAT, [4])]
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear", name="node_name")
    model = one_node(node, inputs, TensorProto.INT32, 19)
    got = refusal(model, [np.arange(4, dtype=np.int32).reshape(1, 1, 2, 2),
                          np.array([1, 1, 2, 2], np.float32)], tmp_path)
    assert got == "mode 'linear': out of scope"
