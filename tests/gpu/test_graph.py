"""Multi-node graphs (graph.py): exact against onnx's reference evaluator and
onnxruntime on random data, view chains composed, steps on the device and
released after their last reader. Hostile models: test_graph_hostile_models.py;
inputs and outputs by name: test_graph_names.py; --check, --dump and
conformance: test_graph_check_and_dump.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper
from onnx.reference import ReferenceEvaluator

from conftest import random_array
from onnxop_cli.core import graph
from onnxop_cli.core.graph_values import element_index
from onnxop_cli.core.tensor import Tensor
from onnxop_cli.core.region import Access
from onnxop_cli.ops.model import load_graph
from graph_models import chain, i64, make, same_bits


def run(model, feeds, backend=None):
    g = load_graph(model, Path("."))
    p = graph.plan(g, {k: Tensor.from_numpy(v, k) for k, v in feeds.items()})
    results, traffic = graph.run_to_memory(p, backend=backend)
    return p, [t.to_numpy() for t in results], traffic


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "int64", "bool", "complex128"])
def test_a_chain_equals_the_reference_and_onnxruntime(backend, rng, dtype):
    import onnxruntime as ort

    x = random_array(rng, (2, 3, 4, 5), dtype)
    model = chain(helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))
    p, got, traffic = run(model, {"x": x}, backend)
    want = ReferenceEvaluator(model).run(None, {"x": x})
    assert all(same_bits(a, b) for a, b in zip(got, want))
    if dtype != "complex128":  # onnxruntime has no complex Transpose kernel
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        assert all(same_bits(a, b) for a, b in zip(got, sess.run(None, {"x": x})))
    # one step (the merged transposed axes), the input uploaded once, only the outputs read back
    assert len(p.steps) == 1
    assert traffic.uploaded == x.nbytes and traffic.read_back == sum(a.nbytes for a in got)


def test_a_view_chain_is_one_view_with_no_step(backend, rng):
    """Transpose -> Slice -> Expand (broadcast) -> Squeeze -> Reshape: one map over the input."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["a"], perm=[2, 0, 1]),
        helper.make_node("Slice", ["a", "st", "en", "ax"], ["b"]),
        helper.make_node("Expand", ["b", "es"], ["c"]),
        helper.make_node("Squeeze", ["c", "sq"], ["d"]),
        helper.make_node("Reshape", ["d", "rs"], ["y"]),
    ]
    inits = [i64("st", [1]), i64("en", [3]), i64("ax", [0]), i64("es", [2, 1, 1, 1, 1]), i64("sq", [1]),
             i64("rs", [1, 2, 2, 3])]
    model = make(nodes, [("x", TP.FLOAT, [3, 1, 5])], [("y", TP.FLOAT)], inits)
    x = random_array(rng, (3, 1, 5), "float32")
    p, got, traffic = run(model, {"x": x}, backend)
    assert p.steps == [] and not isinstance(p.outputs[0].base, graph.Step)
    # The reference moves bytes, as the ops do: onnx.reference computes Expand
    # as ``data * ones``, which quiets a signalling NaN (random_array always
    # holds one), so its bits are not the operator's.
    want = np.broadcast_to(x.transpose(2, 0, 1)[1:3], (2, 1, 2, 3, 1)).squeeze(1).reshape(1, 2, 2, 3)
    assert same_bits(got[0], want)
    assert traffic.read_back == got[0].nbytes


def test_steps_are_released_after_their_last_reader(backend, rng, monkeypatch):
    from onnxop_cli.gpu import resident

    live = []
    made = resident.DeviceBuffer.__init__
    freed = resident.DeviceBuffer.release

    def init(self, *a, **kw):
        made(self, *a, **kw)
        live.append(self)

    def release(self):
        if self.buffer is not None:
            live.remove(self)
        freed(self)

    monkeypatch.setattr(resident.DeviceBuffer, "__init__", init)
    monkeypatch.setattr(resident.DeviceBuffer, "release", release)
    x = random_array(rng, (2, 3, 4, 5), "float32")
    run(chain(), {"x": x}, backend)
    assert live == []


def test_packed_types_and_strings_through_a_chain(backend, rng):
    import ml_dtypes

    x = rng.integers(-8, 8, (2, 3, 3, 5)).astype(ml_dtypes.int4)  # an odd count per row
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["t", "shape"], ["r"]),
             helper.make_node("Unsqueeze", ["r", "ua"], ["y"])]
    model = make(nodes, [("x", TP.INT4, [2, 3, 3, 5])], [("y", TP.INT4), ("r", TP.INT4)],
                 [i64("shape", [2, 9, 5]), i64("ua", [0])], opset=25)
    _, got, _ = run(model, {"x": x}, backend)
    want = ReferenceEvaluator(model).run(None, {"x": x})
    assert all(same_bits(a, b) for a, b in zip(got, want))
    s = np.array([f"s{i}" for i in range(120)], dtype=object).reshape(2, 3, 4, 5)
    _, got, _ = run(chain(TP.STRING), {"x": s}, backend)
    want = ReferenceEvaluator(chain(TP.STRING)).run(None, {"x": s})
    assert [a.tolist() for a in got] == [b.tolist() for b in want]


def test_a_reshape_that_needs_a_copy_is_told_apart():
    assert Access((3, 2), (1, 3)).reshaped((6,)) is None
    assert Access((2, 3), (3, 1), 4).reshaped((3, 2)) == Access((3, 2), (2, 1), 4)
    assert Access((2, 1, 3), (0, 7, 1)).reshaped((2, 3, 1)) == Access((2, 3, 1), (0, 1, 1))


def test_reshape_matches_numpy_on_random_strided_views():
    rng = np.random.default_rng(7)
    for _ in range(500):
        r = int(rng.integers(1, 5))
        base = np.arange(int(np.prod(shape := tuple(int(d) for d in rng.integers(1, 4, r))))).reshape(shape)
        a = base.transpose(rng.permutation(r))[..., ::-1]
        off = (a.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // 8
        v = Access(a.shape, tuple(s // 8 for s in a.strides), off)
        target = tuple(int(d) for d in rng.permutation([a.size, 1]))
        got = v.reshaped(target)
        try:
            b = a.view()
            b.shape = target
        except AttributeError:
            assert got is None
            continue
        assert got is not None
        assert np.array_equal(base.reshape(-1)[element_index(got)], a.reshape(-1))
