"""Cast's plan is one region whose value converts (core/region.py
``Convert``), kept beside the elementwise kernel's runner that makes it. No
path that moves bytes may copy such a region as if it were a load: the
guard (core/pieces.py ``moved``) refuses it at the pieces kernel, the host's
strings and the summaries' narrowing, and the plan offers it to none of them
(``OutputPlan.moves``, ``flat``, ``view``, the graph's views). Cast next to
the view operators in a graph (Cast -> Transpose, Transpose -> Cast, Cast ->
Reshape), whole and in print mode, and a Cast's own summary are
onnx.reference's, bit for bit, for each class of type pair: integer to
integer, integer to float, float to float8, to bool."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper
from onnx.reference import ReferenceEvaluator
from test_graph_tensor_ops import model

import onnxop_cli.backend as onnxop_backend
from onnxop_cli.core import apply_tensors as fam
from onnxop_cli.core.apply_tensors import _host, check
from onnxop_cli.core.pieces import moved
from onnxop_cli.core.region import Convert
from onnxop_cli.core.shown import narrow, shown_positions
from onnxop_cli.core.summary import EDGE_ITEMS, summarised_tensor_op
from onnxop_cli.core.tensor import Tensor
from onnxop_cli.gpu.pieces import Source, run_pieces
from onnxop_cli.ops import op_version
from onnxop_cli.ops.base import Node
from onnxop_cli.render.values import format_values

EDGE = 3


def _ints(shape, dtype, seed):
    return np.random.default_rng(seed).integers(-300, 300, shape).astype(dtype)


def _floats(shape, seed):
    a = (np.random.default_rng(seed).standard_normal(shape) * 300).astype(np.float32)
    a.reshape(-1)[:3] = [-0.0, 1e6, -1e6]  # beyond float8e4m3fn: saturated
    return a


# (pair class, input, target): int -> int wraps, int -> float rounds, float -> float8 saturates, to bool nonzero
PAIRS = {
    "int32_to_int8": (lambda shape: _ints(shape, np.int32, 1), T.INT8),
    "int64_to_float16": (lambda shape: _ints(shape, np.int64, 2) * 1001, T.FLOAT16),
    "float32_to_float8e4m3fn": (lambda shape: _floats(shape, 3), T.FLOAT8E4M3FN),
    "float32_to_bool": (lambda shape: _floats(shape, 4).round(), T.BOOL),
}
ONNX_TYPES = {np.dtype(np.int32): T.INT32, np.dtype(np.int64): T.INT64, np.dtype(np.float32): T.FLOAT}


def n(op, ins, outs, **kw):
    return helper.make_node(op, ins, outs, **kw)


CHAINS = {
    "cast_transpose": lambda to: [n("Cast", ["x"], ["c"], to=to), n("Transpose", ["c"], ["y"], perm=[2, 0, 1])],
    "transpose_cast": lambda to: [n("Transpose", ["x"], ["t"], perm=[1, 2, 0]), n("Cast", ["t"], ["y"], to=to)],
    "cast_reshape": lambda to: [n("Cast", ["x"], ["c"], to=to), n("Reshape", ["c", "s"], ["y"])],
    "slice_cast_reshape": lambda to: [n("Slice", ["x", "st", "en", "ax"], ["v"]), n("Cast", ["v"], ["c"], to=to),
                                      n("Reshape", ["c", "s"], ["y"])],
}
SHAPE = (6, 7, 5)
EXTRA = {"s": np.array([5, -1], np.int64), "st": np.array([1], np.int64), "en": np.array([-1], np.int64),
         "ax": np.array([1], np.int64)}


def _graph(chain: str, pair: str):
    make, to = PAIRS[pair]
    x = make(SHAPE)
    nodes = CHAINS[chain](to)
    feeds = {"x": x, **{k: v for k, v in EXTRA.items() if any(k in node.input for node in nodes)}}
    types = {k: ONNX_TYPES.get(v.dtype, T.INT64) for k, v in feeds.items()}
    rank = 2 if "s" in feeds else 3
    m = model(nodes, [(k, types[k], v.ndim) for k, v in feeds.items()], [("y", to, rank)])
    return m, feeds, ReferenceEvaluator(m).run(None, feeds)[0]


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes(), (got, want)


CASES = [pytest.param(c, p, id=f"{c}-{p}") for c in CHAINS for p in PAIRS]


@pytest.mark.parametrize("chain,pair", CASES)
def test_a_cast_beside_views_in_a_graph_is_the_references(backend, chain, pair):
    m, feeds, want = _graph(chain, pair)
    (got,) = onnxop_backend.prepare(m, backend=backend).run([feeds[i.name] for i in m.graph.input])
    _same_bits(got, want)


@pytest.mark.parametrize("chain,pair", CASES)
def test_a_cast_beside_views_in_print_mode_shows_the_references(backend, tmp_path, monkeypatch, chain, pair):
    from onnxop_cli.backend import _feeds
    from onnxop_cli.core import graph, graph_steps
    from onnxop_cli.ops.model import load_graph

    m, feeds, want = _graph(chain, pair)
    monkeypatch.setattr(graph_steps, "LAZY_BYTES", 1)  # every value a node reads: made where read
    monkeypatch.setattr(graph, "LAZY_BYTES", 1)
    g = load_graph(m, tmp_path)
    p = graph.plan(g, _feeds(g, [feeds[k] for k in g.inputs]), backend=backend, shown=True)
    [(v, got, summarised)], _ = graph.run_to_summaries(p, threshold=1, edge=EDGE, backend=backend)
    assert summarised and v.shape == want.shape
    _same_bits(got, want[np.ix_(*[shown_positions(d, EDGE) for d in want.shape])])


def _cast_node(pair: str, shape, layout: str = "C"):
    make, to = PAIRS[pair]
    x = make(shape)
    if layout == "F":
        x = np.asfortranarray(x)
    op = op_version("Cast", 21)
    return Node(op, {"to": to}, opset=21), [Tensor.from_numpy(x, "input")], x, to


@pytest.mark.parametrize("layout", ["C", "F"])
@pytest.mark.parametrize("pair", list(PAIRS))
def test_a_cast_summary_is_the_whole_results_and_the_references(backend, pair, layout):
    node, tensors, x, to = _cast_node(pair, (40, 3, 37), layout)
    lazy = summarised_tensor_op(node, tensors, edge=EDGE_ITEMS, threshold=0, backend=backend)
    whole = fam.apply_node(node, tensors, backend=backend)
    assert lazy is not None
    ((values, summarised),) = lazy.shown
    want = ReferenceEvaluator(model([n("Cast", ["x"], ["y"], to=to)], [("x", ONNX_TYPES[x.dtype], 3)],
                                    [("y", to, 3)])).run(None, {"x": np.ascontiguousarray(x)})[0]
    _same_bits(whole.outputs[0].to_numpy(), want)
    assert format_values(values, summarised=summarised) == format_values(want)


@pytest.mark.parametrize("pair", list(PAIRS))
def test_a_cast_region_converts_and_is_never_a_copy(gpu, pair):
    node, tensors, x, _ = _cast_node(pair, (4, 3))
    (p,) = check(node, tensors)
    (region,) = p.pieces
    value = region.value
    assert isinstance(value, Convert) and value.load.input == 0 and value.to == p.dtype.onnx_name
    assert region.size == p.size and region.loads == (value.load,)
    assert p.runner is not None and p.kernel == "elementwise"
    assert region.copied is None and p.moves is None and p.flat is None and p.view is None
    with pytest.raises(RuntimeError, match="converts to"):
        moved(p.pieces)
    with pytest.raises(RuntimeError, match="converts to"):
        narrow(p.pieces, p.shape, EDGE)
    with pytest.raises(RuntimeError, match="converts to"):
        _host(p, tensors)
    with pytest.raises(RuntimeError, match="converts to"):
        run_pieces(gpu, [Source(tensors[0].data, 0)], lambda chunk: None, pieces=p.pieces, count=p.size,
                   bits=p.dtype.bits)

