"""``onnxop show model.onnx --graph``: a model's inputs, outputs and nodes,
as polygraphy's ``inspect model`` lists them. Reads the model's structure
only (io/onnxmodel.py parses it, without external data); runs nothing.
Returns text and dicts; never prints.

    model.onnx: opset 21, 1 node, 0 initializers
      inputs:
        x: shape=(2, 'N'), dtype=float32
      outputs:
        y: shape=('N', 2), dtype=float32
      nodes:
        0  Transpose (opset 21)  x -> y  perm=[1, 0]
"""

from __future__ import annotations

from typing import Any

from .node import quote, quoted

Doc = dict[str, Any]


def describe(model) -> Doc:
    """The model as a document: opsets, inputs, outputs (the graph inputs
    that are not initializers), nodes, initializer count."""
    graph = model.graph
    opsets = {o.domain or "ai.onnx": int(o.version) for o in model.opset_import}
    initializers = {t.name for t in graph.initializer}
    return {
        "opsets": opsets,
        "inputs": [_value(v) for v in graph.input if v.name not in initializers],
        "outputs": [_value(v) for v in graph.output],
        "nodes": [_node(n, opsets) for n in graph.node],
        "initializers": len(initializers),
    }


def _value(v) -> Doc:
    kind = v.type.WhichOneof("value")
    doc: Doc = {"name": v.name, "kind": (kind or "unknown").removesuffix("_type"), "shape": None, "dtype": None}
    if kind == "tensor_type":
        t = v.type.tensor_type
        doc["dtype"] = _dtype_name(t.elem_type)
        if t.HasField("shape"):
            doc["shape"] = [_dim(d) for d in t.shape.dim]
    elif kind in ("sequence_type", "optional_type"):
        inner = getattr(v.type, kind).elem_type
        if inner.WhichOneof("value") == "tensor_type":
            doc["dtype"] = _dtype_name(inner.tensor_type.elem_type)
    return doc


def _dim(d) -> Any:
    which = d.WhichOneof("value")
    if which == "dim_value":
        return int(d.dim_value)
    return d.dim_param if which == "dim_param" else None


def _dtype_name(elem_type: int) -> str:
    from ..errors import OnnxopError
    from ..core.tensor import dtype_by_onnx

    try:
        return dtype_by_onnx(elem_type).name
    except (OnnxopError, KeyError, ValueError):
        return f"type {elem_type}"


def _node(n, opsets: dict[str, int]) -> Doc:
    return {
        "op": n.op_type,
        "domain": n.domain or "ai.onnx",
        "opset": opsets.get(n.domain or "ai.onnx"),
        "name": n.name,
        "inputs": list(n.input),
        "outputs": list(n.output),
        "attributes": {a.name: _attribute(a) for a in n.attribute},
    }


def _attribute(a) -> Any:
    """An attribute's value as plain data; tensors and graphs by their outline."""
    from ..ops.attributes import attribute_value

    value = attribute_value(a)
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if isinstance(value, list):
        return [v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else _outline(v) for v in value]
    return _outline(value)


def _outline(value: Any) -> Any:
    if isinstance(value, (int, float, str)):
        return value
    if hasattr(value, "dims") and hasattr(value, "data_type"):  # a TensorProto
        return f"tensor(shape={tuple(int(d) for d in value.dims)}, dtype={_dtype_name(value.data_type)})"
    if hasattr(value, "node"):  # a GraphProto
        return f"graph({quoted(value.name)}, {len(value.node)} nodes)"
    return type(value).__name__


def _shape_text(shape: Any) -> str:
    if shape is None:
        return "?"
    return "(" + ", ".join(quoted(d) if isinstance(d, str) else "?" if d is None else str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


def value_line(v: Doc) -> str:
    kind = "" if v["kind"] == "tensor" else f", {v['kind']}"
    return f"{quote(v['name'])}: shape={_shape_text(v['shape'])}, dtype={v['dtype'] or '?'}{kind}"


def render(label: str, doc: Doc, *, nodes: bool = True) -> str:
    """The text: a title line, then inputs, outputs and (``nodes``) the nodes."""
    opsets = ", ".join(f"opset {v}" if k == "ai.onnx" else f"{k} {v}" for k, v in doc["opsets"].items())
    count = len(doc["nodes"])
    lines = [f"{quote(label)}: {opsets or 'no opset'}, {count} node{'s' * (count != 1)}, "
             f"{doc['initializers']} initializer{'s' * (doc['initializers'] != 1)}"]
    for title in ("inputs", "outputs"):
        lines.append(f"  {title}:")
        lines += [f"    {value_line(v)}" for v in doc[title]] or ["    (none)"]
    if nodes:
        lines.append("  nodes:")
        lines += _node_rows(doc["nodes"])
        if not doc["nodes"]:
            lines.append("    (none)")
    return "\n".join(lines)


COLUMN_CAP = 40  # a name or operator wider than this overflows its own row only


def _node_rows(nodes: list[Doc]) -> list[str]:
    """One row a node, its columns aligned: the index right-aligned to the
    widest index, the name (quoted; a column only when some node has one) and
    the operator with its opset each padded to the widest of those up to
    COLUMN_CAP characters (a wider one overflows its own row), so the columns
    do not shift at node 10, 100 or after a long name; the inputs, outputs
    and attributes follow."""
    cells = []
    for i, n in enumerate(nodes):
        op = quote(n["op"] if n["domain"] == "ai.onnx" else f"{n['domain']}.{n['op']}")
        attrs = "  ".join(f"{quote(k)}={_attribute_text(v)}" for k, v in n["attributes"].items())
        flow = f"{', '.join(map(quote, n['inputs']))} -> {', '.join(map(quote, n['outputs']))}"
        cells.append((str(i), quoted(n["name"]) if n["name"] else "", f"{op} (opset {n['opset']})",
                      flow + (f"  {attrs}" if attrs else "")))
    if not cells:
        return []
    index_width = max(len(c[0]) for c in cells)
    name_width, op_width = (max((len(c[k]) for c in cells if len(c[k]) <= COLUMN_CAP), default=0) for k in (1, 2))
    return [f"    {i.rjust(index_width)}" + (f" {name.ljust(name_width)}" if any(c[1] for c in cells) else "") +
            f"  {op.ljust(op_width)}  {rest}" for i, name, op, rest in cells]


def _attribute_text(v: Any) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_attribute_text(x) for x in v) + "]"
    return quoted(v) if isinstance(v, str) and not v.startswith(("tensor(", "graph(")) else quote(v)
