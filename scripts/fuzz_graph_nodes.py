"""The nodes scripts/fuzz_graphs.py draws: ``step`` one data-movement node on a value, ``unsupported`` a
node onnxop does not run, ``make_case`` a seed's whole graph."""

from __future__ import annotations

import numpy as np
import onnx
from fuzz_cases import random_like
from fuzz_graph_builder import OPSETS, PLAIN, UNSUPPORTED, Builder, draw_axis, draw_type, gather, shape_of
from fuzz_graph_oracle import OPSET, native
from fuzz_graph_wide import HUGE, WIDE, wide_step
from onnx import TensorProto, helper, numpy_helper


def step(b: Builder, src: str, wide: bool = False) -> list[str] | None:
    rng, op = b.rng, None
    x = b.values[src]
    r = x.ndim
    ops = ["Reshape", "Transpose", "Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND",
           "ScatterElements", "ScatterND", "Pad", "Tile", "Expand", "Where", "OneHot", "Cast", "Squeeze",
           "Unsqueeze", "Flatten", "DepthToSpace", "SpaceToDepth", "Trilu", "Compress", "NonZero", "Shape", "Size",
           "ConstantOfShape", "Range", "Identity", "ReverseSequence", "EyeLike", "Transpose", "Concat", "Slice",
           "Gather", "Reshape", "Resize", "CenterCropPad", "Arith", "Compare", "Upsample"] + (WIDE if wide else [])
    op = ops[int(rng.integers(0, len(ops)))]
    o = b.opset
    if op in WIDE:
        return wide_step(b, src, op)
    if op == "Reshape":
        shape = list(x.shape)
        rng.shuffle(shape)
        if x.size and rng.random() < 0.5:
            shape = [int(x.size)] if rng.random() < 0.5 else [-1, int(x.shape[-1]) if r else 1]
        if shape and rng.random() < 0.3 and x.size:
            shape[int(rng.integers(0, len(shape)))] = -1
        allow = {}
        if o >= 14 and rng.random() < 0.3:
            allow = {"allowzero": 1}
        return b.try_node("Reshape", [src, b.const(shape)], **allow)
    if op == "Transpose":
        return b.try_node("Transpose", [src], perm=[int(p) for p in rng.permutation(r)]) if r else None
    if op == "Concat" and r:
        axis = draw_axis(rng, r)
        others = [v for v in b.values if b.values[v].dtype == x.dtype and b.values[v].ndim == r and
                  all(a == c for k, (a, c) in enumerate(zip(b.values[v].shape, x.shape)) if k != axis % r)]
        pick = [others[int(rng.integers(0, len(others)))] for _ in range(int(rng.integers(1, 3)))]
        if rng.random() < 0.3:
            shape = list(x.shape)
            shape[axis] = int(rng.integers(0, 3))
            pick.append(b.const(random_like(shape, x.dtype, rng), x.dtype))
        return b.try_node("Concat", [src] + pick, axis=axis)
    if op == "Split" and r:
        axis = draw_axis(rng, r)
        n = int(x.shape[axis])
        parts = int(rng.integers(1, 4))
        if o >= 18 and rng.random() < 0.5:
            return b.try_node("Split", [src], parts, axis=axis, num_outputs=parts)
        cuts = sorted(int(c) for c in rng.integers(0, n + 1, parts - 1))
        sizes = [e - s for s, e in zip([0] + cuts, cuts + [n])]
        if o >= 13:
            return b.try_node("Split", [src, b.const(sizes)], parts, axis=axis)
        return b.try_node("Split", [src], parts, axis=axis, split=sizes)
    if op == "Slice" and r:
        k = int(rng.integers(1, r + 1))
        axes = [int(a) for a in rng.permutation(r)[:k]]
        starts, ends, steps = [], [], []
        for a in axes:
            n = int(x.shape[a])
            st = int(rng.choice([-1, 1, 1, 2, -2, 3]))
            s, e = int(rng.integers(-n - 2, n + 3)), int(rng.integers(-n - 2, n + 3))
            if rng.random() < 0.15:
                e = int(np.iinfo(np.int64).max if st > 0 else np.iinfo(np.int64).min)
            starts.append(s), ends.append(e), steps.append(st)
        if rng.random() < 0.2:  # axes left out ('' in the middle when steps follow): 0, 1, ...
            axes = list(range(k))
        left_out = axes == list(range(k)) and rng.random() < 0.5
        ins = [src, b.const(starts), b.const(ends), "" if left_out else b.const(axes)]
        if rng.random() < 0.8:
            ins.append(b.const(steps))
        return b.try_node("Slice", ins)
    if op == "Gather" and r:
        return gather(b, rng, src, x, r, 3, [np.int64, np.int32])
    if op == "GatherElements" and r:
        axis = draw_axis(rng, r)
        n = int(x.shape[axis])
        if not n:
            return None
        shape = [int(rng.integers(0, d + 1)) for d in x.shape]
        return b.try_node("GatherElements", [src, b.const(rng.integers(-n, n, shape))], axis=axis)
    if op == "GatherND" and r:
        bd = int(rng.integers(0, r)) if o >= 12 and rng.random() < 0.3 else 0
        k = int(rng.integers(1, r - bd + 1))
        lead = list(x.shape[:bd])
        shape = lead + shape_of(rng, int(rng.integers(0, 2))) + [k]
        idx = np.stack([rng.integers(-max(int(x.shape[bd + j]), 1), max(int(x.shape[bd + j]), 1), shape[:-1])
                        for j in range(k)], -1) if k else np.zeros(shape, np.int64)
        return b.try_node("GatherND", [src, b.const(idx)], **({"batch_dims": bd} if bd else {}))
    if op == "ScatterElements" and r and x.size:
        axis = draw_axis(rng, r)
        n = int(x.shape[axis])
        shape = list(x.shape)
        shape[axis] = 1
        idx = rng.integers(-n, n, shape)
        upd = b.const(random_like(shape, x.dtype, rng), x.dtype) if rng.random() < 0.5 else None
        if upd is None:
            return None
        return b.try_node("ScatterElements", [src, b.const(idx), upd], axis=axis)
    if op == "ScatterND" and r and x.size:
        k = int(rng.integers(1, r + 1))
        m = int(rng.integers(1, 4))
        pos = set()
        rows = []
        for _ in range(m):
            t = tuple(int(rng.integers(0, x.shape[j])) for j in range(k))
            if t not in pos:
                pos.add(t)
                rows.append(t)
        idx = np.array(rows, np.int64).reshape(len(rows), k)
        upd = random_like([len(rows)] + list(x.shape[k:]), x.dtype, rng)
        return b.try_node("ScatterND", [src, b.const(idx), b.const(upd, x.dtype)])
    if op == "Pad":
        pads = [int(p) for p in rng.integers(-1, 3, 2 * r)]
        mode = str(rng.choice(["constant", "constant", "edge", "reflect"] + (["wrap"] if o >= 19 else [])))
        if o < 11:
            return None
        ins = [src, b.const(pads)]
        if mode == "constant" and rng.random() < 0.5 and x.dtype.itemsize and x.dtype.name not in ("int4", "uint4"):
            ins.append(b.const(random_like([], x.dtype, rng), x.dtype))
        return b.try_node("Pad", ins, mode=mode)
    if op == "Tile":
        return b.try_node("Tile", [src, b.const(rng.integers(0, 3, r))]) if r else None
    if op == "Expand":
        shape = [int(d) if d != 1 or rng.random() < 0.5 else int(rng.integers(1, 4)) for d in x.shape]
        if rng.random() < 0.3:
            shape = [int(rng.integers(1, 3))] + shape
        return b.try_node("Expand", [src, b.const(shape)])
    if op == "Where":
        cond = rng.integers(0, 2, x.shape[-1:] if r and rng.random() < 0.5 else x.shape).astype(bool)
        other = b.partner(src, rng, cond.shape)
        return b.try_node("Where", [b.const(cond, np.bool_), src, other] if rng.random() < 0.5
                          else [b.const(cond, np.bool_), other, src])
    if op == "OneHot" and x.dtype.kind in "iu" and r < 5:
        depth = b.const(int(rng.integers(1, 6)), rng.choice([np.int64, np.float32, np.int32]))
        vals = random_like([2], draw_type(rng), rng)
        return b.try_node("OneHot", [src, depth, b.const(vals, vals.dtype)], axis=int(rng.integers(-r - 1, r + 1)))
    if op == "Cast" and not (b.wide and x.dtype.kind == "c"):  # (ONNX casts no complex; numpy does)
        to = draw_type(rng)
        attrs = {"to": helper.np_dtype_to_tensor_dtype(to)}
        if o >= 19 and rng.random() < 0.3:
            attrs["saturate"] = int(rng.integers(0, 2))
        return b.try_node("Cast", [src], **attrs)
    if op == "Squeeze":
        ones = [k for k, d in enumerate(x.shape) if d == 1]
        axes = [k - r if rng.random() < 0.5 else k for k in ones if rng.random() < 0.7]
        if o >= 13:
            return b.try_node("Squeeze", [src, b.const(axes)] if axes or rng.random() < 0.5 else [src])
        return b.try_node("Squeeze", [src], **({"axes": axes} if axes else {}))
    if op == "Unsqueeze" and r < 6:
        axes = sorted({int(a) for a in rng.integers(-r - 1, r + 1, int(rng.integers(1, 3)))})
        if o >= 13:
            return b.try_node("Unsqueeze", [src, b.const(axes)])
        return b.try_node("Unsqueeze", [src], axes=axes)
    if op == "Flatten":
        return b.try_node("Flatten", [src], axis=int(rng.integers(-r, r + 1)) if r else 0)
    if op in ("DepthToSpace", "SpaceToDepth") and r == 4:
        bs = int(rng.choice([1, 2]))
        attrs = {"blocksize": bs}
        if op == "DepthToSpace" and rng.random() < 0.5:
            attrs["mode"] = str(rng.choice(["DCR", "CRD"]))
        return b.try_node(op, [src], **attrs)
    if op == "Trilu" and r >= 2 and o >= 14:
        ins = [src] if rng.random() < 0.3 else [src, b.const(int(rng.integers(-3, 4)))]
        return b.try_node("Trilu", ins, upper=int(rng.integers(0, 2)))
    if op == "Compress" and r:
        n = int(x.shape[0]) if rng.random() < 0.5 else int(x.size)
        cond = rng.integers(0, 2, int(rng.integers(0, n + 1))).astype(bool)
        attrs = {"axis": 0} if rng.random() < 0.5 else {}
        return b.try_node("Compress", [src, b.const(cond, np.bool_)], **attrs)
    if op == "NonZero" and x.dtype.name not in ("int4", "uint4") and x.dtype.itemsize <= 8:
        return b.try_node("NonZero", [src])
    if op == "Shape":
        attrs = {}
        if o >= 15 and rng.random() < 0.5:
            attrs = {"start": int(rng.integers(-r - 1, r + 1))}
        return b.try_node("Shape", [src], **attrs)
    if op == "Size":
        return b.try_node("Size", [src])
    if op == "ConstantOfShape" and x.dtype == np.int64 and r == 1 and x.size <= 4 and (x >= 0).all() and x.prod() < 200:
        v = random_like([1], draw_type(rng), rng)
        attrs = {"value": numpy_helper.from_array(v, "value")} if rng.random() < 0.7 else {}
        return b.try_node("ConstantOfShape", [src], **attrs)
    if op == "Range" and r == 0 and x.dtype in (np.int64, np.int32, np.int16):
        lim = b.const(int(rng.integers(-5, 9)), x.dtype)
        delta = b.const(int(rng.choice([1, 2, -1, 3])), x.dtype)
        return b.try_node("Range", [src, lim, delta])
    if op == "Resize" and r and o >= 11:
        scales = [float(rng.choice([1, 2, 0.5, 3, 1.5])) for _ in range(r)]
        attrs = {"mode": "nearest", "nearest_mode": str(rng.choice(["round_prefer_floor", "round_prefer_ceil",
                                                                     "floor", "ceil"])),
                 "coordinate_transformation_mode": str(rng.choice(["half_pixel", "asymmetric", "align_corners",
                                                                    "pytorch_half_pixel"]))}
        if rng.random() < 0.5:
            return b.try_node("Resize", [src, "", b.const(scales, np.float32)], **attrs)
        sizes = [max(0, int(d * sc)) for d, sc in zip(x.shape, scales)]
        return b.try_node("Resize", [src, "", "", b.const(sizes)], **attrs)
    if op == "Upsample" and r and o < 10:
        return b.try_node("Upsample", [src, b.const([float(rng.choice([1, 2, 3])) for _ in range(r)], np.float32)],
                          mode="nearest")
    if op == "CenterCropPad" and r and o >= 18:
        shape = [int(rng.integers(0, d + 3)) for d in x.shape]
        return b.try_node("CenterCropPad", [src, b.const(shape)])
    if op in ("Arith", "Compare") and x.dtype.kind in "iu" and x.dtype.itemsize <= 8:
        other = b.partner(src, rng)
        if op == "Compare":
            return b.try_node(str(rng.choice(["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])),
                              [src, other])
        name = str(rng.choice(["Add", "Sub", "Mul", "Max", "Min", "Div", "Mod"]))
        if name in ("Div", "Mod") and not np.all(b.values[other]):
            return None
        return b.try_node(name, [src, other], **({"fmod": int(rng.integers(0, 2))} if name == "Mod" and
                                                 x.dtype.kind == "i" and rng.random() < 0.5 else {}))
    if op == "Identity":
        return b.try_node("Identity", [src])
    if op == "ReverseSequence" and r >= 2:
        ba, ta = (0, 1) if rng.random() < 0.5 else (1, 0)
        lens = rng.integers(0 if o > 10 else 1, x.shape[ta] + 1, x.shape[ba])
        return b.try_node("ReverseSequence", [src, b.const(lens)], batch_axis=ba, time_axis=ta)
    if op == "EyeLike" and r == 2:
        attrs = {"k": int(rng.integers(-2, 3))}
        if rng.random() < 0.5:
            attrs["dtype"] = helper.np_dtype_to_tensor_dtype(np.dtype(rng.choice(PLAIN)))
        return b.try_node("EyeLike", [src], **attrs)
    return None


def unsupported(b: Builder, src: str) -> list[str] | None:
    """A node onnxop does not run (float arithmetic) on ``src`` cast to float32 first if need be."""
    x = b.values[src]
    if x.dtype.kind == "c":  # (no Cast from complex in ONNX; onnx.reference runs numpy's)
        return None
    if x.dtype != np.float32:
        got = b.try_node("Cast", [src], to=TensorProto.FLOAT)
        if got is None:
            return None
        src = got[0]
        x = b.values[src]
    op = UNSUPPORTED[int(b.rng.integers(0, len(UNSUPPORTED)))]
    if op == "MatMul" and x.ndim >= 1:
        with np.errstate(all="ignore"):
            w = np.nan_to_num(np.round(random_like([x.shape[-1], 2], np.dtype(np.float32), b.rng).clip(-4, 4)))
        w = b.const(w, np.float32)
        return b.try_node("MatMul", [src, w])
    if op == "Softmax" and x.ndim >= 1:
        return b.try_node("Softmax", [src])
    return b.try_node("Relu", [src])


def make_case(seed: int, others: bool = False, wide: bool = False) -> tuple[onnx.ModelProto, dict, list[str]]:
    """(model, {input name: array}, expected outputs' names) for ``seed``; ``wide`` adds WIDE's draws."""
    rng = np.random.default_rng([seed, 7])
    b = Builder(rng, int(rng.choice(OPSETS)))
    b.wide = wide
    OPSET[0] = b.opset
    for _ in range(int(rng.integers(1, 4))):
        b.add_input(random_like(shape_of(rng), draw_type(rng), rng))
    if wide:  # a string or complex64 input now and then (a stream of its own: the other draws stay as they were)
        extra = np.random.default_rng([seed, 17])
        if extra.random() < 0.35:
            b.add_input(random_like(shape_of(extra), np.dtype(object if extra.random() < 0.6 else np.complex64), extra))
    if rng.random() < 0.3:  # an initializer as data
        v = b.const(random_like(shape_of(rng), draw_type(rng), rng), None)
        b.values[v] = native(b.values[v])
    made: list[str] = []
    want = int(rng.integers(2, 9))
    where_other = int(rng.integers(0, want + 1)) if others else -1
    tries = 0
    while len(made) < want and tries < 60:
        tries += 1
        pool = [v for v in b.values if max(b.values[v].shape, default=0) < HUGE]  # (HugeEmpty's: read by none)
        src = made[-1] if made and rng.random() < 0.6 and made[-1] in pool else pool[int(rng.integers(0, len(pool)))]
        if len(made) == where_other:
            outs = unsupported(b, src)
            where_other = -1
        else:
            try:
                outs = step(b, src, wide)
            except (ValueError, IndexError, ZeroDivisionError):  # no such node on this value
                outs = None
        if not outs:
            continue
        made.append(outs[0])
        for extra in outs:
            if rng.random() < 0.3 or extra == outs[0] and rng.random() < 0.15:
                b.outputs.append(extra)
    if not made:
        made = b.try_node("Identity", [b.inputs[0]])
    if made[-1] not in b.outputs:
        b.outputs.append(made[-1])
    if rng.random() < 0.1:
        b.outputs.append(b.inputs[int(rng.integers(0, len(b.inputs)))])
    if b.inits and rng.random() < 0.1:
        b.outputs.append(b.inits[int(rng.integers(0, len(b.inits)))])
    model = b.model()
    return model, {n: b.values[n] for n in b.inputs}, list(b.outputs)
