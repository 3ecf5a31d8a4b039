"""Operators, one module each, one class per opset change."""

from __future__ import annotations

from ..errors import UsageError
from . import flatten, unsqueeze
from .base import Node, OpVersion

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
    return Node(op_version("Flatten", opset), attrs)


def unsqueeze_node(axes, opset: int = LATEST_OPSET) -> Node:
    op = op_version("Unsqueeze", opset)
    axes = tuple(int(a) for a in axes)
    attrs = {} if op.axes_is_input else {"axes": list(axes)}
    return Node(op, attrs, axes)


__all__ = ["Node", "OpVersion", "LATEST_OPSET", "op_version", "flatten_node", "unsqueeze_node"]
