"""Random graphs of data-movement nodes: onnxop's outputs against onnx.reference's, bit for bit.

Each seed draws a graph of 2 to 8 nodes (Reshape, Transpose, Concat, Split, Slice, the Gathers and
Scatters, Pad, Tile, Expand, Where, OneHot, Cast, Squeeze/Unsqueeze, Flatten, DepthToSpace, Trilu,
Compress, NonZero, Shape, Size, ConstantOfShape, Range, Identity, ...) at a random opset, on one to
three graph inputs of random types (1/2/4/8-byte, bool, float16/bfloat16, float8, int4) and shapes
(empty, rank 0, up to rank 6), with initializers as data and as indices, a value read by several
nodes, graph outputs that later nodes read too, and now and then an output that is a graph input or
an initializer. ``--others`` puts a node onnxop does not run (Relu, MatMul, Softmax) at a random
place in the chain. Each node's value is onnx.reference's (the graph is grown one node at a time on
the reference's values), the whole graph's expected outputs are onnx.reference's run of it.

Paths: ``backend`` (onnxop_cli.backend's prepare/run, in process), ``cli`` (``onnxop run MODEL
--input NAME=X.pb ... -o DIR/ --json``, in process through cli.main.run; with ``--others`` it adds
``--others onnxruntime --verify``, and checks that --json's ``ran`` names each node where it ran).
Limits (``--limits small``) shrink every band, window and binding to a few hundred bytes so that a
graph of a few KiB runs in many bands (gather.DEFAULT_BAND, pieces.DEFAULT_BAND/BAND, the binding).

    python scripts/fuzz_graphs.py --seeds 0-99 --backend vulkan --limits small
    python scripts/fuzz_graphs.py --seeds 17 --path cli --others -v     # replay one seed, print its graph
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun
from onnx.reference.ops.op_resize import Resize as _Computed

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from fuzz_cases import random_like  # noqa: E402
from fuzz_oracles import native, same_bits  # noqa: E402

try:
    import ml_dtypes

    EXOTIC = [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fnuz,
              ml_dtypes.float8_e5m2fnuz, ml_dtypes.int4, ml_dtypes.uint4]
    EXOTIC += [getattr(ml_dtypes, n) for n in ("float4_e2m1fn", "float8_e8m0fnu", "int2", "uint2") if hasattr(ml_dtypes, n)]
except ImportError:  # pragma: no cover
    EXOTIC = []
PLAIN = [np.float32, np.int64, np.uint8, np.int8, np.float16, np.int32, np.bool_, np.float64, np.uint16, np.int16,
         np.uint32, np.uint64]
OPSETS = [9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28]
UNSUPPORTED = ("Relu", "MatMul", "Softmax")


def elem(x: np.ndarray) -> int:
    return helper.np_dtype_to_tensor_dtype(x.dtype)


def shape_of(rng, rank: int | None = None) -> list[int]:
    rank = int(rng.choice([0, 1, 2, 2, 3, 3, 4, 5, 6])) if rank is None else rank
    dims = [int(rng.integers(1, 4 * SCALE[0] + 1)) for _ in range(rank)]
    if rank > 4:
        dims = [int(rng.integers(1, 3)) for _ in range(rank)]
    elif rank > 2:
        dims = [int(rng.integers(1, 5)) for _ in range(rank - 2)] + dims[rank - 2:]
    if rank and rng.random() < 0.1:
        dims[int(rng.integers(0, rank))] = 0
    return dims


def draw_type(rng) -> np.dtype:
    pool = EXOTIC if EXOTIC and rng.random() < 0.25 else PLAIN  # (most operators refuse float8 and int4)
    return np.dtype(pool[int(rng.integers(0, len(pool)))])


class Builder:
    """A graph grown one node at a time on onnx.reference's values."""

    def __init__(self, rng, opset: int) -> None:
        self.rng, self.opset = rng, opset
        self.values: dict[str, np.ndarray] = {}
        self.inputs: list[str] = []
        self.inits: list[str] = []
        self.nodes: list = []
        self.outputs: list[str] = []
        self.count = 0

    def name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def add_input(self, x: np.ndarray) -> str:
        n = self.name("in")
        self.values[n] = x
        self.inputs.append(n)
        return n

    def const(self, x, dtype=np.int64) -> str:
        x = np.asarray(x, dtype=dtype)
        n = self.name("c")
        self.values[n] = x
        how = self.rng.random()
        if how < 0.15 and self.opset >= 12 and x.dtype == np.int64 and x.ndim <= 1 and x.size:  # a Constant node's ints
            attr = {"value_ints": [int(v) for v in x]} if x.ndim else {"value_int": int(x)}
            self.nodes.append(helper.make_node("Constant", [], [n], **attr))
        elif how < 0.25:  # a Constant node's tensor
            self.nodes.append(helper.make_node("Constant", [], [n], value=numpy_helper.from_array(x, n)))
        else:
            self.inits.append(n)
        return n

    def try_node(self, op: str, ins: list[str], nouts: int = 1, domain: str = "", **attrs) -> list[str] | None:
        """Add the node if onnx.reference runs it (on the values so far); its outputs' names, or None."""
        try:
            onnx.defs.get_schema(op, self.opset, domain)
        except onnx.defs.SchemaError:  # no such operator at this opset (onnx.reference runs it anyway)
            return None
        outs = [self.name("v") for _ in range(nouts)]
        node = helper.make_node(op, ins, outs, domain=domain, **attrs)
        feeds = {i: self.values[i] for i in ins if i}
        graph = helper.make_graph([node], "one", [helper.make_tensor_value_info(i, elem(v), v.shape)
                                                   for i, v in feeds.items()],
                                  [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outs])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = ReferenceEvaluator(model, new_ops=OVERRIDES).run(None, feeds)
        except Exception:  # noqa: BLE001 - not a valid node: not drawn
            return None
        got = [np.asarray(g) for g in got]
        if any(g.dtype == object for g in got) or any(g.size > 20000 * SCALE[0] ** 2 for g in got):
            return None
        self.nodes.append(node)
        for o, g in zip(outs, got):
            self.values[o] = native(g)
        return outs

    def model(self) -> onnx.ModelProto:
        inits = [numpy_helper.from_array(self.values[n], n) for n in self.inits]
        graph = helper.make_graph(
            self.nodes, "fuzz", [helper.make_tensor_value_info(n, elem(self.values[n]), self.values[n].shape)
                                 for n in self.inputs],
            [helper.make_tensor_value_info(n, elem(self.values[n]), self.values[n].shape) for n in self.outputs],
            initializer=inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])


# ----------------------------------------------------------------------------------------- the nodes

def _axis(rng, r: int) -> int:
    return int(rng.integers(-r, r)) if r else 0


def step(b: Builder, src: str) -> list[str] | None:
    rng, op = b.rng, None
    x = b.values[src]
    r = x.ndim
    ops = ["Reshape", "Transpose", "Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND",
           "ScatterElements", "ScatterND", "Pad", "Tile", "Expand", "Where", "OneHot", "Cast", "Squeeze",
           "Unsqueeze", "Flatten", "DepthToSpace", "SpaceToDepth", "Trilu", "Compress", "NonZero", "Shape", "Size",
           "ConstantOfShape", "Range", "Identity", "ReverseSequence", "EyeLike", "Transpose", "Concat", "Slice",
           "Gather", "Reshape", "Resize", "CenterCropPad", "Arith", "Compare", "Upsample"]
    op = ops[int(rng.integers(0, len(ops)))]
    o = b.opset
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
        axis = _axis(rng, r)
        others = [v for v in b.values if b.values[v].dtype == x.dtype and b.values[v].ndim == r and
                  all(a == c for k, (a, c) in enumerate(zip(b.values[v].shape, x.shape)) if k != axis % r)]
        pick = [others[int(rng.integers(0, len(others)))] for _ in range(int(rng.integers(1, 3)))]
        if rng.random() < 0.3:
            shape = list(x.shape)
            shape[axis] = int(rng.integers(0, 3))
            pick.append(b.const(random_like(shape, x.dtype, rng), x.dtype))
        return b.try_node("Concat", [src] + pick, axis=axis)
    if op == "Split" and r:
        axis = _axis(rng, r)
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
        axis = _axis(rng, r)
        n = int(x.shape[axis])
        if not n:
            return None
        idx = rng.integers(-n, n, shape_of(rng, int(rng.integers(0, 3))))
        return b.try_node("Gather", [src, b.const(idx, rng.choice([np.int64, np.int32]))], axis=axis)
    if op == "GatherElements" and r:
        axis = _axis(rng, r)
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
        axis = _axis(rng, r)
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
        others = [v for v in b.values if b.values[v].dtype == x.dtype]
        other = others[int(rng.integers(0, len(others)))]
        try:
            np.broadcast_shapes(cond.shape, x.shape, b.values[other].shape)
        except ValueError:
            other = src
        return b.try_node("Where", [b.const(cond, np.bool_), src, other] if rng.random() < 0.5
                          else [b.const(cond, np.bool_), other, src])
    if op == "OneHot" and x.dtype.kind in "iu" and r < 5:
        depth = b.const(int(rng.integers(1, 6)), rng.choice([np.int64, np.float32, np.int32]))
        vals = random_like([2], draw_type(rng), rng)
        return b.try_node("OneHot", [src, depth, b.const(vals, vals.dtype)], axis=int(rng.integers(-r - 1, r + 1)))
    if op == "Cast":
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
        ints = [v for v in b.values if b.values[v].dtype == x.dtype]
        other = ints[int(rng.integers(0, len(ints)))]
        try:
            np.broadcast_shapes(x.shape, b.values[other].shape)
        except ValueError:
            other = src
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


def make_case(seed: int, others: bool = False) -> tuple[onnx.ModelProto, dict, list[str]]:
    """(model, {input name: array}, expected outputs' names) for ``seed``."""
    rng = np.random.default_rng([seed, 7])
    b = Builder(rng, int(rng.choice(OPSETS)))
    OPSET[0] = b.opset
    for _ in range(int(rng.integers(1, 4))):
        b.add_input(random_like(shape_of(rng), draw_type(rng), rng))
    if rng.random() < 0.3:  # an initializer as data
        v = b.const(random_like(shape_of(rng), draw_type(rng), rng), None)
        b.values[v] = native(b.values[v])
    made: list[str] = []
    want = int(rng.integers(2, 9))
    where_other = int(rng.integers(0, want + 1)) if others else -1
    tries = 0
    while len(made) < want and tries < 60:
        tries += 1
        pool = list(b.values)
        src = made[-1] if made and rng.random() < 0.6 else pool[int(rng.integers(0, len(pool)))]
        if len(made) == where_other:
            outs = unsupported(b, src)
            where_other = -1
        else:
            try:
                outs = step(b, src)
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


class Expand(OpRun):
    """A copy (onnx.reference multiplies by ones: a signalling NaN quieted)."""

    def _run(self, data, shape):
        return (np.broadcast_to(data, np.broadcast_shapes(data.shape, tuple(int(d) for d in shape))).copy(),)


class Unsqueeze(OpRun):
    """Negative axes counted in the output's rank, all at once (onnx.reference's Unsqueeze-1/11 inserts them
    one by one, each against the rank so far: (4, 2) with axes [-2, -1] is (4, 1, 2, 1), not (4, 2, 1, 1))."""

    def _run(self, data, axes=None, **kw):
        axes = [int(a) for a in (axes if axes is not None else self.axes)]
        return (np.expand_dims(data, tuple(a % (data.ndim + len(axes)) for a in axes)),)


class Slice(OpRun):
    """ONNX's clamping (onnx.reference's numpy slicing takes a negative step's start of -n-1 as empty)."""

    def _run(self, data, starts, ends, axes=None, steps=None):
        axes = range(len(starts)) if axes is None else [int(a) % data.ndim for a in axes]
        steps = [1] * len(starts) if steps is None else steps
        index = [slice(None)] * data.ndim
        for a, s, e, st in zip(axes, starts, ends, steps):
            n, s, e, st = data.shape[a], int(s), int(e), int(st)
            s, e = s + n if s < 0 else s, e + n if e < 0 else e
            if st > 0:
                s, e = min(max(s, 0), n), min(max(e, 0), n)
            else:
                s, e = min(max(s, 0), n - 1), min(max(e, -1), n - 1)
            index[a] = range(s, e, st)
        out = data
        for a, r in enumerate(index):
            if isinstance(r, range):
                out = np.take(out, np.array(r, dtype=np.int64), axis=a)
        return (out,)


class Resize(_Computed):
    """Nearest mode as a copy: run on the elements' labels (float64, exact), each output the element its
    label names (onnx.reference's weights times values quiet NaNs, lose -0.0, round 64-bit integers)."""

    def _run(self, X, *args, **kw):
        if kw.get("mode") != "nearest" or kw.get("coordinate_transformation_mode") == "tf_crop_and_resize" \
                or X.dtype == object or not X.size:
            return super()._run(X, *args, **kw)
        at = super()._run(np.arange(1, X.size + 1, dtype=np.float64).reshape(X.shape), *args, **kw)[0]
        return (X.reshape(-1)[at.astype(np.int64) - 1],)


class OneHot(OpRun):
    """A copy of the on and off values (onnx.reference computes hot * (on - off) + off)."""

    def _run(self, indices, depth, values, axis=None):
        from onnx.reference.ops.op_one_hot import _one_hot

        return (np.where(_one_hot(indices, depth, axis=axis, dtype=np.bool_), values[1], values[0]),)


class Squeeze(OpRun):
    """An empty axes tensor: every size-1 axis, as onnxruntime and onnxop read it (onnx.reference: none)."""

    def _run(self, data, axes=None):
        return (np.squeeze(data, axis=None if axes is None or not len(axes) else tuple(int(a) for a in axes)),)


OPSET = [21]  # the model's opset, for the nodes run on onnxruntime


class _OnOnnxruntime(OpRun):
    """The others' nodes as onnxruntime runs them (what --others runs them on): onnx.reference's Softmax-11
    at opset < 13 takes the last axis, not the 2-D coercion at ``axis``."""

    def _run(self, *args, **kw):
        import onnxruntime

        node = self.onnx_node
        ins = [f"i{k}" for k in range(len(args))]
        one = helper.make_node(node.op_type, ins, ["o"], **{a.name: helper.get_attribute_value(a)
                                                              for a in node.attribute})
        graph = helper.make_graph([one], "one", [helper.make_tensor_value_info(n, elem(a), a.shape)
                                                 for n, a in zip(ins, args)],
                                  [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET[0])])
        opts = onnxruntime.SessionOptions()
        opts.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        opts.log_severity_level = 4
        s = onnxruntime.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        return (s.run(None, dict(zip(ins, args)))[0],)


Relu = type("Relu", (_OnOnnxruntime,), {})
Softmax = type("Softmax", (_OnOnnxruntime,), {})
MatMul = type("MatMul", (_OnOnnxruntime,), {})
OVERRIDES = [Expand, Unsqueeze, Slice, Resize, OneHot, Squeeze, Relu, Softmax, MatMul]


def expected(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return [native(np.asarray(x)) for x in ReferenceEvaluator(model, new_ops=OVERRIDES).run(None, feeds)]
    except Exception:  # noqa: BLE001
        return None


# ----------------------------------------------------------------------------------------- the limits

LIMITS = {"default": {}, "small": {"band": 256, "binding": 1024}, "tiny": {"band": 64, "binding": 256},
          # and dispatches of 2 workgroups a dimension (an (x, y) grid), GatherND's tuples and uploads 64 bytes a time
          "grid": {"band": 64 << 20, "binding": 128 << 20, "groups": 2, "raw": 64}}
SCALE = [1]  # --scale: dims up to 4 * SCALE (a grid's dispatches need a few thousand elements)


@contextlib.contextmanager
def limits(name: str, backend: str):
    """Every band, window and binding shrunk (gather, pieces, indexed, scatter) for the run."""
    cfg = LIMITS[name]
    if not cfg:
        yield
        return
    from onnxop_cli.gpu import choose, gather, indexed_buffers, indexed_variants, pieces
    from onnxop_cli.gpu.device import get_gpu

    gpu = get_gpu(backend)
    choose.choice(gpu)
    for q in choose.QUESTIONS:
        choose.answer(gpu, q)
    saved = (gather.DEFAULT_BAND, gather.MAPPED_BAND, pieces.DEFAULT_BAND, pieces.BAND, indexed_variants.RAW_BAND,
             indexed_buffers.UPLOAD_STEP, dict(gpu.limits))
    gather.DEFAULT_BAND = gather.MAPPED_BAND = cfg["band"]
    pieces.DEFAULT_BAND = pieces.BAND = cfg["band"]
    gpu.limits["max-storage-buffer-binding-size"] = cfg["binding"]
    if "groups" in cfg:
        gpu.limits["max-compute-workgroups-per-dimension"] = cfg["groups"]
        indexed_variants.RAW_BAND = indexed_buffers.UPLOAD_STEP = cfg["raw"]
    try:
        yield
    finally:
        (gather.DEFAULT_BAND, gather.MAPPED_BAND, pieces.DEFAULT_BAND, pieces.BAND, indexed_variants.RAW_BAND,
         indexed_buffers.UPLOAD_STEP, limits_then) = saved
        gpu.limits.clear()
        gpu.limits.update(limits_then)


# ----------------------------------------------------------------------------------------- the paths

def run_backend(model, feeds, backend):
    from onnxop_cli.backend import OnnxopBackend

    rep = OnnxopBackend.prepare(model, backend=backend)
    return [native(np.asarray(x)) for x in rep.run([feeds[i.name] for i in model.graph.input])]


EDGE = 1  # elements a summary shows at each end of an axis (print mode)


def run_shown(model, feeds, backend, tmp: Path):
    """Print mode (``onnxop run MODEL`` without -o): every value a node reads made where it is read
    (LAZY_BYTES 1: core/value_bytes.py), every output summarised; the shown elements of each output,
    and the reference's outputs cut to the same positions by ``cut``."""
    from onnxop_cli.backend import _feeds
    from onnxop_cli.core import graph, graph_steps
    from onnxop_cli.ops.model import load_graph

    saved = graph_steps.LAZY_BYTES, graph.LAZY_BYTES
    graph_steps.LAZY_BYTES = graph.LAZY_BYTES = 1
    try:
        g = load_graph(model, tmp)
        p = graph.plan(g, _feeds(g, [feeds[k] for k in g.inputs]), backend=backend, shown=True)
        shown, _ = graph.run_to_summaries(p, threshold=1, edge=EDGE, backend=backend)
    finally:
        graph_steps.LAZY_BYTES, graph.LAZY_BYTES = saved
    return [(native(np.asarray(a)), summarised) for _, a, summarised in shown]


def cut(want: np.ndarray, summarised: bool) -> np.ndarray:
    from onnxop_cli.core.shown import shown_positions

    if not summarised:
        return want
    return native(want[np.ix_(*[shown_positions(d, EDGE) for d in want.shape])]) if want.ndim else want


def visible(a: np.ndarray, shape, summarised: bool) -> np.ndarray:
    """The narrowed array's entries numpy prints: along a summarised axis not the extra one at each
    side of '...' (an axis of 2 * EDGE + 1 shows its middle entry twice there, never printed)."""
    if not summarised or not a.ndim:
        return a
    keep = [list(range(EDGE)) + list(range(EDGE + 2, 2 * EDGE + 2)) if n > 2 * EDGE else list(range(n))
            for n in shape]
    return native(a[np.ix_(*keep)])


def run_cli(model, feeds, backend, others: bool, tmp: Path):
    from onnxop_cli.cli.main import run

    path = tmp / "m.onnx"
    onnx.save(model, path)
    argv = ["run", str(path)]
    for n, v in feeds.items():
        f = tmp / f"{n}.pb"
        f.write_bytes(numpy_helper.from_array(v, n).SerializeToString())
        argv += ["--input", f"{n}={f}"]
    out = tmp / "out"
    argv += ["-o", f"{out}/", "--json", "--backend", backend]
    argv += ["--verify"]  # (every node again on onnxruntime, or onnx.reference)
    if others:
        argv += ["--others", "onnxruntime"]
    so, se = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(so), contextlib.redirect_stderr(se):
        code = run(argv)
    if code != 0:
        raise CliError(code, se.getvalue().strip(), so.getvalue())
    doc = json.loads(so.getvalue())
    got = []
    for o in model.graph.output:
        npy, pb = out / f"{o.name}.npy", out / f"{o.name}.pb"
        if npy.exists():
            got.append(native(np.load(npy)))
        else:
            t = onnx.TensorProto()
            t.ParseFromString(pb.read_bytes())
            got.append(native(numpy_helper.to_array(t)))
    return got, doc


class CliError(Exception):
    def __init__(self, code, err, out):
        super().__init__(f"exit {code}: {err}")
        self.code, self.err, self.out = code, err, out


def left_out(model) -> dict:
    """The others' nodes run --others leaves out, by operator: a region of theirs none of whose values a
    later region or the graph reads (a Relu whose output nothing reads) does not run, as onnxruntime takes
    no model without outputs (core/others.py); its Constants go with it."""
    from onnxop_cli.core import partition

    left: dict = {}
    for region in partition.split(model, "onnxruntime", keep_onnxop=True).regions:
        if region.runtime in partition.OTHERS and not region.outputs:
            for n in region.nodes:
                left[n.op_type] = left.get(n.op_type, 0) + 1
    return left


def check_ran(model, doc) -> str | None:
    """--json's ``ran``: every node counted once, onnxop's the ones onnxop runs, the others' the rest."""
    ran = doc.get("ran")
    if ran is None:
        return "no 'ran' in --json" if any(n.op_type in UNSUPPORTED for n in model.graph.node) else None
    counts: dict = {}
    for where, ops in ran.items():
        for op, n in ops.items():
            counts.setdefault(op, {})[where] = n
    want: dict = {}
    for n in model.graph.node:
        want[n.op_type] = want.get(n.op_type, 0) + 1
    left = left_out(model)
    want = {op: n - left.get(op, 0) for op, n in want.items() if n - left.get(op, 0)}
    for op, n in want.items():
        got = sum(counts.get(op, {}).values())
        if got != n:
            return f"ran counts {op} {got} times, the model has {n}: {ran}"
        if op in UNSUPPORTED and set(counts[op]) - {"onnxruntime"}:
            return f"ran says {op} ran on {set(counts[op])}: {ran}"
    ours = sum(n for ops in (v for k, v in ran.items() if k == "onnxop") for n in ops.values())
    verified = sum(v["nodes"] for v in doc.get("verified") or [])
    if doc.get("verified") is not None and verified != ours:
        return f"verified {verified} node(s), onnxop ran {ours}: {doc['verified']} {ran}"
    if sum(r["nodes"] for r in doc.get("regions", [])) < sum(want.values()) - want.get("Constant", 0):
        return f"regions hold {doc['regions']}, the model has {len(model.graph.node)} nodes"
    return None


def ort_plain(model, feeds) -> list | None:
    """onnxruntime's CPU outputs with its graph optimizations off (what --others promises to equal)."""
    try:
        import onnxruntime

        opts = onnxruntime.SessionOptions()
        opts.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        opts.log_severity_level = 4
        session = onnxruntime.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        return [native(np.asarray(x)) for x in session.run(None, feeds)]
    except Exception:  # noqa: BLE001 (no kernel for the type)
        return None


REFUSED: dict = {}
SECOND = [0]  # cases onnxruntime decided
COMPARED = [0]  # cases run and compared


def one(seed: int, path: str, backend: str, lim: str, others: bool, verbose: bool) -> str | None:
    model, feeds, _ = make_case(seed, others)
    want = expected(model, feeds)
    if want is None:
        return None
    if verbose:
        print(onnx.printer.to_text(model.graph))
    try:
        with limits(lim, backend):
            if path == "backend":
                got, doc = run_backend(model, feeds, backend), None
            elif path == "shown":
                with tempfile.TemporaryDirectory() as t:
                    made = run_shown(model, feeds, backend, Path(t))
                if len(made) != len(want):
                    return f"{len(made)} outputs shown, expected {len(want)}"
                got, doc = [visible(a, w.shape, summarised) for w, (a, summarised) in zip(want, made)], None
                want = [visible(cut(w, summarised), w.shape, summarised) for w, (_, summarised) in zip(want, made)]
            else:
                with tempfile.TemporaryDirectory() as t:
                    got, doc = run_cli(model, feeds, backend, others, Path(t))
    except CliError as e:
        if e.code == 2 and "\n" not in e.err and "Traceback" not in e.err:
            REFUSED[e.err[:90]] = REFUSED.get(e.err[:90], 0) + 1
            return f"refused: {e.err}" if verbose else None
        return f"exit {e.code}: {e.err[-1500:]}"
    except Exception as e:  # noqa: BLE001
        from onnxop_cli.errors import GpuError, OnnxopError

        msg = str(e).splitlines()[0] if str(e) else ""
        if isinstance(e, OnnxopError) and not isinstance(e, GpuError) and "\n" not in str(e):
            REFUSED[msg.split(": ", 1)[-1][:90]] = REFUSED.get(msg.split(": ", 1)[-1][:90], 0) + 1
            return f"refused: {msg}" if verbose else None
        return f"{type(e).__name__}: {msg}\n{traceback.format_exc()[-1500:]}"
    COMPARED[0] += 1
    diff = same_bits(want, got)
    if diff:
        second = ort_plain(model, feeds)
        if len(want) != len(got):
            return f"{len(got)} outputs, expected {len(want)}"
        for k, (w, g) in enumerate(zip(want, got)):  # each output: onnx.reference's, or onnxruntime's
            d = same_bits([w], [g])
            if d and (second is None or same_bits([second[k]], [g])):
                return f"output {k} differs from onnx.reference: {d}" + ("" if second is None else " (and onnxruntime)")
        SECOND[0] += 1
    if doc is not None and others:
        return check_ran(model, doc)
    return None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="0-19", help="a seed, or FIRST-LAST")
    p.add_argument("--backend", default=os.environ.get("ONNXOP_BACKEND", "vulkan"))
    p.add_argument("--path", default="backend", choices=["backend", "cli", "shown"])
    p.add_argument("--limits", default="default", choices=list(LIMITS))
    p.add_argument("--others", action="store_true", help="a node onnxop does not run in each chain (cli path)")
    p.add_argument("--scale", type=int, default=1, help="dims up to 4 * SCALE (default 1)")
    p.add_argument("-v", "--verbose", action="store_true")
    a = p.parse_args()
    SCALE[0] = a.scale
    first, _, last = a.seeds.partition("-")
    seeds = range(int(first), int(last or first) + 1)
    bad = 0
    for seed in seeds:
        why = one(seed, a.path, a.backend, a.limits, a.others, a.verbose)
        if why:
            if why.startswith("refused"):
                print(f"seed {seed}: {why}")
                continue
            bad += 1
            print(f"seed {seed}: {why}\n  replay: python scripts/fuzz_graphs.py --seeds {seed} --path {a.path} "
                  f"--backend {a.backend} --limits {a.limits}{' --others' if a.others else ''} -v", flush=True)
    for why, n in sorted(REFUSED.items(), key=lambda kv: -kv[1])[:15]:
        print(f"  refused x{n}: {why}")
    print(f"{len(seeds)} seeds, {COMPARED[0]} compared, {bad} failed, {sum(REFUSED.values())} refused, "
          f"{SECOND[0]} decided by onnxruntime")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
