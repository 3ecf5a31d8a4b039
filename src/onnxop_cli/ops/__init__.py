"""Operators, one module each, one class per change of rule (type lists are
data: each module's TYPES); the registry.

``SPECS`` is the one list of operators: the CLI makes a command of each
(cli/ops.py), the API a function, conformance and doc-examples run them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import OpError, UsageError
from . import depth_to_space, expand, flatten, identity, reshape, slice, space_to_depth, squeeze, tile, transpose
from . import unsqueeze
from . import compress, concat, fills, one_hot, pad, selection, shape, split, trilu, where
from . import gather, gather_elements, gather_nd, reverse_sequence, scatter, scatter_elements, scatter_nd
from . import nonzero, resize, tensor_scatter, upsample
from . import arithmetic, cast, logic, range_op
from .base import check_type, Node, OpVersion
from .spec import OpSpec, Param
from ..core.region import Access, c_strides, f_strides

if TYPE_CHECKING:
    from ..core.tensor import DType

LATEST_OPSET = 28
SPECS: dict[str, OpSpec] = {
    spec.op_type: spec
    for spec in (
        *(m.SPEC for m in (
            flatten, unsqueeze, identity, reshape, squeeze, transpose, expand, slice, tile,
            depth_to_space, space_to_depth,
            concat, split, where, pad, trilu,
            gather, gather_elements, gather_nd, scatter_elements, scatter_nd, scatter, tensor_scatter,
            reverse_sequence, nonzero, resize, upsample,
        )),
        fills.CONSTANT_OF_SHAPE, fills.EYE_LIKE, shape.SHAPE, shape.SIZE,
        selection.CENTER_CROP_PAD, compress.COMPRESS, one_hot.ONE_HOT, selection.BITCAST,
        *arithmetic.SPECS, *logic.SPECS, *cast.SPECS, range_op.SPEC,
    )
}
OPERATORS: dict[str, tuple[type[OpVersion], ...]] = {name: spec.versions for name, spec in SPECS.items()}
for _versions in OPERATORS.values():
    for _version in _versions:
        _version.all_versions = _versions  # check_type (ops/base.py) names the version that added a type


def op_version(op_type: str, opset: int = LATEST_OPSET) -> type[OpVersion]:
    """The version of ``op_type`` that applies at ``opset``."""
    versions = OPERATORS.get(op_type)
    if versions is None:
        raise UsageError(f"unsupported operator {op_type!r}; onnxop runs {', '.join(OPERATORS)}")
    if not 1 <= opset <= LATEST_OPSET:
        raise UsageError(f"opset {opset} is out of range [1, {LATEST_OPSET}]")
    found = [v for v in versions if v.since_version <= opset]
    if not found:
        raise UsageError(f"{op_type} does not exist before opset {versions[0].since_version} (asked for {opset})")
    return found[-1]


def make_node(op_type: str, opset: int = LATEST_OPSET, **values: object) -> Node:
    """The node of ``op_type`` at ``opset`` with the parameters given (None:
    not given). Each goes where that opset keeps it, attribute or input; one
    the opset does not have, or a required one missing, is refused."""
    op = op_version(op_type, opset)
    label = f"{op.op_type}-{op.since_version}"
    attributes: dict[str, object] = {}
    inputs: dict[str, tuple[int, ...]] = {}
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            value = [int(v) for v in value]
        if name in op.attribute_names:
            attributes[name] = value
        elif name in op.inputs[1:]:
            inputs[name] = tuple(value) if isinstance(value, list) else (int(value),)  # type: ignore[call-overload]
        else:
            have = ", ".join(op.params()) or "no parameters"
            where = _where_else(op_type, name)
            raise UsageError(f"{label} (opset {opset}) has no {name} (it takes {have}){where}")
    missing = [p for p in op.params() if p not in op.optional and p not in attributes and p not in inputs]
    if missing:
        raise UsageError(f"{label} needs {' and '.join(missing)}")
    return Node(op, attributes, inputs, opset=opset)


def _where_else(op_type: str, name: str) -> str:
    versions = [v for v in OPERATORS[op_type] if name in v.params()]
    if not versions:
        return ""
    first, last = versions[0], versions[-1]
    later = [v for v in OPERATORS[op_type] if v.since_version > last.since_version]
    upto = f" to {later[0].since_version - 1}" if later else "+"
    return f"; {name} is in opsets {first.since_version}{upto}"


def flatten_node(axis: int | None = None, opset: int = LATEST_OPSET) -> Node:
    return make_node("Flatten", opset, axis=None if axis is None else int(axis))


def unsqueeze_node(axes, opset: int = LATEST_OPSET) -> Node:
    return make_node("Unsqueeze", opset, axes=[int(a) for a in axes])


__all__ = [
    "Node", "OpVersion", "OpSpec", "Param", "Access", "LATEST_OPSET", "OPERATORS", "SPECS", "op_version",
    "make_node", "flatten_node", "unsqueeze_node", "check_type", "c_strides", "f_strides",
]
