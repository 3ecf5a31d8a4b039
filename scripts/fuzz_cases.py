"""The cases scripts/fuzz_ops.py draws: onnx's node tests mutated, and chains.

``mutate(case, mutation, rng)`` returns ``(model, inputs)`` made from a node
test case's first data set, or None where the mutation does not apply:

- ``values``: the data inputs (those of the output's type, and the input of
  NonZero, Shape, Size, Cast...) replaced by random bits of their type, half
  of them special (NaN payloads, signalling NaNs, -0.0, infinities, denormals);
- ``dtype``: the data type changed to another the op's schema allows, with
  random values of it (Cast and CastLike: both ends);
- ``layout``: the same values laid out otherwise: Fortran order and
  big-endian, a non-contiguous view, negative strides, a transposed view.

``chain_case(rng)`` is a small graph of views and tensor operators on one
input of random shape (zero-size dims, rank 0, size-1 axes) and layout, some
intermediates also graph outputs.
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


# -- chains ------------------------------------------------------------------------------------------------

CHAIN_TYPES = [np.float32, np.int64, np.uint8, np.float16, np.int32, np.bool_, np.float64]


def chain_case(rng) -> tuple[onnx.ModelProto, list[np.ndarray]]:
    """A graph of 2 to 7 views and tensor operators on one input; returns (model, [input]). A node
    takes the last value, or now and then an earlier one (a branch: one value, two consumers); a
    float Relu, which onnxop does not run, puts a region of another runtime in the middle."""
    rank = int(rng.integers(0, 5))
    shape = [int(rng.choice([0, 1, 1, 2, 3, 4])) if rng.random() < 0.15 else int(rng.integers(1, 5))
             for _ in range(rank)]
    dtype = np.dtype(CHAIN_TYPES[rng.integers(0, len(CHAIN_TYPES))])
    x = random_like(shape, dtype, rng)
    nodes, inits, outputs = [], [], []
    values = [("x", x)]
    for k in range(int(rng.integers(2, 8))):
        src, cur = values[-1] if rng.random() < 0.7 else values[int(rng.integers(0, len(values)))]
        step = _step(src, cur, rng, f"n{k}", inits, nodes)
        if step is None:
            continue
        node, val = step
        nodes.append(node)
        values.append((node.output[0], val))
        if rng.random() < 0.25:
            outputs.append(values[-1])
    if len(values) > 1 and (not outputs or outputs[-1][0] != values[-1][0]):
        outputs.append(values[-1])
    if rng.random() < 0.1:
        outputs.append(("x", x))  # a graph input that is an output too
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", elem, list(x.shape))],
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape)) for n, v in outputs],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    return model, [relaid(x, rng)]


def _const(inits: list, name: str, values, rng=None, nodes=None, dtype=np.int64) -> str:
    """An int64 (``dtype``) constant: a raw initializer, a typed one (int64_data), or a Constant node."""
    values = np.asarray(values, dtype=dtype)
    how = int(rng.integers(0, 3)) if rng is not None else 0
    if how == 2 and nodes is not None:
        nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(values, name)))
    elif how == 1 and dtype == np.int64:
        inits.append(helper.make_tensor(name, TensorProto.INT64, list(values.shape), values.reshape(-1).tolist()))
    else:
        inits.append(numpy_helper.from_array(values, name))
    return name


def _step(src: str, cur: np.ndarray, rng, out: str, inits: list, nodes: list):
    """One node on ``cur`` (the value named ``src``), and numpy's value of its output."""
    ops = ["Transpose", "Unsqueeze", "Reshape", "Slice", "Expand", "Identity", "Tile", "Concat", "Pad",
           "Gather", "Cast", "Flatten", "Squeeze", "Where", "ReverseSequence", "ScatterElements", "ScatterND",
           "Split", "Shape", "NonZero", "Neg", "Trilu", "Compress", "Relu", "Relu", "Relu"]
    op = ops[int(rng.integers(0, len(ops)))]
    r = cur.ndim
    node = None
    if op == "Transpose" and r:
        perm = [int(p) for p in rng.permutation(r)]
        node, val = helper.make_node("Transpose", [src], [out], perm=perm), np.transpose(cur, perm)
    elif op == "Unsqueeze":
        axis = int(rng.integers(-r - 1, r + 1))
        node = helper.make_node("Unsqueeze", [src, _const(inits, out + "_axes", [axis], rng, nodes)], [out])
        val = np.expand_dims(cur, axis)
    elif op == "Squeeze" and 1 in cur.shape:
        axes = [i for i, d in enumerate(cur.shape) if d == 1]
        node, val = helper.make_node("Squeeze", [src, _const(inits, out + "_axes", axes)], [out]), np.squeeze(cur, tuple(axes))
    elif op == "Reshape":
        shape = [-1] if rng.random() < 0.5 or not r else [*cur.shape[:-1][::-1], cur.shape[-1]]
        if shape != [-1] and np.prod(shape) != cur.size:
            shape = [-1]
        if cur.size == 0 and shape == [-1]:
            shape = [0]
        node = helper.make_node("Reshape", [src, _const(inits, out + "_shape", shape, rng, nodes)], [out])
        val = cur.reshape(shape)
    elif op == "Flatten":
        axis = int(rng.integers(-r, r + 1)) if r else 0
        a = axis % (r or 1) if axis < 0 else axis
        node = helper.make_node("Flatten", [src], [out], axis=axis)
        val = cur.reshape(int(np.prod(cur.shape[:a])), -1) if cur.size else np.zeros(
            (int(np.prod(cur.shape[:a])), int(np.prod(cur.shape[a:]))), cur.dtype)
    elif op == "Slice" and r:
        axis = int(rng.integers(0, r))
        n = cur.shape[axis]
        step = int(rng.choice([1, 2, -1, -2, 3]))
        start, end = int(rng.integers(-n - 2, n + 2)), int(rng.integers(-n - 2, n + 2))
        node = helper.make_node("Slice", [src, _const(inits, out + "_s", [start]), _const(inits, out + "_e", [end]),
                                          _const(inits, out + "_a", [axis - r]), _const(inits, out + "_t", [step])],
                                [out])
        index = [slice(None)] * r
        index[axis] = slice(start, end, step)
        val = cur[tuple(index)]
    elif op == "Expand":
        target = [int(rng.integers(1, 3)) if rng.random() < 0.3 else 1 for _ in range(int(rng.integers(0, 2)))]
        target += [int(rng.integers(1, 3)) if d == 1 else d for d in cur.shape]
        node = helper.make_node("Expand", [src, _const(inits, out + "_shape", target)], [out])
        val = np.broadcast_to(cur, np.broadcast_shapes(cur.shape, tuple(target))).copy()
    elif op == "Identity":
        node, val = helper.make_node("Identity", [src], [out]), cur
    elif op == "Tile" and r:
        reps = [int(rng.integers(0, 3)) if rng.random() < 0.1 else int(rng.integers(1, 3)) for _ in range(r)]
        node, val = helper.make_node("Tile", [src, _const(inits, out + "_r", reps)], [out]), np.tile(cur, reps)
    elif op == "Concat" and r:
        axis = int(rng.integers(-r, r))
        node, val = helper.make_node("Concat", [src, src], [out], axis=axis), np.concatenate([cur, cur], axis)
    elif op == "Pad" and r and cur.dtype != np.bool_:
        pads = [int(rng.integers(-1, 3)) if cur.shape[i % r] > 1 else int(rng.integers(0, 3)) for i in range(2 * r)]
        mode = ["constant", "edge", "reflect"][int(rng.integers(0, 3))]
        if mode != "constant" and (cur.size == 0 or any(p < 0 for p in pads)):
            mode = "constant"
        if mode == "reflect" and any(pads[i] >= cur.shape[i % r] for i in range(2 * r)):
            mode = "constant"
        node = helper.make_node("Pad", [src, _const(inits, out + "_p", pads)], [out], mode=mode)
        val = _np_pad(cur, pads, mode)
        if val is None:
            return None
    elif op == "Gather" and r and cur.shape[0]:
        n = cur.shape[0]
        idx = rng.integers(-n, n, int(rng.integers(0, 4)))
        node = helper.make_node("Gather", [src, _const(inits, out + "_i", idx, rng, nodes)], [out], axis=0)
        val = cur[idx]
    elif op == "Cast":
        to = CHAIN_TYPES[int(rng.integers(0, len(CHAIN_TYPES)))]
        if cur.dtype.kind == "f" and np.dtype(to).kind in "iub":
            return None  # out-of-range float to int is undefined
        node = helper.make_node("Cast", [src], [out], to=helper.np_dtype_to_tensor_dtype(np.dtype(to)))
        with np.errstate(all="ignore"):
            val = cur.astype(to)
    elif op == "Where" and r:
        cond = rng.integers(0, 2, cur.shape[-1:]).astype(bool)
        inits.append(numpy_helper.from_array(cond, out + "_c"))
        node = helper.make_node("Where", [out + "_c", src, src], [out])
        val = cur.copy()
    elif op == "ReverseSequence" and r >= 2:
        lens = rng.integers(0, cur.shape[0] + 1, cur.shape[1])
        node = helper.make_node("ReverseSequence", [src, _const(inits, out + "_l", lens)], [out], batch_axis=1,
                                time_axis=0)
        val = cur.copy()
    elif op in ("ScatterElements", "ScatterND") and r and cur.shape[0]:
        n = cur.shape[0]
        rows = rng.permutation(n)[: int(rng.integers(1, n + 1))] - (n if rng.random() < 0.5 else 0)
        updates = random_like((len(rows), *cur.shape[1:]), cur.dtype, rng)
        inits.append(numpy_helper.from_array(updates, out + "_u"))
        if op == "ScatterND":
            index = _const(inits, out + "_i", rows.reshape(-1, 1), rng, nodes)
        else:
            index = _const(inits, out + "_i", np.broadcast_to(rows.reshape((-1,) + (1,) * (r - 1)), updates.shape), rng,
                           nodes)
        node = helper.make_node(op, [src, index, out + "_u"], [out], **({"axis": 0} if op != "ScatterND" else {}))
        val = cur.copy()
        val[rows] = updates
    elif op == "Split" and r and cur.shape[-1] >= 2:
        node = helper.make_node("Split", [src], [out, out + "_b"], axis=-1, num_outputs=2)
        val = cur[..., : (cur.shape[-1] + 1) // 2]
    elif op == "Shape":
        node, val = helper.make_node("Shape", [src], [out], start=int(rng.integers(-r - 1, r + 1))), None
        val = np.array(cur.shape[node.attribute[0].i:] if node.attribute[0].i >= -r else cur.shape, np.int64)
    elif op == "NonZero" and cur.dtype != object:
        node, val = helper.make_node("NonZero", [src], [out]), np.array(np.nonzero(cur.reshape(cur.shape or (1,))))
    elif op == "Neg" and cur.dtype.kind == "i":
        node, val = helper.make_node("Neg", [src], [out]), -cur
    elif op == "Trilu" and r >= 2:
        k = int(rng.integers(-3, 4))
        node = helper.make_node("Trilu", [src, _const(inits, out + "_k", k, rng, nodes)], [out], upper=int(rng.integers(0, 2)))
        val = cur.copy()
    elif op == "Compress" and r:
        cond = rng.integers(0, 2, int(rng.integers(0, cur.shape[0] + 2))).astype(bool)
        if cond.sum() and np.flatnonzero(cond)[-1] >= cur.shape[0]:
            cond = cond[: cur.shape[0]]
        inits.append(numpy_helper.from_array(cond, out + "_c"))
        node, val = helper.make_node("Compress", [src, out + "_c"], [out], axis=0), cur[: len(cond)][cond[: cur.shape[0]]]
    elif op == "Relu" and cur.dtype.kind == "f":  # not onnxop's: the CLI path runs it with --others reference
        node, val = helper.make_node("Relu", [src], [out]), cur
    if node is None:
        return None
    return node, np.asarray(val)


def _np_pad(cur, pads, mode):
    r = cur.ndim
    begin, end = pads[:r], pads[r:]
    crop = tuple(slice(max(-b, 0), cur.shape[i] - max(-e, 0)) for i, (b, e) in enumerate(zip(begin, end)))
    if any(s.stop < s.start for s in crop):
        return None
    x = cur[crop]
    width = [(max(b, 0), max(e, 0)) for b, e in zip(begin, end)]
    if mode == "constant":
        return np.pad(x, width)
    if x.size == 0:
        return None
    return np.pad(x, width, mode=mode)
