"""The nodes scripts/fuzz_graphs.py draws under ``--draw wide`` only: ``WIDE`` names them, ``wide_step``
makes one on a value (fuzz_graph_nodes.step draws from the plain ops and these alike)."""

from __future__ import annotations

import numpy as np
from fuzz_cases import random_like
from fuzz_graph_builder import EXOTIC, PLAIN, Builder, draw_axis, draw_type, gather
from onnx import helper


# --draw wide: operators, attributes and inputs the plain draw never makes (appended, so that a plain
# seed's graph stays what it was)
WIDE = ["ScatterReduce", "Scatter", "TensorScatter", "BitCast", "CastLike", "Unary", "Logic", "PadAxes", "ShapeEnd",
        "ResizeAxes", "CenterCropAxes", "SplitEmpty", "CastRound", "GatherInt32", "HugeEmpty"]
HUGE = 1 << 40  # an axis of an empty output (nothing to make: no table, band or buffer may count its positions)


def wide_step(b: Builder, src: str, op: str) -> list[str] | None:
    """One of WIDE's draws on ``src``."""
    rng, o = b.rng, b.opset
    x = b.values[src]
    r = x.ndim
    if op == "ScatterReduce" and r and x.size and o >= 16:  # reduction, duplicate indices
        red = str(rng.choice(["add", "mul", "none"] + (["max", "min"] if o >= 18 else [])))
        if rng.random() < 0.5:
            axis = draw_axis(rng, r)
            n = int(x.shape[axis])
            shape = [int(rng.integers(1, d + 1)) for d in x.shape]
            shape[axis] = int(rng.integers(1, n + 3))
            if red == "none":  # distinct positions along the axis: the first of a permutation of each line
                shape[axis] = min(shape[axis], n)
                full = list(shape)
                full[axis] = n
                idx = np.take(np.argsort(rng.random(full), axis=axis), range(shape[axis]), axis=axis)
            else:
                idx = rng.integers(-n, n, shape)
            upd = b.const(random_like(list(idx.shape), x.dtype, rng), x.dtype)
            return b.try_node("ScatterElements", [src, b.const(idx, rng.choice([np.int64, np.int32])), upd],
                              axis=axis, reduction=red)
        k = int(rng.integers(1, r + 1))
        m = int(rng.integers(1, 5))
        rows = [tuple(int(rng.integers(-x.shape[j], x.shape[j])) for j in range(k)) for _ in range(m)]
        if red == "none":
            rows = list({tuple(v % x.shape[j] for j, v in enumerate(t)): t for t in rows}.values())
        idx = np.array(rows, np.int64).reshape(len(rows), k)
        upd = random_like([len(rows)] + list(x.shape[k:]), x.dtype, rng)
        return b.try_node("ScatterND", [src, b.const(idx), b.const(upd, x.dtype)], reduction=red)
    if op == "Scatter" and r and x.size and o < 11:
        axis = draw_axis(rng, r)
        n = int(x.shape[axis])
        shape = list(x.shape)
        shape[axis] = 1
        idx = rng.integers(0, n, shape)
        return b.try_node("Scatter", [src, b.const(idx), b.const(random_like(shape, x.dtype, rng), x.dtype)],
                          axis=axis)
    if op == "TensorScatter" and r >= 2 and o >= 24:
        axis = int(rng.integers(1, r)) * (-1 if rng.random() < 0.3 else 1)
        ax = axis % r
        n = int(x.shape[ax])
        seq = int(rng.integers(0, n + 1))
        ushape = list(x.shape)
        ushape[ax] = seq
        mode = str(rng.choice(["linear", "circular"]))
        ins = [src, b.const(random_like(ushape, x.dtype, rng), x.dtype)]
        if rng.random() < 0.7:
            hi = n - seq + 1 if mode == "linear" else n + 2
            ins.append(b.const(rng.integers(0, max(hi, 1), x.shape[0]), np.int64))
        return b.try_node("TensorScatter", ins, axis=axis, mode=mode)
    if op == "BitCast" and o >= 26:
        same = [t for t in PLAIN + EXOTIC if np.dtype(t).itemsize == x.dtype.itemsize and np.dtype(t) != np.bool_]
        if x.dtype == np.bool_ or not same or x.dtype.name in ("int4", "uint4", "int2", "uint2", "float4_e2m1fn"):
            return None
        to = np.dtype(same[int(rng.integers(0, len(same)))])
        return b.try_node("BitCast", [src], to=helper.np_dtype_to_tensor_dtype(to))
    if op == "CastLike" and o >= 15 and x.dtype.kind != "c":
        to = draw_type(rng)
        attrs = {"saturate": int(rng.integers(0, 2))} if o >= 19 and rng.random() < 0.4 else {}
        return b.try_node("CastLike", [src, b.const(random_like([int(rng.integers(0, 3))], to, rng), to)], **attrs)
    if op == "CastRound" and o >= 25 and x.dtype.kind != "c":
        to = draw_type(rng)
        attrs = {"to": helper.np_dtype_to_tensor_dtype(to), "round_mode": str(rng.choice(["up", "down", "nearest"]))}
        if rng.random() < 0.5:
            attrs["saturate"] = int(rng.integers(0, 2))
        return b.try_node("Cast", [src], **attrs)
    if op == "Unary" and x.dtype.kind == "i" and x.dtype.itemsize <= 8:
        return b.try_node(str(rng.choice(["Neg", "Abs"])), [src])
    if op == "Logic" and x.dtype == np.bool_:
        if rng.random() < 0.3:
            return b.try_node("Not", [src])
        other = b.partner(src, rng)
        return b.try_node(str(rng.choice(["And", "Or", "Xor"])), [src, other])
    if op == "PadAxes" and r and o >= 18:
        k = int(rng.integers(1, r + 1))
        axes = [int(a) - (r if rng.random() < 0.5 else 0) for a in rng.permutation(r)[:k]]
        pads = [int(p) for p in rng.integers(-1, 3, 2 * k)]
        mode = str(rng.choice(["constant", "edge", "reflect"] + (["wrap"] if o >= 19 else [])))
        value = "" if mode != "constant" or rng.random() < 0.5 or x.dtype.name in ("int4", "uint4") \
            else b.const(random_like([], x.dtype, rng), x.dtype)
        return b.try_node("Pad", [src, b.const(pads), value, b.const(axes)], mode=mode)
    if op == "ShapeEnd" and o >= 15:
        attrs = {"end": int(rng.integers(-r - 2, r + 2))}
        if rng.random() < 0.5:
            attrs["start"] = int(rng.integers(-r - 2, r + 2))
        return b.try_node("Shape", [src], **attrs)
    if op == "ResizeAxes" and r and o >= 18:
        k = int(rng.integers(1, r + 1))
        axes = sorted(int(a) for a in rng.permutation(r)[:k])
        attrs = {"mode": "nearest", "axes": axes,
                 "nearest_mode": str(rng.choice(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])),
                 "coordinate_transformation_mode": str(rng.choice(["half_pixel", "asymmetric", "align_corners",
                                                                    "pytorch_half_pixel", "tf_half_pixel_for_nn"]))}
        if rng.random() < 0.5:
            sizes = [int(rng.integers(0, 2 * x.shape[a] + 2)) for a in axes]
            attrs["keep_aspect_ratio_policy"] = str(rng.choice(["stretch", "not_larger", "not_smaller"]))
            return b.try_node("Resize", [src, "", "", b.const(sizes)], **attrs)
        scales = [float(rng.choice([1, 2, 0.5, 3, 1.5, 0.75])) for _ in axes]
        return b.try_node("Resize", [src, "", b.const(scales, np.float32)], **attrs)
    if op == "CenterCropAxes" and r and o >= 18:
        k = int(rng.integers(1, r + 1))
        axes = [int(a) - (r if rng.random() < 0.5 else 0) for a in rng.permutation(r)[:k]]
        shape = [int(rng.integers(0, x.shape[a] + 3)) for a in axes]
        return b.try_node("CenterCropPad", [src, b.const(shape)], axes=axes)
    if op == "SplitEmpty" and r and o >= 13:  # split's '' input, num_outputs of more parts than elements
        axis = draw_axis(rng, r)
        parts = int(rng.integers(1, 5))
        if o >= 18 and rng.random() < 0.5:
            return b.try_node("Split", [src, ""], parts, axis=axis, num_outputs=parts)
        return b.try_node("Split", [src, ""], parts, axis=axis)
    if op == "HugeEmpty" and r and o >= 10:  # an empty value grown along another axis to 2**40
        if x.size:  # emptied first: axis 0 sliced to nothing
            got = b.try_node("Slice", [src, b.const([0]), b.const([0]), b.const([0])])
            if got is None:
                return None
            src = got[0]
            x = b.values[src]
        zero = [k for k, d in enumerate(x.shape) if d == 0]
        grow = int(rng.integers(0, r))
        how = str(rng.choice(["Expand", "Tile", "Pad", "CenterCropPad", "Resize", "Reshape", "Slice"]))
        big = [HUGE if k == grow and k not in zero else int(d) for k, d in enumerate(x.shape)]
        if how == "Expand":
            return b.try_node("Expand", [src, b.const([HUGE if d == 1 else int(d) for d in x.shape])]) \
                if 1 in x.shape else b.try_node("Expand", [src, b.const([HUGE] + [int(d) for d in x.shape])])
        if how == "Tile":
            return b.try_node("Tile", [src, b.const([HUGE if k == grow else 1 for k in range(r)])])
        if how == "Pad":
            pads = [0] * (2 * r)
            pads[grow + r * int(rng.integers(0, 2))] = HUGE
            return b.try_node("Pad", [src, b.const(pads)])
        if how == "CenterCropPad" and o >= 18:
            return b.try_node("CenterCropPad", [src, b.const(big)])
        if how == "Resize" and o >= 13:
            return b.try_node("Resize", [src, "", "", b.const(big)], mode="nearest")
        if how == "Reshape" and o >= 14:
            return b.try_node("Reshape", [src, b.const([HUGE] + [0] * len(zero))], allowzero=1)
        if how == "Slice":
            return b.try_node("Slice", [src, b.const([-HUGE]), b.const([HUGE]), b.const([grow]), b.const([HUGE])])
        return None
    if op == "GatherInt32" and r:
        return gather(b, rng, src, x, r, 4, [np.int32, np.int64])
    return None
