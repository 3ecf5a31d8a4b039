"""The cases scripts/fuzz_ops.py draws: onnx's node tests mutated.

``mutate(case, mutation, rng)`` returns ``(model, inputs)`` made from a node
test case's first data set, or None where the mutation does not apply:

- ``values``: the data inputs (those of the output's type, and the input of
  NonZero, Shape, Size, Cast...) replaced by random bits of their type, half
  of them special (NaN payloads, signalling NaNs, -0.0, infinities, denormals);
- ``dtype``: the data type changed to another the op's schema allows, with
  random values of it (Cast and CastLike: both ends);
- ``layout``: the same values laid out otherwise: Fortran order and
  big-endian, a non-contiguous view, negative strides, a transposed view.

The chains are fuzz_chains.py's; ``random_like`` and ``relaid`` serve them
and scripts/fuzz_graphs.py too.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, defs, helper, numpy_helper

MUTATIONS = ("values", "dtype", "layout", "opset")
# operators whose first input is data whose type is not the output's
DATA_FIRST = {"NonZero", "Shape", "Size", "Cast", "CastLike", "BitCast", "EyeLike", "Compress"}
NO_VALUES = {"Range", "ConstantOfShape", "OneHot"}  # inputs that are sizes: random bits make them huge
DIVIDE = {"Div", "Mod"}
SPECIAL_BITS = {  # per float width: NaN payloads (quiet and signalling, both signs), -0.0, infinities, denormals
    2: [0x7E01, 0xFC01, 0x7C01, 0x8000, 0x7C00, 0xFC00, 0x0001, 0x83FF],
    4: [0x7FC00001, 0xFFC12345, 0x7F800001, 0xFF800F00, 0x80000000, 0x7F800000, 0x00000001, 0x807FFFFF],
    8: [0x7FF8000000000001, 0xFFF0000000000BAD, 0x7FF0000000000001, 0x8000000000000000,
        0x7FF0000000000000, 0x0000000000000001, 0x800FFFFFFFFFFFFF],
}


def _array(x) -> np.ndarray:
    return numpy_helper.to_array(x) if isinstance(x, onnx.TensorProto) else np.asarray(x)


def random_like(shape, dtype: np.dtype, rng) -> np.ndarray:
    """Random values of ``dtype``: every bit pattern for the integer and float types (half special), strings
    with newlines and quotes."""
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == object or dtype.kind in "US":
        pool = ["", "a", "x\ny", "'q'", "\u00e9t\u00e9", "\x00z", "long " * 5]
        return np.array([pool[i] for i in rng.integers(0, len(pool), n)], dtype=object).reshape(shape)
    if dtype == np.bool_:
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    name = dtype.name
    if name in ("int4", "uint4", "int2", "uint2", "float4_e2m1fn"):
        width = 4 if "4" in name else 2
        if name.startswith("int"):
            vals = rng.integers(-(1 << (width - 1)), 1 << (width - 1), n)
            return vals.astype(dtype).reshape(shape)
        if name.startswith("uint"):
            return rng.integers(0, 1 << width, n).astype(dtype).reshape(shape)
        return rng.integers(0, 16, n).astype(np.uint8).view(dtype).reshape(shape)
    size = dtype.itemsize
    if size in (1, 2, 4, 8):
        bits = rng.integers(0, 1 << (8 * size), n, dtype=np.uint64, endpoint=False).astype(f"u{size}")
        special = SPECIAL_BITS.get(size) if (dtype.kind == "f" or name == "bfloat16") else None
        if special and n:
            pick = rng.random(n) < 0.5
            bits[pick] = np.array(special, dtype=np.uint64).astype(f"u{size}")[rng.integers(0, len(special), pick.sum())]
        return bits.view(dtype).reshape(shape)
    return rng.integers(0, 256, n * size).astype(np.uint8).view(dtype).reshape(shape)


def relaid(x: np.ndarray, rng) -> np.ndarray:
    """``x``'s values laid out another way (Fortran order and big-endian, non-contiguous, negative strides,
    transposed)."""
    if x.ndim == 0 or x.size == 0 and rng.random() < 0.5:
        return x
    how = int(rng.integers(0, 4))
    axis = int(rng.integers(0, x.ndim))
    if how == 0:
        if x.dtype.kind in "iufc" and x.dtype.itemsize > 1 and x.dtype.type.__module__ == "numpy":
            x = x.astype(x.dtype.newbyteorder(">"))
        return np.asfortranarray(x)
    if how == 1:  # every other element along an axis of a twice-as-long array
        shape = list(x.shape)
        shape[axis] *= 2
        y = np.empty(shape, dtype=x.dtype)
        index = [slice(None)] * x.ndim
        index[axis] = slice(None, None, 2)
        y[tuple(index)] = x
        return y[tuple(index)]
    if how == 2:  # negative strides
        return np.flip(np.flip(x, axis).copy(), axis)
    return np.ascontiguousarray(x.T).T


def _schema(model: onnx.ModelProto):
    node = model.graph.node[0]
    return defs.get_schema(node.op_type, model.opset_import[0].version, node.domain)


def _data_inputs(model: onnx.ModelProto) -> list[int]:
    """Which of the node's inputs are data (of the output's type), by position."""
    node, schema = model.graph.node[0], _schema(model)
    out_type = schema.outputs[0].type_str
    found = []
    for i, name in enumerate(node.input):
        formal = schema.inputs[min(i, len(schema.inputs) - 1)]
        if name and (formal.type_str == out_type or (i == 0 and node.op_type in DATA_FIRST)):
            found.append(i)
    return found


def _feeds(case) -> tuple[onnx.ModelProto, list[np.ndarray]]:
    inputs, _ = case.data_sets[0]
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    return model, [_array(x) for x in inputs]


def _position(model: onnx.ModelProto, node_input: int) -> int | None:
    name = model.graph.node[0].input[node_input]
    names = [i.name for i in model.graph.input]
    return names.index(name) if name in names else None


def mutate(case, mutation: str, rng):
    model, inputs = _feeds(case)
    if any(not i.type.HasField("tensor_type") for i in model.graph.input):
        return None  # sequences and optionals: onnxop runs tensors
    node = model.graph.node[0]
    if mutation == "layout":
        if not any(x.ndim for x in inputs):
            return None
        return model, [relaid(x, rng) for x in inputs]
    if mutation == "opset":
        return _other_opset(model, inputs, rng)
    if node.op_type in NO_VALUES:
        return None
    data = [p for p in (_position(model, i) for i in _data_inputs(model)) if p is not None]
    if not data:
        return None
    if mutation == "values":
        for p in data:
            inputs[p] = random_like(inputs[p].shape, inputs[p].dtype, rng)
        _safe_divisors(node, inputs)
        return model, inputs
    return _retyped(model, inputs, data, rng)


def _other_opset(model: onnx.ModelProto, inputs: list, rng):
    """The node at another opset (onnx's version converter: an attribute become an input, or back), with the
    same values laid out otherwise."""
    from onnx import version_converter

    node = model.graph.node[0]
    versions = [s.since_version for s in defs.get_all_schemas_with_history()
                if s.name == node.op_type and s.domain == node.domain]
    if not versions:
        return None
    first = min(versions)
    if first >= 25:
        return None
    target = int(rng.integers(max(first, 7), 26))
    if target == model.opset_import[0].version:
        return None
    try:
        converted = version_converter.convert_version(model, target)
    except Exception:  # noqa: BLE001 (no adapter for this op between those versions)
        return None
    if [n.op_type for n in converted.graph.node] != [node.op_type]:
        return None
    return converted, [relaid(x, rng) for x in inputs]


def _safe_divisors(node, inputs) -> None:
    """Integer division by 0 or of the least integer by -1 is undefined: those divisors become 1."""
    if node.op_type in DIVIDE and inputs[1].dtype.kind in "iu":
        inputs[1] = np.where((inputs[1] == 0) | (inputs[1] == -1), 1, inputs[1]).astype(inputs[1].dtype)


def _tensor_type(type_str: str) -> int | None:
    name = type_str[len("tensor("):-1].upper() if type_str.startswith("tensor(") else None
    aliases = {"FLOAT": "FLOAT", "DOUBLE": "DOUBLE"}
    return getattr(TensorProto, aliases.get(name, name), None) if name else None


def _allowed(schema, type_str: str) -> list[int]:
    for c in schema.type_constraints:
        if c.type_param_str == type_str:
            return [t for t in map(_tensor_type, c.allowed_type_strs) if t is not None]
    return [t for t in [_tensor_type(type_str)] if t is not None]


def _retyped(model: onnx.ModelProto, inputs: list, data: list[int], rng):
    node, schema = model.graph.node[0], _schema(model)
    kinds = _allowed(schema, (schema.inputs[0] if node.op_type in DATA_FIRST else schema.outputs[0]).type_str)
    if not kinds:
        return None
    new = int(kinds[rng.integers(0, len(kinds))])
    dtype = helper.tensor_dtype_to_np_dtype(new)
    for p in data:
        inputs[p] = random_like(inputs[p].shape, np.dtype(dtype), rng)
        model.graph.input[p].type.tensor_type.elem_type = new
    _safe_divisors(node, inputs)
    if node.op_type == "Cast":  # both ends: the target too
        targets = _allowed(schema, schema.outputs[0].type_str)
        to = int(targets[rng.integers(0, len(targets))])
        for a in node.attribute:
            if a.name == "to":
                a.i = to
        model.graph.output[0].type.tensor_type.elem_type = to
    elif node.op_type not in DATA_FIRST:
        for o in model.graph.output:
            o.type.tensor_type.elem_type = new
    return model, inputs
