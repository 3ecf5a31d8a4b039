"""One-node ONNX models: the node onnxop runs, its opset, its constant inputs.

Shared by ``onnxop run`` and ``onnxop conformance``: the node's attributes
come from the model, each constant input (Reshape's shape, Slice's starts,
...) from an initializer or, for a graph input, from a file the caller
reads. Everything is checked against the operator version the model's
opset selects (``ops.make_node``).
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


def node_with_files(model_path: Path, files: list[Path]) -> tuple[Node, int, Path]:
    """``onnxop run``: the model's node, one file per graph input (in the
    model's order), constant inputs read from their file or initializer.
    Returns (node, opset, the file of the node's data input); every error
    names the model."""
    from .. import io
    from ..errors import OnnxopError

    model = load(model_path)
    try:
        node_proto, opset = the_node(model)
        names = graph_inputs(model)
        if len(files) != len(names):
            raise UsageError(
                f"the model has {len(names)} input(s) ({', '.join(names) or 'none'}), "
                f"{len(files)} file(s) were given"
            )
        by_name = dict(zip(names, files))
        if node_proto.input[0] not in by_name:
            raise UsageError(f"the node's data input {node_proto.input[0]!r} is not a graph input")

        def constant(name: str):
            if name in by_name:
                return io.read_tensor(by_name[name])
            found = initializer(model, name, model_path.parent)
            if found is None:
                raise UsageError(f"input {name!r} has no data (no graph input, no initializer)")
            return found

        node = build_node(node_proto, opset, constant)
    except OnnxopError as e:
        raise type(e)(f"{model_path}: {e.message}") from None
    return node, opset, by_name[node_proto.input[0]]


def the_node(model):
    """The single node and the model's ai.onnx opset; Unsupported otherwise."""
    from . import LATEST_OPSET, OPERATORS

    nodes = list(model.graph.node)
    if len(nodes) != 1:
        kinds = ", ".join(sorted({n.op_type for n in nodes})) or "none"
        raise Unsupported(f"{len(nodes)} nodes ({kinds}); onnxop runs single-node models")
    node = nodes[0]
    if node.domain not in ONNX_DOMAINS or node.op_type not in OPERATORS:
        where = f"{node.domain}." if node.domain not in ONNX_DOMAINS else ""
        raise Unsupported(f"operator {where}{node.op_type}; onnxop runs {', '.join(OPERATORS)}")
    opsets = [o.version for o in model.opset_import if o.domain in ONNX_DOMAINS]
    if not opsets:
        raise InputError("the model imports no ai.onnx opset")
    opset = int(opsets[0])
    if opset > LATEST_OPSET:
        raise Unsupported(f"opset {opset} is newer than onnxop knows ({LATEST_OPSET})")
    return node, opset


def graph_inputs(model) -> list[str]:
    """The inputs a caller must feed: graph inputs without an initializer."""
    initialized = {t.name for t in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in initialized]


def initializer(model, name: str, folder: Path) -> Tensor | None:
    from ..io.tensorproto import tensor_from_proto

    for t in model.graph.initializer:
        if t.name == name:
            return tensor_from_proto(t, folder, f"initializer {name!r}", name)
    return None


def build_node(node_proto, opset: int, constant: Callable[[str], Tensor]) -> Node:
    """The onnxop node for ``node_proto`` at ``opset``; ``constant(name)``
    gives the tensor of a constant input (initializer or file)."""
    from . import make_node, op_version
    from .attributes import node_attributes

    op = op_version(node_proto.op_type, opset)
    label = f"{op.op_type}-{op.since_version}"
    values: dict[str, object] = {}
    # each checked against the schema: a FLOAT where an INT belongs is refused, never truncated
    for name, value in node_attributes(node_proto, opset).items():
        if name not in op.attribute_names:
            raise OpError(f"{label} has no attribute {name!r}")
        if name == "consumed_inputs":  # legacy (Reshape-1), no effect
            continue
        values[name] = value
    if len(node_proto.input) > len(op.inputs):
        raise OpError(f"{label} takes at most {len(op.inputs)} inputs, the node has {len(node_proto.input)}")
    for schema_name, name in zip(op.inputs[1:], node_proto.input[1:]):
        if name:  # an empty name leaves an optional input out
            values[schema_name] = index_values(constant(name), f"{label} input {schema_name!r}")
    return make_node(op.op_type, opset, **values)


def index_values(tensor: Tensor, what: str) -> list[int]:
    if tensor.dtype.name not in INDEX_TYPES or tensor.rank > 1:
        raise InputError(
            f"{what} must be a 1-D int64 (or int32) tensor, got shape {tensor.shape} of {tensor.dtype}"
        )
    return [int(v) for v in tensor.to_numpy().reshape(-1)]
