"""ONNX models as onnxop nodes: a graph checked whole, attributes read strictly.

Shared by graph.py (``onnxop run``, ``conformance``, the backend) and the doc
examples: a node's attributes come from the model, each checked against the
type ONNX's schema gives it; each constant input (Reshape's shape, Slice's
starts, ...) from a tensor the caller provides. Everything is checked against
the operator version the model's opset selects (``ops.make_node``).
``load_graph`` checks a whole graph (operators, opset, names, order) before
core/graph.py plans and runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import InputError, OpError
from .nodekinds import CONSTANT, ONNX_DOMAINS, OtherNodes, Unsupported, onnxop_runs, opset_of, ops, supported  # noqa: F401

if TYPE_CHECKING:
    from . import Node, OpVersion
    from ..core.tensor import Tensor

INDEX_TYPES = ("int64", "int32")  # what a constant input may hold (Slice allows int32)


def load(path: Path):
    from ..core.onnx_lazy import load_model

    if Path(path).is_dir():  # (onnx's open() said "[Errno 21] Is a directory: 'x'")
        raise InputError(f"{path}: is a folder, not an ONNX model")
    try:
        return load_model(str(path))  # onnx.load(path, load_external_data=False), without onnx's helpers
    except FileNotFoundError:
        raise
    except Exception as e:  # noqa: BLE001 - protobuf raises several kinds
        raise InputError(f"{path}: not an ONNX model: {' '.join(str(e).split())[:200]}") from None


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


def build_node(node_proto, opset: int, constant: Callable[[str], Tensor], label: str | None = None) -> Node:
    """The onnxop node for ``node_proto`` at ``opset``; ``constant(name)``
    gives the tensor of a constant input (initializer or file). ``label``
    names the node in refusals (default: its operator version)."""
    from . import make_node, op_version
    op = op_version(node_proto.op_type, opset)
    label = label or f"{op.op_type}-{op.since_version}"
    values = read_attributes(node_proto, op, label)  # a FLOAT where an INT belongs is refused, never truncated
    if len(node_proto.input) > len(op.inputs):
        raise OpError(f"{label} takes at most {len(op.inputs)} inputs, the node has {len(node_proto.input)}")
    for schema_name, name in zip(op.inputs[1:], node_proto.input[1:]):
        if name:  # an empty name leaves an optional input out
            values[schema_name] = index_values(constant(name), f"{label} input {schema_name!r}")
    return make_node(op.op_type, opset, **values)


def read_attributes(node_proto, op, label: str) -> dict[str, object]:
    """The node's attributes as Python values, each checked against the type
    ONNX's schema gives it (ops/attributes.py); ``label`` (the operator, or
    the node in a graph) starts every refusal; an attribute the version does
    not have is refused, a legacy ``consumed_inputs`` dropped."""
    from .attributes import node_attributes

    values = node_attributes(node_proto, op.since_version, label)
    for name in values:
        if name not in op.attribute_names:
            raise OpError(f"{label} has no attribute {name!r}")
    values.pop("consumed_inputs", None)  # legacy (Reshape-1), no effect
    return values


def index_values(tensor: Tensor, what: str) -> list[int]:
    if tensor.dtype.name not in INDEX_TYPES or tensor.rank > 1:
        raise InputError(
            f"{what} must be a 1-D int64 (or int32) tensor, got shape {tensor.shape} of {tensor.dtype}"
        )
    return [int(v) for v in tensor.to_numpy().reshape(-1)]


# ------------------------------------------------------------------ graphs


CONSTANT_FIELDS = ("value", "value_int", "value_ints", "value_float", "value_floats", "value_string",
                   "value_strings", "sparse_value")


# ------------------------------------------------------------------ checking


@dataclass
class GraphNode:
    proto: Any
    op: type[OpVersion] | None  # None: Constant
    label: str  # "node 2 'r' (Reshape-21)"


@dataclass
class Graph:
    model: Any
    opset: int
    nodes: list[GraphNode]
    inputs: list[str]  # what a caller feeds, in order (graph inputs without an initializer)
    initializers: dict[str, Any]
    outputs: list[str]
    folder: Path
    declared: dict[str, Any] = field(default_factory=dict)  # graph input name -> its ValueInfo


def node_label(i: int, proto, op: type[OpVersion] | None = None) -> str:
    name = f" {repr(proto.name)}" if proto.name else ""
    kind = f"{op.op_type}-{op.since_version}" if op is not None else proto.op_type
    plain = op is not None or (proto.op_type == CONSTANT and proto.domain in ONNX_DOMAINS)
    return f"node {i}{name} ({kind if plain else repr(kind)})"


def check_names(model) -> None:
    """Every name in the model's graphs (subgraphs included) is text: protobuf
    parses a string field without checking it and hands back ``bytes`` for one
    that is not UTF-8, which no file, terminal line or JSON name can take
    as it is (onnxruntime's Python API fails on such a tensor name)."""
    graphs = [("", model.graph)]
    while graphs:  # a loop, not a recursion: subgraphs nest as deep as protobuf allows
        where, g = graphs.pop()
        for kind, values in (("input", g.input), ("output", g.output), ("value_info", g.value_info),
                             ("initializer", g.initializer)):
            for v in values:
                _name_text(v.name, f"{where}a graph {kind}'s name")
        for i, p in enumerate(g.node):
            at = f"{where}node {i}"
            for what in ("name", "op_type", "domain"):
                _name_text(getattr(p, what), f"{at}'s {what}")
            for k, n in enumerate(p.input):
                _name_text(n, f"{at}'s input {k}")
            for k, n in enumerate(p.output):
                _name_text(n, f"{at}'s output {k}")
            for a in p.attribute:
                inner = [a.g] if a.HasField("g") else list(a.graphs)
                graphs += [(f"{at}'s {a.name!r}: ", sub) for sub in inner]


def _name_text(value, what: str) -> None:
    if isinstance(value, bytes):
        raise InputError(f"{what} is not UTF-8 text ({value[:40]!r}); ONNX's names are UTF-8")


def load_graph(model, folder: Path, places: list[int] | None = None) -> Graph:
    """The model's graph, checked whole; the first problem found is raised.
    Nodes onnxop does not run (nodekinds.py) are refused together, counted
    by operator (``OtherNodes``). ``places``: each node's index in the model
    a region's graph was cut from (core/partition.py), which its messages name."""
    from . import op_version
    check_names(model)
    g = model.graph
    opset = opset_of(model)
    functions = {(f.domain, f.name) for f in model.functions}
    others = ops(p for p in g.node if not onnxop_runs(p, opset, functions))
    if others:
        raise OtherNodes(others)
    nodes: list[GraphNode] = []
    for i, proto in enumerate(g.node):
        at = places[i] if places else i
        if proto.op_type == CONSTANT:
            nodes.append(GraphNode(proto, None, node_label(at, proto)))
            continue
        op = op_version(proto.op_type, opset)
        nodes.append(GraphNode(proto, op, node_label(at, proto, op)))

    for kind, values in (("input", g.input), ("output", g.output)):
        for v in values:
            what = v.type.WhichOneof("value")
            if what != "tensor_type":
                what = (what or "typeless").replace("_type", "")
                article = "an" if what[0] in "aeiou" else "a"
                raise Unsupported(f"graph {kind} {v.name!r} is {article} {what} value; onnxop runs tensors")
    initializers: dict[str, Any] = {}
    for t in g.initializer:
        if t.name in initializers:
            raise InputError(f"two initializers are named {repr(t.name)}")
        initializers[t.name] = t
    if g.sparse_initializer:
        raise Unsupported("the model has sparse initializers; onnxop runs dense tensors")
    known: dict[str, str] = {}  # name -> what defines it
    for v in g.input:
        if not v.name:
            raise InputError("a graph input has no name")
        if v.name in known:
            raise InputError(f"two graph inputs are named {repr(v.name)}")
        known[v.name] = "a graph input"
    for name in initializers:
        known.setdefault(name, "an initializer")
    producer_of: dict[str, int] = {}
    for i, gn in enumerate(nodes):
        for name in gn.proto.output:
            if name and name in known:
                raise InputError(f"{gn.label} produces {repr(name)}, which is already {known[name]}")
            if name:
                producer_of.setdefault(name, i)
                known[name] = f"produced by {gn.label}"
    for i, gn in enumerate(nodes):
        p = gn.proto
        for name in p.input:
            if not name:
                continue
            if name not in known or (name in producer_of and producer_of[name] >= i):
                if name in producer_of:
                    raise InputError(
                        f"{gn.label} reads {repr(name)} before {nodes[producer_of[name]].label} produces it: "
                        "the graph has a cycle or is not topologically sorted"
                    )
                raise InputError(f"{gn.label} reads {repr(name)}, which no input, initializer or node provides")
        _check_node(gn)
    outputs = graph_outputs(g, known)
    feeds = [v.name for v in g.input if v.name not in initializers]
    return Graph(model, opset, nodes, feeds, initializers, outputs, folder, {v.name: v for v in g.input})


def _check_node(gn: GraphNode) -> None:
    """A node's attributes strictly, the input and output counts its schema
    allows (a variadic input or output any number), its required inputs
    given; a Constant's one value attribute."""
    p, op = gn.proto, gn.op
    if op is None:  # Constant: exactly one value attribute, one output
        if len(p.output) != 1 or not p.output[0]:
            raise InputError(f"{gn.label} has {len(p.output)} outputs ({', '.join(map(repr, p.output))}); it makes one")
        seen = [a.name for a in p.attribute]
        if len(seen) != len(set(seen)):
            raise OpError(f"{gn.label}: an attribute is given twice ({', '.join(seen)})")
        unknown = [n for n in seen if n not in CONSTANT_FIELDS]
        if unknown:
            raise OpError(f"{gn.label} has no attribute {unknown[0]!r}")
        if len(seen) != 1:
            raise OpError(f"{gn.label} needs exactly one of {', '.join(CONSTANT_FIELDS)}; it has {len(seen)}")
        if p.input:
            raise InputError(f"{gn.label} takes no inputs, the node has {len(p.input)}")
        return
    read_attributes(p, op, gn.label)
    if not op.variadic and len(p.input) > len(op.inputs):
        raise OpError(f"{gn.label} takes at most {len(op.inputs)} inputs, the node has {len(p.input)}")
    if op.variadic:
        if not p.input or not all(p.input):
            raise OpError(f"{gn.label} needs one or more inputs {op.variadic!r}, each named")
    else:
        for i, schema_name in enumerate(op.inputs):
            given = i < len(p.input) and p.input[i]
            if not given and (i == 0 or schema_name not in op.optional):
                raise OpError(f"{gn.label} is missing its required input {schema_name!r}")
    if not any(p.output):
        raise InputError(f"{gn.label} has no outputs")
    if not op.variadic_output and len(p.output) > len(op.outputs):
        raise InputError(f"{gn.label} has {len(p.output)} outputs ({', '.join(map(repr, p.output))}); "
                         f"it makes at most {len(op.outputs)}")


def constant_tensor(gn: GraphNode, folder: Path) -> Tensor:
    """A Constant node's value as a tensor (its one attribute, checked)."""
    import numpy as np
    from onnx import AttributeProto  # (a protobuf class: onnx's helpers, and ml_dtypes with them, stay unloaded)

    from ..core.tensor import Tensor
    from ..io.tensorproto import tensor_from_proto
    from .attributes import attribute_value

    a = gn.proto.attribute[0]
    kinds = {"value": AttributeProto.TENSOR, "value_int": AttributeProto.INT, "value_ints": AttributeProto.INTS,
             "value_float": AttributeProto.FLOAT, "value_floats": AttributeProto.FLOATS,
             "value_string": AttributeProto.STRING, "value_strings": AttributeProto.STRINGS}
    if a.name not in kinds:
        raise Unsupported(f"{gn.label}: attribute {a.name!r} (sparse tensors) is not supported")
    if a.type != kinds[a.name] or a.ref_attr_name:
        raise OpError(f"{gn.label}: attribute {a.name!r} must be {AttributeProto.AttributeType.Name(kinds[a.name])}"
                      + (f", got {AttributeProto.AttributeType.Name(a.type)}" if a.type in AttributeProto.AttributeType.values() else ""))
    out = gn.proto.output[0]
    if a.name == "value":
        return tensor_from_proto(a.t, folder, f"{gn.label} value", out)
    value = attribute_value(a)  # (its type checked above: the one field it names)
    if a.name in ("value_string", "value_strings"):
        return Tensor.from_numpy(np.array(value, dtype=object), out)
    dtype = np.int64 if "int" in a.name else np.float32
    return Tensor.from_numpy(np.array(value, dtype=dtype), out)


def graph_outputs(g, known) -> list[str]:
    """The graph's output names, each listed once and produced (``known``: the names defined so far)."""
    outputs: list[str] = []
    for v in g.output:
        if v.name in outputs:
            raise InputError(f"graph output {repr(v.name)} is listed twice")
        if v.name not in known:
            raise InputError(f"graph output {repr(v.name)} is never produced")
        outputs.append(v.name)
    if not outputs:
        raise InputError("the graph has no outputs")
    return outputs
