"""ONNX model nodes as onnxop nodes: attributes read strictly, constant inputs.

Shared by graph.py (``onnxop run``, ``conformance``, the backend) and the doc
examples: a node's attributes come from the model, each checked against the
type ONNX's schema gives it; each constant input (Reshape's shape, Slice's
starts, ...) from a tensor the caller provides. Everything is checked against
the operator version the model's opset selects (``ops.make_node``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..errors import InputError, OpError, UsageError

if TYPE_CHECKING:
    from . import Node
    from ..core.tensor import Tensor

ONNX_DOMAINS = ("", "ai.onnx")
INDEX_TYPES = ("int64", "int32")  # what a constant input may hold (Slice allows int32)


class Unsupported(UsageError):
    """The model is not one onnxop runs (another operator, several nodes, a newer opset)."""


def load(path: Path):
    import onnx

    try:
        return onnx.load(str(path), load_external_data=False)
    except FileNotFoundError:
        raise
    except Exception as e:  # noqa: BLE001 - protobuf raises several kinds
        raise InputError(f"{path}: not an ONNX model: {' '.join(str(e).split())[:200]}") from None


def graph_inputs(model) -> list[str]:
    """The inputs a caller must feed: graph inputs without an initializer."""
    initialized = {t.name for t in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in initialized]


def build_node(node_proto, opset: int, constant: Callable[[str], Tensor], label: str | None = None) -> Node:
    """The onnxop node for ``node_proto`` at ``opset``; ``constant(name)``
    gives the tensor of a constant input (initializer or file). ``label``
    names the node in refusals (default: its operator version)."""
    from . import make_node, op_version

    op = op_version(node_proto.op_type, opset)
    label = label or f"{op.op_type}-{op.since_version}"
    values = read_attributes(node_proto, op, label)
    if len(node_proto.input) > len(op.inputs):
        raise OpError(f"{label} takes at most {len(op.inputs)} inputs, the node has {len(node_proto.input)}")
    for schema_name, name in zip(op.inputs[1:], node_proto.input[1:]):
        if name:  # an empty name leaves an optional input out
            values[schema_name] = index_values(constant(name), f"{label} input {schema_name!r}")
    return make_node(op.op_type, opset, **values)


def read_attributes(node_proto, op, label: str) -> dict[str, object]:
    """The node's attributes as Python values, each checked against the type
    ONNX's schema gives it (an INT is an int, never a float cut short, a
    string, or a tensor), each given once, none a function's reference;
    ``label`` (the operator, or the node in a graph) starts every refusal."""
    from onnx import AttributeProto, defs, helper

    try:
        schema = defs.get_schema(op.op_type, op.since_version, "")
        expected = {name: int(a.type) for name, a in schema.attributes.items()}
    except Exception:  # noqa: BLE001 - an onnx without the schema: check names only
        expected = {}
    values: dict[str, object] = {}
    seen: set[str] = set()
    for a in node_proto.attribute:
        name = a.name
        if name in seen:
            raise OpError(f"{label}: attribute {name!r} is given twice")
        seen.add(name)
        if name not in op.attribute_names:
            raise OpError(f"{label} has no attribute {name!r}")
        if a.ref_attr_name:
            raise OpError(
                f"{label}: attribute {name!r} refers to {a.ref_attr_name!r}, a function's attribute, "
                "outside a function"
            )
        want = expected.get(name)
        if want is not None and a.type != want:
            got = AttributeProto.AttributeType.Name(a.type) if a.type in AttributeProto.AttributeType.values() \
                else str(a.type)
            raise OpError(
                f"{label}: attribute {name!r} must be {AttributeProto.AttributeType.Name(want)}, got {got}"
            )
        if name == "consumed_inputs":  # legacy (Reshape-1), no effect
            continue
        value = helper.get_attribute_value(a)
        if isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                raise OpError(f"{label}: attribute {name!r} is not valid UTF-8 ({value[:20]!r})") from None
        values[name] = value
    return values


def index_values(tensor: Tensor, what: str) -> list[int]:
    if tensor.dtype.name not in INDEX_TYPES or tensor.rank > 1:
        raise InputError(
            f"{what} must be a 1-D int64 (or int32) tensor, got shape {tensor.shape} of {tensor.dtype}"
        )
    return [int(v) for v in tensor.to_numpy().reshape(-1)]
