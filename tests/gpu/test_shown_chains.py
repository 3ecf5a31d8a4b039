"""Print mode's values made where read (core/value_bytes.py), on every kind
of node: small chains planned with the threshold at one byte, so every value
a node reads is made only where its kernel reads it and every output is
summarised; the shown elements must be onnx.reference's, byte for byte
(NaN payloads and -0.0 included), on every backend. The real processes with
GiB outputs are tests/process/test_print_memory_chains.py."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper
from onnx.reference import ReferenceEvaluator
from test_graph_tensor_ops import model

from onnxop_cli.core.shown import shown_positions

EDGE = 3


def _i64(*v):
    return np.array(v, np.int64)


def _f(shape, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(dtype)
    if a.size > 2 and a.dtype.kind == "f":
        a.reshape(-1)[:2] = [-0.0, np.nan]
    return a


def n(op, ins, outs, **kw):
    return helper.make_node(op, ins, outs, **kw)


CHAINS = {
    "expand_concat": ([n("Expand", ["x", "s"], ["a"]), n("Concat", ["a", "x2"], ["y"], axis=1)],
                      {"x": _f((1, 1, 3)), "s": _i64(9, 8, 3), "x2": _f((9, 5, 3), 1)}),
    "tile_pad_reflect": ([n("Tile", ["x", "r"], ["t"]), n("Pad", ["t", "p"], ["y"], mode="reflect")],
                         {"x": _f((2, 3)), "r": _i64(5, 4), "p": _i64(2, 5, 3, 4)}),
    "pad_edge_transpose_slice_concat": (
        [n("Pad", ["x", "p"], ["q"], mode="edge"), n("Transpose", ["q"], ["t"]),
         n("Slice", ["t", "st", "en", "ax", "sp"], ["c"]), n("Concat", ["c", "c"], ["y"], axis=0)],
        {"x": _f((4, 3)), "p": _i64(1, 6, 5, 2), "st": _i64(-1), "en": _i64(-100), "ax": _i64(0), "sp": _i64(-1)}),
    "where_trilu": ([n("Expand", ["m", "s"], ["mm"]), n("Tile", ["x", "r"], ["xx"]),
                     n("Where", ["mm", "xx", "z"], ["w"]), n("Trilu", ["w", "k"], ["y"], upper=0)],
                    {"m": np.array([[True, False, True, True, False, False, True, False, True, True]]),
                     "s": _i64(12, 10), "x": _f((3, 5)), "r": _i64(4, 2), "z": _f((12, 1), 2), "k": _i64(1)}),
    "fill_transpose_pad": ([n("Shape", ["x"], ["s"]), n("Concat", ["s", "s"], ["c"], axis=0),
                            n("ConstantOfShape", ["c"], ["f"], value=helper.make_tensor("v", T.FLOAT, [1], [2.5])),
                            n("Transpose", ["f"], ["t"], perm=[1, 0, 3, 2]), n("Pad", ["t", "p"], ["y"])],
                           {"x": np.zeros((2, 9), np.float32), "p": _i64(1, 0, 0, 0, 0, 0, 0, 1)}),
    "one_hot_pad": ([n("Concat", ["i", "i"], ["c"], axis=0), n("OneHot", ["c", "d", "v"], ["o"]),
                     n("Pad", ["o", "p"], ["y"])],
                    {"i": _i64(0, 3, -1, 11, 5, 2, 7, 8, -12), "d": np.array(12, np.int64),
                     "v": np.array([2.5, -1], np.float32), "p": _i64(0, 1, 0, 0)}),  # values exact in reference's sum
    "split_gather_elements": (
        [n("Expand", ["x", "s"], ["e"]), n("Split", ["e"], ["a", "b"], axis=0, num_outputs=2),
         n("Gather", ["b", "i"], ["g"], axis=1), n("GatherElements", ["g", "j"], ["y"], axis=0)],
        {"x": _f((1, 11)), "s": _i64(18, 11), "i": _i64(0, -1, 3, 10, 4, 5, 6, 2, -11),
         "j": np.random.default_rng(4).integers(-9, 9, (7, 9))}),
    "gather_nd_of_concat": ([n("Concat", ["x", "x2"], ["c"], axis=0), n("GatherND", ["c", "i"], ["y"])],
                            {"x": _f((5, 9, 8)), "x2": _f((4, 9, 8), 1),
                             "i": np.random.default_rng(5).integers(-9, 9, (10, 2))}),
    "scatter_concat": ([n("Expand", ["x", "s"], ["e"]), n("ScatterND", ["e", "k", "u"], ["d"]),
                        n("ScatterElements", ["d", "k2", "u2"], ["d2"], axis=1),
                        n("Concat", ["d2", "d2"], ["y"], axis=0)],
                       {"x": _f((1, 9)), "s": _i64(10, 9), "k": _i64(0, 9).reshape(2, 1), "u": _f((2, 9), 6),
                        "k2": _i64(1, 8, 0).reshape(1, 3), "u2": _f((1, 3), 7)}),
    "reshape_step_slice_concat": (
        [n("Expand", ["x", "s"], ["e"]), n("Transpose", ["e"], ["t"]), n("Reshape", ["t", "f"], ["r"]),
         n("Slice", ["r", "st", "en"], ["c"]), n("Concat", ["c", "c"], ["y"], axis=0)],
        {"x": _f((7, 1)), "s": _i64(7, 3), "f": _i64(-1), "st": _i64(1), "en": _i64(-1)}),
    "two_steps_concat": ([n("Expand", ["x", "s"], ["e"]), n("Transpose", ["e"], ["t"]), n("Reshape", ["t", "f"], ["r"]),
                          n("Slice", ["r", "st", "en"], ["c"]), n("Reshape", ["c", "f34"], ["c2"]),
                          n("Transpose", ["c2"], ["c3"]), n("Reshape", ["c3", "f"], ["c4"]),
                          n("Concat", ["c4", "c4"], ["y"], axis=0)],
                         {"x": _f((9, 1)), "s": _i64(9, 5), "f": _i64(-1), "st": _i64(2), "en": _i64(14),
                          "f34": _i64(3, 4)}),
    "float16_expand_center_crop": ([n("Expand", ["x", "s"], ["e"]), n("CenterCropPad", ["e", "c"], ["y"])],
                                   {"x": _f((1, 9), dtype=np.float16), "s": _i64(11, 9), "c": _i64(8, 14)}),
    "int8_compress_concat": ([n("Tile", ["x", "r"], ["t"]), n("Compress", ["t", "m"], ["c"], axis=1),
                              n("Concat", ["c", "c"], ["y"], axis=1)],
                             {"x": np.arange(-12, 12, dtype=np.int8).reshape(2, 12), "r": _i64(5, 1),
                              "m": np.array([1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1], bool)}),
    "reverse_sequence_of_pad": ([n("Pad", ["x", "p"], ["q"]), n("ReverseSequence", ["q", "l"], ["y"],
                                                                 batch_axis=1, time_axis=0)],
                                {"x": _f((8, 9)), "p": _i64(1, 0, 0, 0), "l": _i64(9, 1, 2, 3, 4, 5, 6, 7, 8)}),
    "int4_pad_transpose_pad": ([n("Pad", ["x", "p", "w"], ["q"]), n("Transpose", ["q"], ["t"]),
                                n("Pad", ["t", "p2"], ["y"], mode="edge")],
                               {"x": (np.arange(45) % 16 - 8).astype(ml_dtypes.int4).reshape(9, 5),
                                "p": _i64(0, 3, 1, 1), "w": np.array(5, ml_dtypes.int4), "p2": _i64(1, 0, 2, 3)}),
    "bool_tile_where": ([n("Tile", ["m", "r"], ["mm"]), n("Concat", ["mm", "mm"], ["c"], axis=0),
                         n("Where", ["c", "x", "z"], ["y"])],
                        {"m": np.array([[True, False, False], [False, True, True]]), "r": _i64(3, 4),
                         "x": _f((12, 12), 8), "z": _f((1, 12), 9)}),
    "concat_reshape": ([n("Concat", ["x", "x2"], ["c"], axis=0), n("Reshape", ["c", "f"], ["y"])],
                       {"x": _f((5, 9, 8)), "x2": _f((4, 9, 8), 1), "f": _i64(6, -1)}),
    "cast_concat": ([n("Expand", ["x", "s"], ["e"]), n("Cast", ["e"], ["c"], to=T.INT32),
                     n("Concat", ["c", "c"], ["y"], axis=0)],
                    {"x": np.arange(9, dtype=np.float32).reshape(1, 9) * 3.5, "s": _i64(8, 9)}),
}


def _model(nodes, feeds):
    types = {"float32": T.FLOAT, "float16": T.FLOAT16, "int64": T.INT64, "int8": T.INT8, "bool": T.BOOL,
             "int4": T.INT4}
    return model(nodes, [(k, types[str(a.dtype)], a.ndim) for k, a in feeds.items()], [("y", T.UNDEFINED, 0)])


@pytest.mark.parametrize("name", list(CHAINS))
def test_every_value_made_where_read_shows_the_reference_s_elements(backend, tmp_path, monkeypatch, name):
    from onnxop_cli.backend import _feeds
    from onnxop_cli.core import graph, graph_steps
    from onnxop_cli.ops.model import load_graph

    nodes, feeds = CHAINS[name]
    m = _model(nodes, feeds)
    m.graph.output[0].type.tensor_type.ClearField("shape")
    want = ReferenceEvaluator(m).run(None, feeds)[0]
    monkeypatch.setattr(graph_steps, "LAZY_BYTES", 1)  # every value a node reads: made where read
    monkeypatch.setattr(graph, "LAZY_BYTES", 1)
    g = load_graph(m, tmp_path)
    p = graph.plan(g, _feeds(g, [feeds[k] for k in g.inputs]), backend=backend, shown=True)
    assert any(s.lazy is not None and s.buffer is None for s in p.runtime.made) or name == "reshape_step_slice_concat"
    [(v, got, summarised)], _ = graph.run_to_summaries(p, threshold=1, edge=EDGE, backend=backend)
    assert summarised and v.shape == want.shape
    shown = want[np.ix_(*[shown_positions(d, EDGE) for d in want.shape])]
    assert got.dtype == shown.dtype and got.shape == shown.shape
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(shown).tobytes(), (got, shown)
