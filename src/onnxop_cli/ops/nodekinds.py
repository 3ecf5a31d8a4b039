"""Which nodes of a model onnxop runs, and how the others are named and counted.

A node is the others' (another runtime runs it: core/partition.py) when
onnxop has no such operator at the model's opset, it is in another domain
(com.microsoft), it calls one of the model's functions, or an attribute
holds a graph (If, Loop, Scan). ``load_graph`` (model.py) refuses a model
with any (``OtherNodes``: the operators counted, ``Conv x38, Add x12``).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Iterable

from ..errors import InputError, UsageError

ONNX_DOMAINS = ("", "ai.onnx")
CONSTANT = "Constant"


class Unsupported(UsageError):
    """The model is not one onnxop runs (another operator, several nodes, a newer opset)."""


def supported() -> list[str]:
    """The operators a graph may hold: every operator of the registry --
    the index-map (view) operators and those of several tensor inputs or
    outputs (ops/tensor_op.py: Concat, Gather, ...; core/graph_steps.py runs
    them as graph steps) -- and Constant."""
    from . import OPERATORS

    return [*OPERATORS, CONSTANT]


def opset_of(model) -> int:
    from . import LATEST_OPSET

    opsets = [o.version for o in model.opset_import if o.domain in ONNX_DOMAINS]
    if not opsets:
        raise InputError("the model imports no ai.onnx opset")
    if len(set(opsets)) > 1:
        raise InputError(f"the model imports ai.onnx twice, at opsets {sorted(set(opsets))}")
    opset = int(opsets[0])
    if not 1 <= opset <= LATEST_OPSET:
        raise Unsupported(f"opset {opset} is outside what onnxop knows (1 to {LATEST_OPSET})")
    return opset




class OtherNodes(Unsupported):
    """The model holds nodes onnxop does not run, and no other runtime was named."""

    def __init__(self, counts: list[tuple[str, int]], undecided: list[tuple[str, int]] = ()) -> None:
        self.counts = counts
        total = sum(n for _, n in counts)
        more = (f"; and {sum(n for _, n in undecided)} with an input whose type onnx's shape inference cannot tell "
                f"({counted(undecided)}), which go to the others too" if undecided else "")
        super().__init__(f"{total} node(s) onnxop does not run: {counted(counts)}{more}")


def counted(counts: Iterable[tuple[str, int]]) -> str:
    """``Conv x38, Add x12``: most first."""
    return ", ".join(f"{kind} x{n}" for kind, n in counts)


def kind(proto) -> str:
    """A node's operator as shown: ``Conv``, ``com.microsoft.FusedConv``; a
    name that is not plain is quoted (it comes from the file)."""
    name = proto.op_type if proto.domain in ONNX_DOMAINS else f"{proto.domain}.{proto.op_type}"
    return name if re.fullmatch(r"[A-Za-z0-9_.]+", name) else repr(name)


def ops(nodes, types: dict[str, str] | None = None) -> list[tuple[str, int]]:
    """Operators by count, most first; with ``types``, an operator onnxop has
    but runs on other types only is named with its input types
    (``Add (float)``: float arithmetic is not onnxop's)."""
    return Counter(_label(n, types) for n in nodes).most_common()


def _label(proto, types: dict[str, str] | None) -> str:
    name = kind(proto)
    if types is None or proto.domain not in ONNX_DOMAINS or proto.op_type not in supported():
        return name
    given = sorted({types[x] for x in proto.input if x and x in types}
                   | {types[x] for x in proto.output if types.get(x) in NOT_TENSORS})  # (an optional made)
    return f"{name} ({', '.join(given)})" if given else name


def subgraphs(proto) -> list[Any]:
    from onnx import AttributeProto

    found = []
    for a in proto.attribute:
        if a.type == AttributeProto.GRAPH:
            found.append(a.g)
        elif a.type == AttributeProto.GRAPHS:
            found.extend(a.graphs)
    return found


def free_names(graph) -> set[str]:
    """The outer values a subgraph reads (its bodies' implicit inputs)."""
    defined = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    defined |= {t.values.name for t in graph.sparse_initializer}
    free: set[str] = set()
    for n in graph.node:
        free |= {x for x in n.input if x and x not in defined}
        for g in subgraphs(n):
            free |= free_names(g) - defined
        defined |= set(n.output)
    return free | {v.name for v in graph.output if v.name not in defined}  # an outer value passed through


def reads(proto) -> list[str]:
    """Every value a node reads: its inputs and what its subgraphs read from outside."""
    names = [x for x in proto.input if x]
    for g in subgraphs(proto):
        names += sorted(free_names(g) - set(names))
    return names


def value_types(model) -> dict[str, str]:
    """Value name -> ONNX element type name (``float``, ``int64``), or
    ``sequence``, ``map`` or ``optional`` (NOT_TENSORS), as the model declares them and onnx's
    shape inference finds them: what decides whether a node of an operator that
    runs only some types (float Add: not onnxop's) is onnxop's."""
    from onnx import TensorProto

    from ..core.inference import types_of

    types: dict[str, str] = {}
    g = types_of(model)  # (in a child process: onnx's inference can crash, core/inference.py)
    known = set(TensorProto.DataType.values()) - {TensorProto.UNDEFINED}  # a number ONNX does not name: not known
    inputs = {v.name for v in g.input}
    for v in (*g.input, *g.value_info, *g.output):
        tp = v.type
        if v.name in inputs and tp.HasField("optional_type"):
            tp = tp.optional_type.elem_type  # (a graph input's file gives a tensor: it is never empty)
        elem = tp.tensor_type.elem_type if tp.HasField("tensor_type") else 0
        if elem in known:
            types[v.name] = TensorProto.DataType.Name(elem).lower()
        elif holder := _holder(tp):
            types[v.name] = holder
    for t in model.graph.initializer:
        if t.data_type in known:
            types[t.name] = TensorProto.DataType.Name(t.data_type).lower()
    versions = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    for n in model.graph.node:  # where inference could not tell (after a node it has no schema for): the schema's word
        for name, holder in _schema_holders(n, versions.get(n.domain or "ai.onnx")):
            types.setdefault(name, holder)
    return types


def _schema_holders(proto, version: int | None) -> list[tuple[str, str]]:
    """The node's inputs and outputs that its operator's schema allows only
    sequences (or only maps, or only optionals) for: SplitToSequence's output,
    ConcatFromSequence's input, Optional's output."""
    from onnx import defs

    try:
        schema = defs.get_schema(proto.op_type, version or 1, proto.domain)
    except Exception:  # noqa: BLE001 - an operator onnx has no schema for
        return []
    allowed = {c.type_param_str: list(c.allowed_type_strs) for c in schema.type_constraints}
    found = []
    for formals, names in ((schema.inputs, proto.input), (schema.outputs, proto.output)):
        for k, name in enumerate(names):
            if not name or not formals:
                continue
            formal = formals[min(k, len(formals) - 1)]
            kinds = {t.split("(")[0] for t in allowed.get(formal.type_str, [formal.type_str])}
            if len(kinds) == 1 and kinds <= {"seq", "map", "optional"}:
                found.append((name, {"seq": "sequence", "map": "map", "optional": "optional"}[kinds.pop()]))
    return found


NOT_TENSORS = ("sequence", "map", "optional")  # value_types' names of values that may hold no single tensor


def _holder(tp) -> str | None:
    """``sequence``, ``map`` or ``optional`` (of a tensor: it may be empty, None in onnxruntime's
    and onnx.reference's hands) for a value of such a type, else None."""
    which = tp.WhichOneof("value")
    if which == "optional_type":
        which = tp.optional_type.elem_type.WhichOneof("value")
        return {"sequence_type": "sequence", "map_type": "map"}.get(which, "optional")
    return {"sequence_type": "sequence", "map_type": "map"}.get(which)


def onnxop_runs(proto, opset: int | None, functions: set, types: dict[str, str] | None = None,
                unknown: bool = True) -> bool:
    """Whether onnxop runs node ``proto``: its operator at the opset, and,
    with ``types`` (``value_types``), its input types in the operator's scope
    (``in_scope``: the elementwise operators run integers and bools); a type
    not known counts as in scope when ``unknown`` (the plan refuses it then)."""
    from . import op_version

    if proto.domain not in ONNX_DOMAINS or proto.op_type not in supported() or opset is None:
        return False
    if (proto.domain, proto.op_type) in functions:
        return False  # (a graph attribute of an operator onnxop runs is refused as hostile: attributes.py)
    if proto.op_type == CONSTANT:
        return True
    if types is not None and any(types.get(x) in NOT_TENSORS for x in (*proto.input, *proto.output) if x):
        return False  # (an Identity of a sequence: onnxop's values are tensors)
    try:
        op = op_version(proto.op_type, opset)
    except Exception:  # noqa: BLE001 - not at this opset
        return False
    scope = getattr(op, "in_scope", None)
    if scope is None or types is None:
        return True
    given = [types.get(x) for x in proto.input if x]
    if None in given:
        return unknown
    return scope(proto, given)


def model_opset(model) -> int | None:

    try:
        return opset_of(model)
    except Unsupported:
        return None
    except InputError:
        if any(o.domain in ONNX_DOMAINS for o in model.opset_import):
            raise  # ai.onnx imported twice
        return None


def refused_nodes(model) -> OtherNodes | None:
    """The refusal of a model holding nodes onnxop does not run, where no
    other runtime was named; it counts too the nodes whose input types shape
    inference cannot tell (a float Add after a com.microsoft node), which the
    plan would refuse when it meets them and --others sends to the others."""
    types = value_types(model)  # (once: inference of a large model takes a while, in a child process)
    counts = others_in(model, types=types)
    if not counts:
        return None
    undecided = dict(others_in(model, unknown=False, types=types))
    for name, n in counts:
        undecided[name] -= n
    return OtherNodes(counts, sorted(((k, n) for k, n in undecided.items() if n), key=lambda c: -c[1]))


def others_in(model, unknown: bool = True, types: dict[str, str] | None = None) -> list[tuple[str, int]]:
    """The nodes onnxop does not run, counted by operator (empty: it runs them all); ``types``:
    ``value_types(model)`` if the caller has them."""
    opset = model_opset(model)
    functions = {(f.domain, f.name) for f in model.functions}
    types = value_types(model) if types is None else types
    return ops((n for n in model.graph.node if not onnxop_runs(n, opset, functions, types, unknown)), types)
