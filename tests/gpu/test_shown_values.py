"""The shown elements of every kind of output are the reference's.

Print mode and --json make only what a summary shows (core/shown_values.py):
the indexed gathers through a narrowed table, the other runners (OneHot,
the scatters, NonZero) streamed through and picked, a graph's large tensor
operators' outputs and output-only gathers (Tile) made only when read, and views of
them picked from their stream. Each is checked here against onnx.reference
on small inputs, with the thresholds at zero so that every path is taken;
tests/process/test_print_memory.py runs the huge cases as real processes.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from conftest import random_array
from tensor_refs import reference
from onnxop_cli.core import graph, graph_steps
from onnxop_cli.core.shown_values import Picker
from onnxop_cli.core.summary import EDGE_ITEMS, summarised_tensor_op
from onnxop_cli.core.tensor import Tensor
from onnxop_cli.ops import op_version
from onnxop_cli.ops.base import Node
from onnxop_cli.ops.model import load_graph
from onnxop_cli.render.values import format_values

I64 = np.int64

# (op, opset, attributes, inputs: a function of rng -> arrays); every output large enough to be summarised
RUNNERS = [
    ("Gather", 13, {"axis": 1}, lambda r: [random_array(r, (9, 13, 11), "float32"),
                                           r.integers(-13, 13, (4, 10)).astype(I64)]),
    ("Gather", 13, {"axis": 0}, lambda r: [random_array(r, (1, 40), "int8"), np.zeros(30, I64)]),  # repeated
    ("GatherElements", 13, {"axis": 1}, lambda r: [random_array(r, (9, 13), "float64"),
                                                   r.integers(0, 13, (9, 130)).astype(I64)]),
    ("GatherND", 13, {"batch_dims": 1}, lambda r: [random_array(r, (9, 13, 11), "float32"),
                                                   r.integers(0, 11, (9, 130, 2)).astype(I64) % [13, 11]]),
    ("Compress", 11, {"axis": 1}, lambda r: [random_array(r, (9, 30, 11), "int8"),
                                             r.integers(0, 2, 30).astype(bool)]),
    ("OneHot", 11, {"axis": 1}, lambda r: [r.integers(-20, 20, (7, 9)).astype(I64), np.array(40, I64),
                                           np.array([2.5, -1], np.float32)]),
    ("ScatterElements", 16, {"axis": 1, "reduction": "add"}, lambda r: [random_array(r, (9, 300), "float32"),
                                                    r.integers(0, 30, (9, 4)).astype(I64),
                                                    random_array(r, (9, 4), "float32")]),
    ("NonZero", 13, {}, lambda r: [r.integers(0, 3, (40, 60)).astype(np.int32)]),
]


@pytest.mark.parametrize("case", RUNNERS, ids=[f"{c[0]}{i}" for i, c in enumerate(RUNNERS)])
@pytest.mark.one_backend  # the cut and the picking are tested; the kernels fan out in their own tests
def test_a_runner_outputs_shown_elements_are_the_references(gpu, backend, rng, case):
    op_type, opset, attrs, make = case
    arrays = make(rng)
    op = op_version(op_type, opset)
    names = op.expanded_inputs(len(arrays))
    tensors = [Tensor.from_numpy(a, n) for a, n in zip(arrays, names)]
    lazy = summarised_tensor_op(Node(op, attrs, opset=opset), tensors, edge=EDGE_ITEMS, threshold=0, backend=backend)
    assert lazy is not None and all(t.data is None for t in lazy.outputs)
    want = reference(op_type, opset, arrays, attrs)[0]
    (values, summarised), = lazy.shown
    assert summarised and want.size > 1000
    assert format_values(values, summarised=True) == format_values(want)


@pytest.mark.one_backend
def test_a_one_hot_of_many_indices_is_printed_without_its_pieces(gpu, backend, rng, monkeypatch):
    """OneHot's plan carried a piece per index for summaries, each looked at in Python to cut it to the
    shown entries: 2 million indices printed took 0.6 GB and 2 minutes (written with -o: 0.15 GB, 3 s).
    Past SUMMARY_PIECES indices the kernel streams through and only the shown elements are kept."""
    from onnxop_cli.ops import one_hot

    indices = rng.integers(-6, 6, (3, one_hot.SUMMARY_PIECES)).astype(I64)
    arrays = [indices, np.array(5, I64), np.array([0, 7], np.int32)]
    monkeypatch.setattr(one_hot, "_hot_pieces", lambda *a: pytest.fail("a piece per index was made"))
    op = op_version("OneHot", 11)
    tensors = [Tensor.from_numpy(a, n) for a, n in zip(arrays, op.expanded_inputs(3))]
    lazy = summarised_tensor_op(Node(op, {"axis": 1}, opset=11), tensors, edge=EDGE_ITEMS, threshold=0,
                                backend=backend)
    (values, summarised), = lazy.shown
    assert summarised and format_values(values, summarised=True) == format_values(
        reference("OneHot", 11, arrays, {"axis": 1})[0])


def _model(nodes, inputs, outputs, opset=18):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, None) for n, t in inputs],
                          [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in outputs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    return m


F, L, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
GRAPHS = [
    # the model: Shape -> Concat -> ConstantOfShape (a fill piece, made only when read)
    ("fill", [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Concat", ["s", "s"], ["c"], axis=0),
              helper.make_node("ConstantOfShape", ["c"], ["y"],
                               value=helper.make_tensor("v", F, [1], [1.5]))],
     [("x", F)], ["y"], lambda r: [random_array(r, (3, 40), "float32")]),
    # a view of an unmade tensor operator's output: picked from its stream
    ("view of fill", [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Concat", ["s", "s"], ["c"], axis=0),
                      helper.make_node("ConstantOfShape", ["c"], ["f"]),
                      helper.make_node("Transpose", ["f"], ["y"], perm=[3, 1, 0, 2])],
     [("x", F)], ["y"], lambda r: [random_array(r, (3, 40), "float32")]),
    ("gather", [helper.make_node("Gather", ["x", "i"], ["y"], axis=1)], [("x", F), ("i", L)], ["y"],
     lambda r: [random_array(r, (5, 30), "float32"), r.integers(0, 30, (9, 40)).astype(I64)]),
    ("where", [helper.make_node("Where", ["c", "x", "z"], ["y"])], [("c", B), ("x", F), ("z", F)], ["y"],
     lambda r: [r.integers(0, 2, (40, 1)).astype(bool), random_array(r, (1, 50), "float32"),
                random_array(r, (50,), "float32")]),
    ("pad", [helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")], [("x", F), ("p", L)], ["y"],
     lambda r: [random_array(r, (2, 3), "float32"), np.array([0, 2, 0, 4000], I64)]),
    ("tile", [helper.make_node("Tile", ["x", "r"], ["y"])], [("x", F), ("r", L)], ["y"],
     lambda r: [random_array(r, (4, 5), "float32"), np.array([30, 70], I64)]),
    ("onehot", [helper.make_node("OneHot", ["i", "d", "v"], ["y"])], [("i", L), ("d", L), ("v", F)], ["y"],
     lambda r: [r.integers(-9, 9, (30,)).astype(I64), np.array(60, I64), np.array([0, 3], np.float32)]),
]


@pytest.mark.parametrize("case", GRAPHS, ids=[c[0] for c in GRAPHS])
@pytest.mark.one_backend
def test_a_graph_outputs_shown_elements_are_the_references(gpu, backend, rng, monkeypatch, tmp_path, case):
    _, nodes, inputs, outputs, make = case
    monkeypatch.setattr(graph_steps, "LAZY_BYTES", 0)  # every tensor operator's output left unmade until read
    m = _model(nodes, inputs, outputs)
    arrays = make(rng)
    feeds = {n: Tensor.from_numpy(a, n) for (n, _), a in zip(inputs, arrays)}
    p = graph.plan(load_graph(m, tmp_path), feeds, backend=backend)
    summaries, _ = graph.run_to_summaries(p, threshold=0, edge=EDGE_ITEMS, backend=backend)
    want = ReferenceEvaluator(m).run(None, {n: a for (n, _), a in zip(inputs, arrays)})
    for (v, values, summarised), w in zip(summaries, want):
        assert summarised and tuple(v.shape) == np.asarray(w).shape
        assert format_values(values, summarised=True) == format_values(np.asarray(w))
    p = graph.plan(load_graph(m, tmp_path), feeds, backend=backend)  # and streamed whole (-o), the same bytes
    results, _ = graph.run_to_memory(p, backend=backend)
    for t, w in zip(results, want):
        assert t.to_numpy().tobytes() == np.asarray(w).tobytes()


@pytest.mark.parametrize("bits", [2, 4, 8, 16, 32, 64])
def test_the_picker_keeps_the_wanted_elements_across_any_chunks(bits, rng):
    n = 1000
    per = max(1, bits // 8)
    raw = rng.integers(0, 256, n * bits // 8).astype(np.uint8)
    wanted = np.unique(rng.integers(0, n, 77))
    picker = Picker(wanted, bits)
    cuts = sorted(set(rng.integers(1, len(raw), 9).tolist()))  # chunks that split elements
    for lo, hi in zip([0, *cuts], [*cuts, len(raw)]):
        picker(memoryview(raw[lo:hi].tobytes()))
    if bits >= 8:
        assert picker.raw().tobytes() == raw.reshape(-1, per)[wanted].tobytes()
    else:
        values = np.unpackbits(raw[:, None], axis=1, bitorder="little").reshape(-1, bits)
        elements = (values * (1 << np.arange(bits))).sum(axis=1)
        got = np.unpackbits(picker.raw()[:, None], axis=1, bitorder="little").reshape(-1, bits)
        assert ((got * (1 << np.arange(bits))).sum(axis=1)[: len(wanted)] == elements[wanted]).all()
