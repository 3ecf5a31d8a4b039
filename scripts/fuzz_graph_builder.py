"""What scripts/fuzz_graphs.py draws its graphs over (types, opsets, shapes) and the Builder that grows
a graph one node at a time on onnx.reference's values (fuzz_graph_oracle's)."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
from fuzz_graph_oracle import OVERRIDES, elem, native
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

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
SCALE = [1]  # --scale: dims up to 4 * SCALE (a grid's dispatches need a few thousand elements)


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


def draw_axis(rng, r: int) -> int:
    """An axis of a rank-``r`` value, negative or not (0 for a scalar)."""
    return int(rng.integers(-r, r)) if r else 0


def gather(b, rng, src: str, x, r: int, max_rank: int, types) -> str | None:
    """A Gather of ``src`` (value ``x``, rank ``r``) along a drawn axis by drawn indices of rank below
    ``max_rank``, their type drawn from ``types``; None on an empty axis."""
    axis = draw_axis(rng, r)
    n = int(x.shape[axis])
    if not n:
        return None
    idx = rng.integers(-n, n, shape_of(rng, int(rng.integers(0, max_rank))))
    return b.try_node("Gather", [src, b.const(idx, rng.choice(types))], axis=axis)


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
        self.wide = False  # --draw wide (fuzz_graph_nodes.make_case)

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

    def partner(self, src: str, rng, *shapes: tuple[int, ...]) -> str:
        """A value of ``src``'s type drawn at random that broadcasts with it (and ``shapes``), else ``src``."""
        same = [v for v in self.values if self.values[v].dtype == self.values[src].dtype]
        other = same[int(rng.integers(0, len(same)))]
        try:
            np.broadcast_shapes(*shapes, self.values[src].shape, self.values[other].shape)
        except ValueError:
            return src
        return other

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
        if any(g.dtype == object and not all(isinstance(e, str) for e in g.reshape(-1)) for g in got) or any(g.size > 20000 * SCALE[0] ** 2 for g in got):
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
