"""GatherND's pairs by runs of 16 slices
(shaders/gather_nd_rows.wgsl, gpu/nd_rows.py), and the index check of it
and of GatherElements' runs (gather_elements_rows.wgsl) folded into one
atomicMin per invocation. Every GatherND test asserts which kernel ran
(``gpu.cache[ix.LAST]["nd pairs"]``: a silent fallback to the words kernel
fails it, and so does the pairs kernel taken where it must not be) and
compares byte for byte with onnx.reference on random bits and with the
words kernel (``nd_rows.ENABLED`` off): slices of one and two words (8- to
64-bit elements), batch_dims 0-2, leading rows shorter and longer than a
run, big-endian indices, negatives wrapped, a grid of more than
``max_groups_per_dim`` rows; bad indices (2**32 + 1, -(d + 1), d, in a run
along one row and in a run that crosses rows) are refused by the first
position, value and range, with nothing written.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from conftest import random_array
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.gpu import nd_rows, slices
from onnxop_cli.ops import indexing


def reference(op: str, x: np.ndarray, i: np.ndarray, **attrs) -> np.ndarray:
    node = helper.make_node(op, ["x", "i"], ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 0, None) for n in "xi"],
                              [helper.make_tensor_value_info("y", 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return ReferenceEvaluator(model).run(None, {"x": x, "i": i})[0]


def data_of(x: np.ndarray) -> ix.Data:
    return ix.Data(MemoryBytes(np.ascontiguousarray(x)), x.shape, x.dtype.itemsize * 8)


def index_of(i: np.ndarray) -> ix.Index:
    return ix.Index(MemoryBytes(np.ascontiguousarray(i)), i.shape, True, i.dtype.byteorder == ">")


def gather_nd(gpu, x: np.ndarray, i: np.ndarray, b: int = 0, pairs: bool = True, **kw) -> bytes:
    """The bytes of GatherND on the device, asserting whether the pairs kernel ran."""
    table, check = indexing.gather_nd("GND", x.shape, i.shape, b)
    out = bytearray()
    n = ix.gather_indexed(gpu, data_of(x), index_of(i), check, table, out.extend, poison=0xA5, **kw)
    assert n == len(out)
    assert bool(gpu.cache[ix.LAST].get("nd pairs")) == pairs, gpu.cache[ix.LAST]
    return bytes(out)


def words_kernel(gpu, x, i, b=0, **kw) -> bytes:
    nd_rows.ENABLED = False
    try:
        return gather_nd(gpu, x, i, b, pairs=False, **kw)
    finally:
        nd_rows.ENABLED = True


def tuples(rng, bounds, lead, dtype="<i8") -> np.ndarray:
    """Index tuples over ``bounds`` (negatives included) after ``lead`` axes."""
    return np.stack([rng.integers(-d, d, lead) for d in bounds], axis=-1).astype(dtype)


@pytest.mark.parametrize("dtype, tail", [("<f4", ()), ("u1", (4,)), ("<f2", (2,)), ("<f8", ()), ("<i4", (2,))])
def test_pairs_every_word_width(gpu, rng, dtype, tail):
    """Slices of one word (f4, 4 x u1, 2 x f2) and two (f8, 2 x i4); 3 x 45
    tuples: rows of 45 slices, runs along one row and across rows."""
    x = random_array(rng, (13, 11) + tail, dtype)
    i = tuples(rng, (13, 11), (3, 45))
    got = gather_nd(gpu, x, i)
    assert got == reference("GatherND", x, i).tobytes()
    assert words_kernel(gpu, x, i) == got


@pytest.mark.parametrize("b", [1, 2])
def test_pairs_batch_dims(gpu, rng, b):
    shape = (3, 2)[:b] + (9, 7)
    x = random_array(rng, shape, "<f4")
    i = tuples(rng, shape[b:], shape[:b] + (19,))
    assert gather_nd(gpu, x, i, b) == reference("GatherND", x, i, batch_dims=b).tobytes()
    y = random_array(rng, (37,) + shape[b:], "<f4")  # runs of 16 along a batch axis: data strides 63
    i = tuples(rng, shape[b:], (37,))
    assert gather_nd(gpu, y, i, 1) == reference("GatherND", y, i, batch_dims=1).tobytes()


def test_pairs_short_rows_one_tuple_and_big_endian(gpu, rng):
    """Leading rows of 5 (every run crosses rows), one tuple alone, big-endian tuples."""
    x = random_array(rng, (6, 8), "<f4")
    i = tuples(rng, (6, 8), (7, 5))
    assert gather_nd(gpu, x, i) == reference("GatherND", x, i).tobytes()
    one = tuples(rng, (6, 8), ())
    assert gather_nd(gpu, x, one) == reference("GatherND", x, one).tobytes()
    big = tuples(rng, (6, 8), (37,), ">i8")
    assert gather_nd(gpu, x, big) == reference("GatherND", x, big.astype("<i8")).tobytes()


def test_pairs_grid_rows(gpu, rng):
    """9001 tuples, 3 workgroups a grid row: the kernel's 2-D grid."""
    x = random_array(rng, (97, 89), "<f4")
    i = tuples(rng, (97, 89), (9001,))
    got = gather_nd(gpu, x, i, max_groups_per_dim=2)
    assert got == reference("GatherND", x, i).tobytes()


def test_not_pairs(gpu, rng):
    """Tuples of one or three, slices of three words or of whole vectors, a
    band or a window smaller than the call: other kernels, the same bytes."""
    x = random_array(rng, (5, 6, 7), "<f4")
    for m in (1, 3):
        i = tuples(rng, x.shape[:m], (23,))
        assert gather_nd(gpu, x, i, pairs=False) == reference("GatherND", x, i).tobytes()
    y = random_array(rng, (5, 6, 3), "<f4")
    i = tuples(rng, (5, 6), (23,))
    assert gather_nd(gpu, y, i, pairs=False) == reference("GatherND", y, i).tobytes()
    z = random_array(rng, (5, 6, 4), "<f4")
    assert gather_nd(gpu, z, i, pairs=False) == reference("GatherND", z, i).tobytes()
    w = random_array(rng, (40, 50), "<f4")
    i = tuples(rng, (40, 50), (700,))
    want = reference("GatherND", w, i).tobytes()
    assert gather_nd(gpu, w, i, pairs=False, binding_bytes=1024) == want
    assert gather_nd(gpu, w, i, pairs=False, window_bytes=1024) == want


def test_plan_only_pairs_of_row_major_wrapped_indices():
    """No GPU: the plan refuses a tuple's two indices apart (even leading
    strides), odd leading index strides and other check modes."""
    x, i = (6, 8), (5, 4, 2)
    table, check = indexing.gather_nd("GND", x, i, 0)
    cut = slices.plan(table, 32, check.bounds)
    assert nd_rows.plan(cut, check.mode) is not None
    assert nd_rows.plan(cut, check.mode + 1) is None
    apart, _ = indexing.gather_nd("GND", x, i, 0, None, (8, 2, 40))
    assert nd_rows.plan(slices.plan(apart, 32, check.bounds), check.mode) is None
    odd = struct.pack("<4I", 4, 0, 3, 0)  # a leading axis of 4 tuples, 3 index elements apart
    assert nd_rows.plan(slices.Slices(1, 2, cut.blob[:16] + odd + cut.blob[32:]), check.mode) is None


@pytest.mark.parametrize("bad, which", [(2**32 + 1, 0), (-(2**32) + 1, 1), (-7, 0), (8, 1), (2**63 - 1, 1),
                                        (-(2**63), 0)])
@pytest.mark.parametrize("lead", [(4, 40), (40, 4)])
def test_pairs_bad_index_named_nothing_written(gpu, rng, bad, which, lead):
    """Two bad indices in runs along one row (lead (4, 40)) or across rows
    ((40, 4)); the first is named; nothing reaches the sink."""
    x = random_array(rng, (6, 8), "<f4")
    i = tuples(rng, (6, 8), lead)
    i.reshape(-1, 2)[150, 1 - which] = 8 if which == 0 else 6  # later: never the one named
    i.reshape(-1, 2)[61, which] = bad
    table, check = indexing.gather_nd("GND", x.shape, i.shape, 0)
    got = []
    with pytest.raises(ix.BadIndex) as e:
        ix.gather_indexed(gpu, data_of(x), index_of(i), check, table, got.append)
    assert not got
    assert gpu.cache[ix.LAST].get("nd pairs") == 1
    where = np.unravel_index(61, lead)
    assert e.value.position == (*map(int, where), which) and e.value.value == bad
    d = x.shape[which]
    assert f"out of range [-{d}, {d - 1}]" in str(e.value)


def test_elements_first_of_many_bad(gpu, rng):
    """GatherElements' runs: bad indices in one invocation's run and in later
    ones; the first position is named, nothing written; fixed, the bytes of
    numpy's take_along_axis (onnx.reference's GatherElements fails on this
    numpy for 70 columns)."""
    x = random_array(rng, (9, 70), "<f4")
    i = rng.integers(-70, 70, x.shape).astype(np.int64)
    i[2, 35], i[2, 33], i[2, 47], i[7, 3] = 70, 2**32 + 1, -71, 2**32
    table, check = indexing.gather_elements("GE", x.shape, i.shape, 1)
    got = []
    with pytest.raises(ix.BadIndex) as e:
        ix.gather_indexed(gpu, data_of(x), index_of(i), check, table, got.append)
    assert not got and gpu.cache[ix.LAST].get("rows") == 1
    assert e.value.position == (2, 33) and e.value.value == 2**32 + 1
    i[2, 33], i[2, 35], i[2, 47], i[7, 3] = 5, -70, 69, 0
    out = bytearray()
    ix.gather_indexed(gpu, data_of(x), index_of(i), check, table, out.extend)
    assert gpu.cache[ix.LAST].get("rows") == 1
    assert bytes(out) == np.take_along_axis(x, np.where(i < 0, i + 70, i), axis=1).tobytes()
