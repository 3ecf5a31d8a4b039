"""A node's attributes from an ONNX model, checked before any is used.

``onnx.helper.get_attribute_value`` trusts the model: it returns whatever
field the proto's ``type`` names, so a FLOAT where the schema wants an INT
would be truncated by ``int()`` later (Flatten axis=1.5 running as 1), a
STRING or TENSOR would reach the operator as bytes or a proto, and a
duplicated name would silently take the last value. ``onnx.checker`` refuses
all of these; so does :func:`node_attributes`, each as one InputError (exit
2) naming the node and the attribute. The expected type comes from the ONNX
schema of the operator version the model's opset selects. Reusable by
anything that reads nodes (``run``, ``conformance``, multi-node graphs).
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError

# The value field(s) each attribute type fills (AttributeProto, onnx.proto).
_FIELDS = {
    "FLOAT": ("f",), "INT": ("i",), "STRING": ("s",), "TENSOR": ("t",), "GRAPH": ("g",),
    "SPARSE_TENSOR": ("sparse_tensor",), "TYPE_PROTO": ("tp",),
    "FLOATS": ("floats",), "INTS": ("ints",), "STRINGS": ("strings",), "TENSORS": ("tensors",),
    "GRAPHS": ("graphs",), "SPARSE_TENSORS": ("sparse_tensors",), "TYPE_PROTOS": ("type_protos",),
}
_SCALARS = ("f", "i", "s", "t", "g", "sparse_tensor", "tp")
_WORDS = {"INT": "an integer", "INTS": "a list of integers", "FLOAT": "a float", "FLOATS": "a list of floats",
          "STRING": "a string", "STRINGS": "a list of strings"}


def node_label(node_proto: Any) -> str:
    """``Flatten node 'n0'`` (``Flatten node (unnamed)``). Names are left
    as they are: the error line quotes the whole message (output.error_line)
    and --json keeps it exact."""
    name = f"'{node_proto.name}'" if node_proto.name else "(unnamed)"
    return f"{node_proto.op_type} node {name}"


def node_attributes(node_proto: Any, opset: int, where: str | None = None) -> dict[str, Any]:
    """name -> Python value (int, float, str, list of them) of each attribute
    of ``node_proto``, each checked against the ONNX schema at ``opset``.
    Raises InputError naming the node (``where``; default node_label) and the
    attribute. The one attribute checker: one-node models, graphs and
    conformance all read attributes through it."""
    from onnx import AttributeProto

    where = where or node_label(node_proto)
    expected = schema_types(node_proto.op_type, opset, node_proto.domain)
    values: dict[str, Any] = {}
    for a in node_proto.attribute:
        what = f"{where}: attribute '{a.name}'"
        if a.name in values:
            raise InputError(f"{what} is given twice")
        if a.ref_attr_name:
            raise InputError(f"{what} refers to a function's attribute ('{a.ref_attr_name}'), "
                             "which only a function body may do")
        got = AttributeProto.AttributeType.Name(a.type) if a.type in AttributeProto.AttributeType.values() else None
        want = expected.get(a.name)
        if got is None or got == "UNDEFINED":
            raise InputError(f"{what} has no valid type (type {a.type})")
        if want is not None and got != want:
            raise InputError(f"{what} must be {want} ({_WORDS.get(want, want)}), the model gives {got}")
        _check_fields(a, got, what)
        values[a.name] = _value(a, got, what, want)
    return values


def schema_types(op_type: str, opset: int, domain: str) -> dict[str, str]:
    """Attribute name -> its type's name ("INT", "INTS", ...) in the schema."""
    from onnx import AttributeProto, defs

    try:
        schema = defs.get_schema(op_type, opset, domain or "")
    except Exception:  # noqa: BLE001 - no schema: the operator's own checks still run
        return {}
    return {name: AttributeProto.AttributeType.Name(int(a.type)) for name, a in schema.attributes.items()}


def attribute_value(a: Any) -> Any:
    """What ``onnx.helper.get_attribute_value`` returns (the field ``a.type`` names; a list for the plural
    types), without onnx's helpers, whose module imports ml_dtypes (about a CPU-second: core/onnx_lazy.py).
    For an attribute :func:`node_attributes` has checked, or one only shown; a reference to a function's
    attribute raises ValueError, as onnx's does."""
    from onnx import AttributeProto

    if a.ref_attr_name:
        raise ValueError(f"Cannot get value of reference attribute: {a}")
    if a.type == AttributeProto.UNDEFINED:
        return None
    field = _FIELDS[AttributeProto.AttributeType.Name(a.type)][0]
    return getattr(a, field) if field in _SCALARS else list(getattr(a, field))


def _check_fields(a: Any, got: str, what: str) -> None:
    """Only the field of its type is filled (the checker's 'one and only one value field')."""
    own = _FIELDS[got]
    for name in _SCALARS:
        if name not in own and a.HasField(name):
            raise InputError(f"{what} is {got} but also holds a '{name}' value")
    for name in ("floats", "ints", "strings", "tensors", "graphs", "sparse_tensors", "type_protos"):
        if name not in own and len(getattr(a, name)):
            raise InputError(f"{what} is {got} but also holds '{name}' values")


def _value(a: Any, got: str, what: str, want: str | None = None) -> Any:
    if got == "TENSOR" and want == "TENSOR":  # a value the schema takes as a tensor (ConstantOfShape's value)
        from onnx import numpy_helper

        try:
            return numpy_helper.to_array(a.t)
        except Exception as e:  # noqa: BLE001 - a damaged tensor proto, said in one line
            raise InputError(f"{what} is not a readable tensor: {' '.join(str(e).split())[:120]}") from None
    if got == "INT":
        return int(a.i)
    if got == "INTS":
        return [int(v) for v in a.ints]
    if got == "FLOAT":
        return float(a.f)
    if got == "FLOATS":
        return [float(v) for v in a.floats]
    if got == "STRING":
        return _text(a.s, what)
    if got == "STRINGS":
        return [_text(s, what) for s in a.strings]
    raise InputError(f"{what} is {got}; onnxop's operators take integers, floats and strings")


def _text(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{what} is not valid UTF-8 (byte {e.start}: 0x{raw[e.start]:02x})") from None
