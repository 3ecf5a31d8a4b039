"""GatherND's whole-slice kernel (shaders/indexed_slices.wgsl, gpu/slices.py,
): byte for byte against onnx.reference on random
bits, for every element width, batch_dims, ranks 1 to 8, slices of one word
to many (across an invocation's 16 words), int64 indices little- and
big-endian with negatives wrapped; the kernel is taken exactly where the
slices are whole words (spied on), and otherwise the lookups kernel runs;
indices out of range (2**32 + 1, -(d + 1), d) are named by position and
value with nothing written.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from conftest import random_array
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.gpu import slice_gathers, slices
from onnxop_cli.ops import indexing

POISON = 0xA5


def reference(data: np.ndarray, idx: np.ndarray, b: int) -> np.ndarray:
    node = helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=b)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 0, None) for n in "xi"],
                              [helper.make_tensor_value_info("y", 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return ReferenceEvaluator(model).run(None, {"x": data, "i": idx})[0]


@pytest.fixture
def taken(monkeypatch):
    """The number of calls that ran the whole-slice kernel."""
    calls = []
    real = slice_gathers.run

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(slice_gathers, "run", spy)
    return calls


def run(gpu, x: np.ndarray, i: np.ndarray, b: int, **kw) -> bytes:
    table, check = indexing.gather_nd("GND", x.shape, i.shape, b)
    xs = np.ascontiguousarray(x)
    swap = xs.dtype.itemsize if xs.dtype.byteorder == ">" else 0
    data = ix.Data(MemoryBytes(xs), x.shape, xs.dtype.itemsize * 8 if xs.dtype != np.bool_ else 8, swap)
    index = ix.Index(MemoryBytes(np.ascontiguousarray(i)), i.shape, True, i.dtype.byteorder == ">")
    out = bytearray()
    n = ix.gather_indexed(gpu, data, index, check, table, out.extend, poison=POISON, **kw)
    assert n == len(out)
    return bytes(out)


def tuples(rng, data_shape, lead, b, m, dtype="<i8") -> np.ndarray:
    """Index tuples of m over data_shape[b:b+m], negatives included, after lead axes."""
    cols = [rng.integers(-d, d, lead) if d else np.zeros(lead, np.int64) for d in data_shape[b:b + m]]
    return np.stack(cols, axis=-1).astype(dtype)


def native(a: np.ndarray) -> np.ndarray:
    return a.astype(a.dtype.newbyteorder("="))


WIDTHS = ["bool", "u1", "<i2", "<f2", "<f4", "<i4", "<f8", "<i8", "<c16"]


@pytest.mark.parametrize("dtype", WIDTHS)
@pytest.mark.parametrize("slice_shape", [(), (1,), (3,), (4,), (2, 8), (17,), (5, 7)])
def test_every_width_and_slice(gpu, rng, taken, dtype, slice_shape):
    x = random_array(rng, (6, 5) + slice_shape, dtype)
    i = tuples(rng, x.shape, (4, 9), 0, 2)
    want = reference(x, i, 0)
    assert run(gpu, x, i, 0) == want.tobytes()
    whole = (int(np.prod(slice_shape)) * np.dtype(dtype).itemsize * 8) % 32 == 0
    assert len(taken) == int(whole)


@pytest.mark.parametrize("b", [0, 1, 2])
@pytest.mark.parametrize("m", [1, 2])
@pytest.mark.parametrize("dtype", ["u1", "<f2", "<f4", "<f8"])
def test_batch_dims(gpu, rng, taken, b, m, dtype):
    shape = (3, 4, 5, 6, 4)
    x = random_array(rng, shape, dtype)
    lead = shape[:b] + (7,)
    i = tuples(rng, shape, lead, b, m).reshape(lead + (m,))
    assert run(gpu, x, i, b) == reference(x, i, b).tobytes()
    slice_bits = int(np.prod(shape[b + m:])) * np.dtype(dtype).itemsize * 8
    assert len(taken) == int(slice_bits % 32 == 0)


@pytest.mark.parametrize("rank", range(1, 9))
def test_ranks(gpu, rng, taken, rank):
    shape = (2, 3, 1, 2, 3, 2, 1, 3)[:rank]
    x = random_array(rng, shape, "<f4")
    for m in range(1, rank + 1):
        i = tuples(rng, shape, (5,), 0, m).reshape(5, 1, m)
        assert run(gpu, x, i, 0) == reference(x, i, 0).tobytes(), m
    assert len(taken) == rank


def test_big_endian_indices_and_data(gpu, rng, taken):
    x = random_array(rng, (7, 6, 4), "<f4")
    i = tuples(rng, x.shape, (33,), 0, 2, ">i8")
    assert run(gpu, x, i, 0) == reference(x, native(i), 0).tobytes()
    assert len(taken) == 1
    y = x.astype(">f4")  # swapped data: the lookups kernel swaps it
    assert run(gpu, y, i, 0) == reference(x, native(i), 0).tobytes()
    assert len(taken) == 1


def test_many_invocations_and_the_other_kernel_agree(gpu, rng, taken):
    """Slices of 3 words across the 16 words of an invocation, 5000 of them:
    the same bytes as the lookups kernel (slice_copy False) and the reference."""
    x = random_array(rng, (40, 30, 3), "<f4")
    i = tuples(rng, x.shape, (5000,), 0, 2)
    want = reference(x, i, 0).tobytes()
    assert run(gpu, x, i, 0) == want
    assert run(gpu, x, i, 0, slice_copy=False) == want
    assert len(taken) == 1


@pytest.mark.parametrize("bad", [2**32 + 1, 2**32, -(2**32) + 1, 6, -7, 2**63 - 1, -(2**63)])
@pytest.mark.parametrize("big", [False, True])
def test_out_of_range_named_nothing_written(gpu, rng, taken, bad, big):
    x = random_array(rng, (6, 5, 4), "<f4")
    i = tuples(rng, x.shape, (50,), 0, 2)
    i[37, 0] = bad
    i[41, 1] = bad
    if big:
        i = i.astype(">i8")
    table, check = indexing.gather_nd("GND", x.shape, i.shape, 0)
    got = []
    with pytest.raises(ix.BadIndex) as e:
        ix.gather_indexed(gpu, ix.Data(MemoryBytes(x), x.shape, 32),
                          ix.Index(MemoryBytes(i), i.shape, True, big), check, table, got.append)
    assert e.value.position == (37, 0) and e.value.value == bad
    assert f"indices[37, 0] = {bad} is out of range [-6, 5]" in str(e.value)
    assert got == [] and len(taken) == 1


def test_second_tuple_entry_checked_against_its_own_axis(gpu, rng, taken):
    x = random_array(rng, (9, 3), "<f4")
    i = tuples(rng, x.shape, (20,), 0, 2)
    i[19, 1] = 3  # in range for axis 0 (9), not for axis 1 (3)
    table, check = indexing.gather_nd("GND", x.shape, i.shape, 0)
    with pytest.raises(ix.BadIndex, match=r"indices\[19, 1\] = 3 is out of range \[-3, 2\]"):
        ix.gather_indexed(gpu, ix.Data(MemoryBytes(x), x.shape, 32), ix.Index(MemoryBytes(i), i.shape),
                          check, table, lambda v: None)


def test_zero_size(gpu, rng, taken):
    x = random_array(rng, (4, 0, 3), "<f4")
    i = np.zeros((5, 1), np.int64)  # slices of zero elements: no kernel, the indices still checked
    assert run(gpu, x, i, 0) == b""
    i[2, 0] = 4
    with pytest.raises(ix.BadIndex, match=r"indices\[2, 0\] = 4"):
        run(gpu, x, i, 0)
    y = random_array(rng, (4, 3), "<f4")
    assert run(gpu, y, np.zeros((0, 2), np.int64), 0) == b""
    assert taken == []


def test_plan_only_for_gather_nd_tables():
    t, _ = indexing.gather_elements("GE", (4, 4), (4, 4), 1)
    assert slices.plan(t, 32, (4,)) is None
    t, _ = indexing.gather("G", (4, 4), (3,), 0)  # Gather's slabs: taken only in whole vec4s (test_indexed_mapped.py)
    assert slices.plan(t, 32, (4,)).vec4() and not slices.plan(t, 16, (4,)).vec4()
    t, _ = indexing.gather_nd("GND", (4, 4, 3), (7, 1), 0)
    cut = slices.plan(t, 32, (4,))
    assert cut is not None and cut.width == 12 and cut.outer == 1
    assert slices.plan(t, 8, (4,)).width == 3  # 12 bytes
    t, _ = indexing.gather_nd("GND", (4, 3, 3), (7, 1), 0)
    assert slices.plan(t, 8, (4,)) is None  # 9 bytes: not whole words


# ------------------------------------------------------------------ ScatterND, reduction none


def scatter_reference(data: np.ndarray, idx: np.ndarray, upd: np.ndarray, reduction: str = "none") -> np.ndarray:
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction=reduction)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 0, None) for n in "xiu"],
                              [helper.make_tensor_value_info("y", 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return ReferenceEvaluator(model).run(None, {"x": data, "i": idx, "u": upd})[0]


@pytest.fixture
def scattered(monkeypatch):
    """The number of calls that ran scatter_slices.wgsl."""
    from onnxop_cli.gpu import scatter as sc

    calls = []
    real = sc._by_slices

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(sc, "_by_slices", spy)
    return calls


def scatter(gpu, x: np.ndarray, i: np.ndarray, u: np.ndarray, reduction: str = "none", into=None, **kw) -> bytes:
    from onnxop_cli.gpu import scatter as sc

    table, check = indexing.scatter_nd("SND", x.shape, i.shape, u.shape)
    bits = x.dtype.itemsize * 8
    d = lambda a: ix.Data(MemoryBytes(np.ascontiguousarray(a)), a.shape, bits)  # noqa: E731
    out = [] if into is None else into
    reduce = sc.Reduce() if reduction == "none" else sc.Reduce(reduction, 2, True, int(np.prod(x.shape[i.shape[-1]:])))
    n = sc.scatter_indexed(gpu, d(x), d(u), ix.Index(MemoryBytes(np.ascontiguousarray(i)), i.shape), check, table,
                           reduce, lambda v: out.append(bytes(v)), **kw)
    assert n == sum(map(len, out))
    return b"".join(out)


def distinct(rng, shape, lead, m) -> np.ndarray:
    """``lead`` distinct index tuples over shape[:m], each entry negative half the time."""
    n = int(np.prod(lead))
    flat = rng.permutation(int(np.prod(shape[:m])))[:n]
    cols = np.stack(np.unravel_index(flat, shape[:m]), axis=-1).astype(np.int64)
    flip = rng.integers(0, 2, cols.shape).astype(bool)
    cols[flip] -= np.array(shape[:m], np.int64)[np.nonzero(flip)[1]]
    return cols.reshape(tuple(lead) + (m,))


@pytest.mark.parametrize("dtype", WIDTHS)
@pytest.mark.parametrize("slice_shape", [(), (1,), (3,), (4,), (2, 8), (17,)])
def test_scatter_nd_every_width_and_slice(gpu, rng, scattered, dtype, slice_shape):
    shape = (7, 6) + slice_shape
    x = random_array(rng, shape, dtype)
    i = distinct(rng, shape, (3, 5), 2)
    u = random_array(rng, (3, 5) + slice_shape, dtype)
    assert scatter(gpu, x, i, u) == scatter_reference(x, i, u).tobytes()
    whole = (int(np.prod(slice_shape)) * np.dtype(dtype).itemsize * 8) % 32 == 0
    assert len(scattered) == int(whole)


@pytest.mark.parametrize("rank", range(1, 9))
def test_scatter_nd_ranks(gpu, rng, scattered, rank):
    shape = (3, 2, 3, 1, 2, 3, 2, 2)[:rank]
    x = random_array(rng, shape, "<f4")
    for m in range(1, rank + 1):
        slots = int(np.prod(shape[:m]))
        i = distinct(rng, shape, (min(slots, 4),), m)
        u = random_array(rng, i.shape[:-1] + shape[m:], "<f4")
        assert scatter(gpu, x, i, u) == scatter_reference(x, i, u).tobytes(), m
    assert len(scattered) == rank


def test_scatter_nd_many_invocations(gpu, rng, scattered):
    """Update slices of 3 words across an invocation's 16, 3000 of them: the
    same bytes as the claim/apply rounds (slice_copy False) and the reference."""
    shape = (60, 70, 3)
    x = random_array(rng, shape, "<f4")
    i = distinct(rng, shape, (3000,), 2)
    u = random_array(rng, (3000, 3), "<f4")
    want = scatter_reference(x, i, u).tobytes()
    assert scatter(gpu, x, i, u) == want
    assert scatter(gpu, x, i, u, slice_copy=False) == want
    assert len(scattered) == 1


@pytest.mark.parametrize("slice_shape", [(), (5,)])
def test_scatter_nd_duplicates_refused_nothing_written(gpu, rng, scattered, slice_shape):
    from onnxop_cli.errors import OpError

    shape = (9, 8) + slice_shape
    x = random_array(rng, shape, "<f4")
    i = distinct(rng, shape, (40,), 2)
    i[33] = i[5] - np.where(i[5] >= 0, np.array(shape[:2]), 0)  # the same slice, written negative
    u = random_array(rng, (40,) + slice_shape, "<f4")
    written: list = []
    with pytest.raises(OpError, match="two updates write one element with reduction none"):
        scatter(gpu, x, i, u, into=written)
    assert len(scattered) == 1 and written == []
    # with a reduction, duplicates are applied in order by the rounds, not here
    got = scatter(gpu, x, i, u, "add")
    assert got == scatter_reference(x, i, u, "add").tobytes()
    assert len(scattered) == 1


@pytest.mark.parametrize("bad", [2**32 + 1, 2**32, 9, -10, -(2**63)])
def test_scatter_nd_out_of_range(gpu, rng, scattered, bad):
    shape = (9, 8, 4)
    x = random_array(rng, shape, "<f4")
    i = distinct(rng, shape, (12,), 2)
    i[7, 0] = bad
    u = random_array(rng, (12, 4), "<f4")
    written: list = []
    with pytest.raises(ix.BadIndex, match=rf"indices\[7, 0\] = {bad} is out of range \[-9, 8\]"):
        scatter(gpu, x, i, u, into=written)
    assert written == [] and len(scattered) <= 1  # the slice kernel's claim checks them (test_indexed_mapped.py)


def test_scatter_nd_zero_size(gpu, rng, scattered):
    x = random_array(rng, (5, 4), "<f4")
    i = np.zeros((0, 1), np.int64)
    u = np.zeros((0, 4), np.float32)
    assert scatter(gpu, x, i, u) == x.tobytes()
    assert scattered == []


@pytest.mark.parametrize("dtype", ["<f4", "<f8", "<i2"])
def test_gather_nd_fortran_data(gpu, rng, taken, dtype):
    """Data stored column-major: the trailing axes are not contiguous, so a
    slice is one element (whole words for 32 bits and more: the kernel runs
    per element) or the lookups kernel runs."""
    x = random_array(rng, (6, 5, 4), dtype)
    f = np.asfortranarray(x)
    item = x.dtype.itemsize
    ds = tuple(s // item for s in f.strides)
    for m in (1, 2):
        i = tuples(rng, x.shape, (7,), 0, m)
        table, check = indexing.gather_nd("GND", x.shape, i.shape, 0, ds, None)
        storage = f.T.copy()  # the bytes in storage order
        data = ix.Data(MemoryBytes(storage), x.shape, item * 8, 0, ds)
        out = bytearray()
        ix.gather_indexed(gpu, data, ix.Index(MemoryBytes(i), i.shape), check, table, out.extend)
        assert bytes(out) == reference(x, i, 0).tobytes(), m
    assert len(taken) == (2 if item >= 4 else 0)


# ------------------------------------------------------------------ ScatterElements with a reduction, by lines


def elements_reference(data, idx, upd, axis, reduction):
    node = helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=axis, reduction=reduction)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 0, None) for n in "xiu"],
                              [helper.make_tensor_value_info("y", 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with np.errstate(all="ignore"):
        return ReferenceEvaluator(model).run(None, {"x": data, "i": idx, "u": upd})[0]


@pytest.fixture
def lined(monkeypatch):
    """The number of calls that ran scatter_apply.wgsl's ``lines``."""
    from onnxop_cli.gpu import scatter as sc

    calls = []
    real = sc._by_lines

    def spy(*a, **k):
        calls.append(a[10] if len(a) > 10 else 0)  # dlen: the direct variant's axis length, else 0
        return real(*a, **k)

    monkeypatch.setattr(sc, "_by_lines", spy)
    return calls


CLS = {"u": 0, "i": 1, "f": 2, "b": 3}


def scatter_elements(gpu, x, i, u, axis, reduction, **kw) -> bytes:
    from onnxop_cli.gpu import scatter as sc

    table, check = indexing.scatter_elements("SE", x.shape, i.shape, u.shape, axis)
    swap = x.dtype.itemsize if x.dtype.byteorder == ">" else 0
    d = lambda a: ix.Data(MemoryBytes(np.ascontiguousarray(a)), a.shape, a.dtype.itemsize * 8, swap)  # noqa: E731
    out = bytearray()
    reduce = sc.Reduce(reduction, CLS[x.dtype.kind], False)
    n = sc.scatter_indexed(gpu, d(x), d(u), ix.Index(MemoryBytes(np.ascontiguousarray(i)), i.shape), check, table,
                           reduce, out.extend, **kw)
    assert n == len(out)
    return bytes(out)


LINE_TYPES = ["<f4", "<f2", "<i4", "<i8", "u1", "<u8", "<i2", "?", ">f4", "<f8"]


# float64 add and mul are refused by the op (WGSL has no f64): not made, rather than skipped
LINE_CASES = [(t, r) for r in ("add", "mul", "max", "min") for t in LINE_TYPES if not (t == "<f8" and r in ("add", "mul"))]


LINE_SHAPES = [(0, (6, 300), (9, 300)), (1, (300, 5), (300, 8)), (1, (4, 7, 70), (4, 11, 70)),
               (2, (2, 150, 3), (2, 150, 7)), (0, (6, 310), (9, 300)), (1, (5, 9, 71), (4, 11, 70))]


# each type and reduction on two of the shapes, each shape with a dozen of them (not all 228 pairs)
@pytest.mark.parametrize("dtype,reduction,axis,shape,ishape",
                         [(t, r, *LINE_SHAPES[(j + k) % len(LINE_SHAPES)])
                          for j, (t, r) in enumerate(LINE_CASES) for k in (0, 3)])
def test_lines_in_index_order(gpu, rng, lined, dtype, reduction, axis, shape, ishape):
    x = random_array(rng, shape, dtype)
    u = random_array(rng, ishape, dtype)
    d = shape[axis]
    i = rng.integers(-d, d, ishape).astype(np.int64)  # more updates than elements along the axis: duplicates
    want = elements_reference(native(x), i, native(u), axis, reduction)
    got = scatter_elements(gpu, x, i, u, axis, reduction)
    assert got == want.astype(want.dtype.newbyteorder("<")).tobytes()
    assert scatter_elements(gpu, x, i, u, axis, reduction) == got  # run to run
    assert scatter_elements(gpu, x, i, u, axis, reduction, slice_copy=False) == got  # the rounds agree
    direct = all(d == e for k, (d, e) in enumerate(zip(shape, ishape)) if k != axis)
    assert lined == [shape[axis] if direct else 0] * 2  # the checked indices read directly, or the targets


def test_few_lines_keep_the_rounds(gpu, rng, lined):
    from onnxop_cli.gpu import scatter as sc

    x = random_array(rng, (50, 4), "<f4")
    i = rng.integers(-50, 50, (60, 4)).astype(np.int64)
    u = random_array(rng, (60, 4), "<f4")
    assert scatter_elements(gpu, x, i, u, 0, "add") == elements_reference(x, i, u, 0, "add").tobytes()
    assert lined == []
    assert 4 < sc.LINES_AT_LEAST


@pytest.mark.parametrize("bad", [2**32 + 1, 300, -301])
def test_lines_out_of_range(gpu, rng, lined, bad):
    x = random_array(rng, (300, 300), "<f4")
    i = rng.integers(-300, 300, (300, 4)).astype(np.int64)
    i[299, 3] = bad
    u = random_array(rng, (300, 4), "<f4")
    table, check = indexing.scatter_elements("SE", x.shape, i.shape, u.shape, 1)
    written = []
    from onnxop_cli.gpu import scatter as sc

    with pytest.raises(ix.BadIndex, match=rf"indices\[299, 3\] = {bad} is out of range \[-300, 299\]"):
        sc.scatter_indexed(gpu, ix.Data(MemoryBytes(x), x.shape, 32), ix.Data(MemoryBytes(u), u.shape, 32),
                           ix.Index(MemoryBytes(i), i.shape), check, table, sc.Reduce("add", 2, False), written.append)
    assert written == [] and len(lined) <= 1  # the line kernel checks them itself (test_indexed_mapped.py)


def test_lines_zero_size(gpu, rng, lined):
    x = random_array(rng, (300, 3), "<f4")
    i = np.zeros((300, 0), np.int64)
    assert scatter_elements(gpu, x, i, np.zeros((300, 0), np.float32), 1, "add") == x.tobytes()
    assert lined == []


def test_lines_with_column_major_indices(gpu, rng, lined):
    """Indices stored column-major: the line kernel reads computed targets (the
    direct variant assumes row-major positions)."""
    from onnxop_cli.gpu import scatter as sc

    x = random_array(rng, (300, 6), "<f4")
    i = rng.integers(-6, 6, (300, 9)).astype(np.int64)
    u = random_array(rng, (300, 9), "<f4")
    f = np.asfortranarray(i)
    table, check = indexing.scatter_elements("SE", x.shape, i.shape, u.shape, 1, tuple(s // 8 for s in f.strides))
    out = bytearray()
    sc.scatter_indexed(gpu, ix.Data(MemoryBytes(x), x.shape, 32), ix.Data(MemoryBytes(u), u.shape, 32),
                       ix.Index(MemoryBytes(f.T.copy()), i.shape, fortran=True), check, table,
                       sc.Reduce("add", 2, False), out.extend)
    assert bytes(out) == elements_reference(x, i, u, 1, "add").tobytes()
    assert lined == [0]
