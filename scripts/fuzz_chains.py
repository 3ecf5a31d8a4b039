"""The chains scripts/fuzz_ops.py draws: ``chain_case(rng)`` is a small graph of
views and tensor operators on one input of random shape (zero-size dims, rank 0,
size-1 axes) and layout, some intermediates also graph outputs; each node's
expected value is numpy's.
"""

from __future__ import annotations

import numpy as np
import onnx
from fuzz_cases import random_like, relaid
from onnx import TensorProto, helper, numpy_helper

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
