"""One-node ONNX models of the operators with tensor inputs (ops/tensor_op.py):
the node's attributes from the model, every input a tensor (a file or an
initializer), every output compared. Used by ``onnxop conformance`` (and
``onnxop run`` can use it the same way)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

from ..errors import OpError

if TYPE_CHECKING:
    from . import Node
    from ..core.tensor import Tensor


def is_tensor_op(op) -> bool:
    from .tensor_op import TensorOp

    return issubclass(op, TensorOp)


def build_tensor_node(node_proto, opset: int) -> Node:
    """The node: attributes as the model gives them (strings decoded,
    tensors as numpy arrays); its output count from the model."""
    from . import op_version
    from .attributes import attribute_value
    from .base import Node

    op = op_version(node_proto.op_type, opset)
    label = f"{op.op_type}-{op.since_version}"
    attributes: dict[str, object] = {}
    for a in node_proto.attribute:
        if a.name not in op.attribute_names:
            raise OpError(f"{label} has no attribute {a.name!r}")
        value = attribute_value(a)
        if isinstance(value, bytes):
            value = value.decode()
        elif hasattr(value, "data_type") and hasattr(value, "dims"):  # a TensorProto (ConstantOfShape's value)
            from onnx import numpy_helper

            value = numpy_helper.to_array(value)
        elif isinstance(value, list):
            value = [int(v) if isinstance(v, int) else v for v in value]
        attributes[a.name] = value
    return Node(op, attributes, opset=opset, outputs=len(node_proto.output))


def node_inputs(node_proto, tensor: Callable[[str], Optional[Tensor]]) -> list:
    """The node's input tensors in order (None where an optional one is left out)."""
    out = [tensor(name) if name else None for name in node_proto.input]
    while out and out[-1] is None:
        out.pop()
    return out
