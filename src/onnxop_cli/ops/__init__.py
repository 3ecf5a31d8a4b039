"""Operators, one module each, one class per opset change."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import OpError, UsageError
from . import flatten, unsqueeze
from .base import Node, OpVersion

if TYPE_CHECKING:
    from ..tensor import DType

LATEST_OPSET = 25
OPERATORS: dict[str, tuple[type[OpVersion], ...]] = {
    "Flatten": flatten.VERSIONS,
    "Unsqueeze": unsqueeze.VERSIONS,
}


def op_version(op_type: str, opset: int = LATEST_OPSET) -> type[OpVersion]:
    """The version of ``op_type`` that applies at ``opset``."""
    versions = OPERATORS.get(op_type)
    if versions is None:
        raise UsageError(f"unsupported operator {op_type!r}; onnxop runs {', '.join(OPERATORS)}")
    if not 1 <= opset <= LATEST_OPSET:
        raise UsageError(f"opset {opset} is out of range [1, {LATEST_OPSET}]")
    return [v for v in versions if v.since_version <= opset][-1]


def flatten_node(axis: int | None = None, opset: int = LATEST_OPSET) -> Node:
    attrs = {} if axis is None else {"axis": int(axis)}
    return Node(op_version("Flatten", opset), attrs, opset=opset)


def unsqueeze_node(axes, opset: int = LATEST_OPSET) -> Node:
    op = op_version("Unsqueeze", opset)
    axes = tuple(int(a) for a in axes)
    attrs = {} if op.axes_is_input else {"axes": list(axes)}
    return Node(op, attrs, axes, opset=opset)


def check_type(node: Node, dtype: DType) -> None:
    """Refuse a tensor type the node's operator version does not allow, naming
    the version (and opset) that introduced it."""
    op = node.op
    if dtype.onnx_name in op.allowed_types():
        return
    name = "string" if dtype.is_string else dtype.name  # numpy calls it "object"
    opset = node.opset if node.opset is not None else op.since_version
    where = f"opset {opset} ({op.op_type}-{op.since_version})"
    later = [v for v in OPERATORS[op.op_type] if dtype.onnx_name in v.allowed_types()]
    if not later:
        raise OpError(f"{op.op_type}: no opset allows {name}")
    first = later[0].since_version
    raise OpError(
        f"{op.op_type}: {where} does not allow {name}; "
        f"{name} was added in {op.op_type}-{first} (opset {first})"
    )


__all__ = [
    "Node", "OpVersion", "LATEST_OPSET", "op_version", "flatten_node", "unsqueeze_node", "check_type",
]
