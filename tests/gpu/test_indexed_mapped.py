"""The indexed kernels' mapped transfers (gpu/indexed_buffers.py): on adapters that map their storage buffers (``can_map``:
wgpu and Dawn on lavapipe) the data, the raw indices and the result move
through the kernel's own buffers mapped, elsewhere staged. Every test
asserts the path each transfer took (a silent fallback fails) and compares
byte for byte with numpy / onnx.reference on random bits, for every element
width, int64 and int32 indices, big-endian and column-major storage, ranks
1 to 8, several bands and data windows, zero sizes; out-of-range indices
(2**32 + 1, int64's extremes, +-d) and ScatterND duplicates are refused with
nothing written; the staged path (``mapped=False``) gives the same bytes.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from conftest import random_array
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.gpu import scatter as sc
from onnxop_cli.gpu.buffers import can_map
from onnxop_cli.ops import indexing

WIDTHS = ["bool", "u1", "<i2", "<f2", "<f4", "<i4", "<f8", "<i8", "<c16"]
BADS = [2**32 + 1, 2**63 - 1, -(2**63), "d", "-d-1"]


def onnx_run(op: str, inputs: dict, **attrs) -> np.ndarray:
    names = list(inputs)
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 0, None) for n in names],
                              [helper.make_tensor_value_info("y", 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with np.errstate(all="ignore"):
        return ReferenceEvaluator(model).run(None, inputs)[0]


def path(gpu, mapped: bool | None = None, reads: bool = True, uploads: bool = True) -> None:
    """The last call moved its host bytes mapped where the adapter maps (and
    ``mapped`` is not False), else staged -- every transfer one way."""
    counts = gpu.cache[ix.LAST]
    way = "mapped" if can_map(gpu) and mapped is not False else "staged"
    other = "staged" if way == "mapped" else "mapped"
    assert counts[f"{other} uploads"] == 0 and counts[f"{other} reads"] == 0, counts
    assert (counts[f"{way} uploads"] > 0) == uploads, counts
    assert (counts[f"{way} reads"] > 0) == reads, counts


def data_of(a: np.ndarray, strides=None) -> ix.Data:
    bits = 8 if a.dtype == np.bool_ else a.dtype.itemsize * 8
    swap = a.dtype.itemsize if a.dtype.byteorder == ">" and a.dtype.itemsize > 1 else 0
    if swap and a.dtype.kind == "c":
        swap = a.dtype.itemsize // 2
    return ix.Data(MemoryBytes(np.ascontiguousarray(a)), a.shape, bits, swap, strides)


def index_of(i: np.ndarray) -> ix.Index:
    return ix.Index(MemoryBytes(np.ascontiguousarray(i)), i.shape, i.dtype.itemsize == 8, i.dtype.byteorder == ">")


def gathered(gpu, table_check, x, i, mapped=None, **kw) -> bytes:
    table, check = table_check
    out = bytearray()
    n = ix.gather_indexed(gpu, data_of(x), index_of(i), check, table, out.extend, mapped=mapped, poison=0xA5, **kw)
    assert n == len(out)
    return bytes(out)


def little(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()


def native(a: np.ndarray) -> np.ndarray:
    return a.astype(a.dtype.newbyteorder("="))


# ------------------------------------------------------------------ gathers


@pytest.mark.parametrize("dtype", WIDTHS)
@pytest.mark.parametrize("itype", ["<i8", "<i4"])
def test_gather_every_width(gpu, rng, dtype, itype):
    x = random_array(rng, (7, 5, 3), dtype)
    i = rng.integers(-5, 5, (4, 6)).astype(itype)
    want = little(np.take(x, i, axis=1))
    got = gathered(gpu, indexing.gather("Gather", x.shape, i.shape, 1), x, i)
    path(gpu)
    assert got == want
    assert gathered(gpu, indexing.gather("Gather", x.shape, i.shape, 1), x, i, mapped=False) == want
    path(gpu, mapped=False)


@pytest.mark.parametrize("dtype", WIDTHS)
def test_gather_elements_every_width(gpu, rng, dtype):
    x = random_array(rng, (6, 9), dtype)
    i = rng.integers(-9, 9, (6, 13)).astype(np.int64)
    want = little(np.take_along_axis(x, np.where(i < 0, i + 9, i), axis=1))
    assert gathered(gpu, indexing.gather_elements("GE", x.shape, i.shape, 1), x, i) == want
    path(gpu)


@pytest.mark.parametrize("dtype", ["u1", "<f2", "<f4", "<f8"])
def test_gather_nd_slices_and_reverse_sequence(gpu, rng, dtype):
    x = random_array(rng, (6, 5, 8), dtype)
    i = np.stack([rng.integers(-6, 6, 11), rng.integers(-5, 5, 11)], axis=-1).astype(np.int64)
    assert gathered(gpu, indexing.gather_nd("GND", x.shape, i.shape, 0), x, i) == little(
        onnx_run("GatherND", {"x": x, "i": i}))
    path(gpu)
    lens = rng.integers(0, 6, (5,)).astype(np.int64)
    want = onnx_run("ReverseSequence", {"x": native(x), "l": lens}, batch_axis=1, time_axis=0)
    assert gathered(gpu, indexing.reverse_sequence("RS", x.shape, lens.shape, 1, 0), x, lens) == little(want)
    path(gpu)


@pytest.mark.parametrize("rank", range(1, 9))
def test_ranks(gpu, rng, rank):
    shape = tuple(int(v) for v in rng.integers(1, 4, rank))
    x = random_array(rng, shape, "<f4")
    axis = rank - 1
    i = rng.integers(-shape[axis], shape[axis], (3,)).astype(np.int64)
    assert gathered(gpu, indexing.gather("Gather", x.shape, i.shape, axis), x, i) == np.take(x, i, axis).tobytes()
    path(gpu)
    j = rng.integers(-shape[axis], shape[axis], shape).astype(np.int64)
    want = np.take_along_axis(x, np.where(j < 0, j + shape[axis], j), axis)
    assert gathered(gpu, indexing.gather_elements("GE", x.shape, j.shape, axis), x, j) == want.tobytes()
    path(gpu)


def test_big_endian_data_and_indices(gpu, rng):
    for dtype in (">f4", ">i2", ">f8", ">c16"):
        x = random_array(rng, (5, 7), dtype)
        i = rng.integers(-5, 5, (9,)).astype(">i8")
        assert gathered(gpu, indexing.gather("Gather", x.shape, i.shape, 0), x, i) == little(
            np.take(native(x), native(i), 0)), dtype
        path(gpu)


def test_fortran_data_and_indices(gpu, rng):
    x = random_array(rng, (6, 5, 4), "<f4")
    f = np.asfortranarray(x)
    ds = tuple(s // 4 for s in f.strides)
    i = np.asfortranarray(rng.integers(-5, 5, (3, 4)).astype(np.int64))
    is_ = tuple(s // 8 for s in i.strides)
    table, check = indexing.gather("Gather", x.shape, i.shape, 1, ds, is_)
    out = bytearray()
    ix.gather_indexed(gpu, ix.Data(MemoryBytes(f.T.copy()), x.shape, 32, 0, ds),
                      ix.Index(MemoryBytes(i.T.copy()), i.shape, fortran=True), check, table, out.extend)
    path(gpu)
    assert bytes(out) == np.take(x, i, 1).tobytes()


def test_bands_windows_and_odd_lengths(gpu, rng):
    """Several bands (dst mapped and read again), data windows (several
    mapped uploads), byte data whose length is no whole word."""
    x = random_array(rng, (301, 7), "u1")
    i = rng.integers(-301, 301, (500,)).astype(np.int64)
    want = np.take(x, i, 0).tobytes()
    table_check = indexing.gather("Gather", x.shape, i.shape, 0)
    assert gathered(gpu, table_check, x, i, binding_bytes=256, window_bytes=512) == want
    path(gpu)
    counts = gpu.cache[ix.LAST]
    way = "mapped" if can_map(gpu) else "staged"
    assert counts[f"{way} reads"] == -(-len(want) // 256) and counts[f"{way} uploads"] >= 5, counts
    assert gathered(gpu, table_check, x, i, binding_bytes=256, window_bytes=512, mapped=False) == want


@pytest.mark.parametrize("bad", BADS)
@pytest.mark.parametrize("bands", [False, True])
def test_gather_out_of_range_nothing_written(gpu, rng, bad, bands):
    """Checked by the gather kernel (one band) or by indices.wgsl (bands)."""
    x = random_array(rng, (40, 6), "<f4")
    d = 40
    value = {"d": d, "-d-1": -d - 1}.get(bad, bad)
    for case in ("Gather", "GatherElements"):
        if case == "Gather":
            i = rng.integers(-d, d, (50,)).astype(np.int64)
            i[37] = value
            table_check, where = indexing.gather("Gather", x.shape, i.shape, 0), "[37]"
        else:
            i = rng.integers(-d, d, (6, 30)).astype(np.int64)
            i[4, 17] = value
            table_check, where = indexing.gather_elements("GE", (6, 40), i.shape, 1), "[4, 17]"
        table, check = table_check
        got = []
        src = x if case == "Gather" else x.T.copy()
        with pytest.raises(ix.BadIndex) as e:
            ix.gather_indexed(gpu, data_of(src), index_of(i), check, table, got.append,
                              binding_bytes=128 if bands else None)
        assert f"{where} = {value} is out of range [-40, 39]" in str(e.value) and e.value.value == value
        assert got == [], case


def test_zero_sizes(gpu, rng):
    x = random_array(rng, (4, 5), "<f4")
    i = np.zeros((0,), np.int64)
    assert gathered(gpu, indexing.gather("Gather", x.shape, i.shape, 0), x, i) == b""
    y = random_array(rng, (4, 0), "<f4")
    j = np.array([1, -4, 3], np.int64)
    assert gathered(gpu, indexing.gather("Gather", y.shape, j.shape, 0), y, j) == b""
    j[1] = 4
    with pytest.raises(ix.BadIndex, match=r"\[1\] = 4 is out of range"):
        gathered(gpu, indexing.gather("Gather", y.shape, j.shape, 0), y, j)


# ------------------------------------------------------------------ scatters


def scattered(gpu, table_check, x, i, u, reduce, mapped=None, **kw) -> bytes:
    table, check = table_check
    out = bytearray()
    n = sc.scatter_indexed(gpu, data_of(x), data_of(u), index_of(i), check, table, reduce, out.extend,
                           mapped=mapped, **kw)
    assert n == len(out)
    return bytes(out)


def distinct(rng, n, d) -> np.ndarray:
    rows = rng.permutation(d)[:n].astype(np.int64)
    return np.where(rng.integers(0, 2, n).astype(bool), rows - d, rows).reshape(n, 1)


@pytest.mark.parametrize("dtype", WIDTHS)
def test_scatter_nd_none_every_width(gpu, rng, dtype):
    x = random_array(rng, (9, 5), dtype)
    i = distinct(rng, 6, 9)
    u = random_array(rng, (6, 5), dtype)
    want = little(onnx_run("ScatterND", {"x": x, "i": i, "u": u}))
    tc = indexing.scatter_nd("SND", x.shape, i.shape, u.shape)
    assert scattered(gpu, tc, x, i, u, sc.Reduce()) == want
    path(gpu)
    assert scattered(gpu, tc, x, i, u, sc.Reduce(), mapped=False) == want
    path(gpu, mapped=False)
    assert scattered(gpu, tc, x, i, u, sc.Reduce(), slice_copy=False) == want  # the rounds
    path(gpu)


def test_scatter_nd_duplicates_refused_nothing_written(gpu, rng):
    x = random_array(rng, (9, 5), "<f4")
    i = distinct(rng, 6, 9)
    i[4] = i[1] - 9 if i[1] >= 0 else i[1] + 9  # the same row, written the other way round
    u = random_array(rng, (6, 5), "<f4")
    tc = indexing.scatter_nd("SND", x.shape, i.shape, u.shape)
    for slice_copy in (True, False):
        got = []
        table, check = tc
        with pytest.raises(ix.OpError, match="two updates write one element"):
            sc.scatter_indexed(gpu, data_of(x), data_of(u), index_of(i), check, table, sc.Reduce(), got.append,
                               slice_copy=slice_copy)
        assert got == []


@pytest.mark.parametrize("bad", BADS)
def test_scatter_out_of_range_nothing_written(gpu, rng, bad):
    x = random_array(rng, (300, 9), "<f4")
    for case in ("ScatterND", "ScatterElements"):
        if case == "ScatterND":
            d, i, u = 300, distinct(rng, 40, 300), random_array(rng, (40, 9), "<f4")
            at, tc, reduce = (33, 0), indexing.scatter_nd("SND", x.shape, (40, 1), u.shape), sc.Reduce()
        else:
            d, i, u = 9, rng.integers(-9, 9, (300, 4)).astype(np.int64), random_array(rng, (300, 4), "<f4")
            at, tc, reduce = (299, 3), indexing.scatter_elements("SE", x.shape, i.shape, u.shape, 1), sc.Reduce(
                "add", 2, False)
        value = {"d": d, "-d-1": -d - 1}.get(bad, bad)
        i[at] = value
        table, check = tc
        got = []
        for fold in (True, False):
            with pytest.raises(ix.BadIndex) as e:
                sc.scatter_indexed(gpu, data_of(x), data_of(u), index_of(i), check, table, reduce, got.append,
                                   fold=fold)
            assert e.value.value == value and e.value.position == at, case
            assert f"indices[{at[0]}, {at[1]}] = {value} is out of range [{-d}, {d - 1}]" in str(e.value), case
            assert got == [], case
            folded(gpu, fold)


def folded(gpu, yes: bool) -> None:
    """The last scatter's indices were checked by the kernel that applied them (no indices.wgsl pass), or not."""
    counts = gpu.cache[ix.LAST]
    assert (counts["folded checks"], counts["check passes"]) == ((1, 0) if yes else (0, 1)), counts


def test_scatter_nd_none_folded_every_width_and_first_bad(gpu, rng):
    """The claim reads and checks the raw tuples: the smallest bad position is
    named whichever invocation finds one; a bad index wins over the duplicate
    its wrapped zero would look like; big-endian indices are read swapped."""
    for dtype in WIDTHS:
        x = random_array(rng, (40, 3, 4), dtype)
        i = np.stack(np.unravel_index(rng.permutation(120)[:50], (40, 3)), -1).astype(np.int64)
        i = np.where(rng.integers(0, 2, i.shape).astype(bool), i - np.array([40, 3]), i)  # negatives wrap
        u = random_array(rng, (50, 4), dtype)
        tc = indexing.scatter_nd("SND", x.shape, i.shape, u.shape)
        want = little(onnx_run("ScatterND", {"x": x, "i": i, "u": u}))
        assert scattered(gpu, tc, x, i, u, sc.Reduce()) == want, dtype
        folded(gpu, True)
        path(gpu)
        assert scattered(gpu, tc, x, i.astype(">i8"), u, sc.Reduce()) == want, dtype
        folded(gpu, True)
        assert scattered(gpu, tc, x, i, u, sc.Reduce(), fold=False) == want
        folded(gpu, False)
    i[44, 1], i[45, 0], i[9, 0] = 3, -41, 2**32  # three bad, the first at [9, 0]
    got = []
    with pytest.raises(ix.BadIndex) as e:
        table, check = tc
        sc.scatter_indexed(gpu, data_of(x), data_of(u), index_of(i), check, table, sc.Reduce(), got.append)
    assert e.value.position == (9, 0) and got == []
    folded(gpu, True)


@pytest.mark.parametrize("reduction", ["add", "max"])
def test_scatter_elements_folded_lines_and_first_bad(gpu, rng, reduction):
    x = random_array(rng, (3, 100, 6), "<f4")
    u = random_array(rng, (3, 100, 9), "<f4")
    i = rng.integers(-6, 6, u.shape).astype(np.int64)
    want = little(onnx_run("ScatterElements", {"x": x, "i": i, "u": u}, axis=2, reduction=reduction))
    tc = indexing.scatter_elements("SE", x.shape, i.shape, u.shape, 2)
    reduce = sc.Reduce(reduction, 2, False)
    for fold in (True, False):
        assert scattered(gpu, tc, x, i, u, reduce, fold=fold) == want
        folded(gpu, fold)
        assert scattered(gpu, tc, x, i.astype(">i8"), u, reduce, fold=fold) == want
        folded(gpu, fold)
    i[2, 99, 8], i[1, 5, 0], i[1, 4, 7] = 6, -7, -(2**63)  # the first bad at [1, 4, 7]
    table, check = tc
    for fold in (True, False):
        got = []
        with pytest.raises(ix.BadIndex) as e:
            sc.scatter_indexed(gpu, data_of(x), data_of(u), index_of(i), check, table, reduce, got.append, fold=fold)
        assert e.value.position == (1, 4, 7) and e.value.value == -(2**63) and got == []
        folded(gpu, fold)


def test_scatter_elements_opset9_no_negatives_folded(gpu, rng):
    """Scatter-9's check (0 .. d-1, no wrap) in the line kernel."""
    x = random_array(rng, (300, 5), "<f4")
    u = random_array(rng, (300, 3), "<f4")
    i = rng.integers(0, 5, u.shape).astype(np.int64)
    table, check = indexing.scatter_elements("SE", x.shape, i.shape, u.shape, 1)
    from dataclasses import replace

    check = replace(check, mode=ix.NONNEG)
    reduce = sc.Reduce("add", 2, False)
    out = bytearray()
    sc.scatter_indexed(gpu, data_of(x), data_of(u), index_of(i), check, table, reduce, out.extend)
    assert bytes(out) == onnx_run("ScatterElements", {"x": x, "i": i, "u": u}, axis=1, reduction="add").tobytes()
    folded(gpu, True)
    i[7, 1] = -1
    with pytest.raises(ix.BadIndex, match=r"indices\[7, 1\] = -1 is out of range \[0, 4\]"):
        sc.scatter_indexed(gpu, data_of(x), data_of(u), index_of(i), check, table, reduce, out.extend)


def test_int32_and_fortran_indices_keep_the_check_pass(gpu, rng):
    x = random_array(rng, (300, 5), "<f4")
    u = random_array(rng, (300, 3), "<f4")
    i = rng.integers(-5, 5, u.shape).astype(np.int32)
    tc = indexing.scatter_elements("SE", x.shape, i.shape, u.shape, 1)
    want = onnx_run("ScatterElements", {"x": x, "i": i.astype(np.int64), "u": u}, axis=1, reduction="max")
    assert scattered(gpu, tc, x, i, u, sc.Reduce("max", 2, False)) == want.tobytes()
    folded(gpu, False)


CLS = {"u": 0, "i": 1, "f": 2, "b": 3}


@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
@pytest.mark.parametrize("dtype", ["<f4", "<i4", "<f2", "u1", ">f4"])
@pytest.mark.parametrize("lines", [300, 5])  # the line kernel, the rounds
def test_scatter_elements_reductions_match_reference(gpu, rng, reduction, dtype, lines):
    x = random_array(rng, (lines, 7), dtype)
    u = random_array(rng, (lines, 11), dtype)
    i = rng.integers(-7, 7, (lines, 11)).astype(np.int64)
    want = little(onnx_run("ScatterElements", {"x": native(x), "i": i, "u": native(u)}, axis=1, reduction=reduction))
    tc = indexing.scatter_elements("SE", x.shape, i.shape, u.shape, 1)
    reduce = sc.Reduce(reduction, CLS[x.dtype.kind], False)
    assert scattered(gpu, tc, x, i, u, reduce) == want
    path(gpu)
    assert scattered(gpu, tc, x, i, u, reduce, mapped=False) == want


def test_scatter_column_major_data_and_zero_updates(gpu, rng):
    x = random_array(rng, (6, 5), "<f8")
    f = np.asfortranarray(x)
    i = np.zeros((6, 0), np.int64)
    tc = indexing.scatter_elements("SE", x.shape, i.shape, i.shape, 1)
    table, check = tc
    out = bytearray()
    sc.scatter_indexed(gpu, ix.Data(MemoryBytes(f.T.copy()), x.shape, 64, 0, (1, 6)), data_of(np.zeros((6, 0))),
                       index_of(i), check, table, sc.Reduce("add", 2, False), out.extend)
    assert bytes(out) == x.tobytes()
    path(gpu)
    e = np.zeros((0, 5), np.float64)
    tc = indexing.scatter_elements("SE", e.shape, e.shape, e.shape, 1)
    assert scattered(gpu, tc, e, e.astype(np.int64), e, sc.Reduce("add", 2, False)) == b""


# ------------------------------------------------------------------ Gather by whole slabs (gpu/render/slices.py)


def slabs(gpu) -> bool:
    return gpu.cache[ix.LAST].get("slabs", 0) == 1


@pytest.mark.parametrize("dtype", WIDTHS)
@pytest.mark.parametrize("inner", [(16,), (2, 8), (5,), (3, 33)])
def test_gather_slabs_every_width(gpu, rng, dtype, inner, monkeypatch):
    """A slab of whole 16-byte vectors is copied by the slab kernel (gpu/render/slices.py); any
    other keeps the lookups kernel where gather_words answers elements (its
    other answer: tests/gpu/test_schedule_answers.py) -- the bytes are numpy's either way."""
    monkeypatch.setenv("ONNXOP_SCHEDULE", "gather_words=elements")
    x = random_array(rng, (3, 7) + inner, dtype)
    i = rng.integers(-7, 7, (2, 5)).astype(np.int64)
    got = gathered(gpu, indexing.gather("Gather", x.shape, i.shape, 1), x, i)
    bits = 8 if x.dtype == np.bool_ else x.dtype.itemsize * 8
    assert slabs(gpu) == ((int(np.prod(inner)) * bits) % 128 == 0), (dtype, inner)
    assert gpu.cache[ix.LAST].get("slices", 0) == 0  # Gather takes the word-slices kernel only if measured faster
    path(gpu)
    assert got == little(np.take(x, i, axis=1))
    assert gathered(gpu, indexing.gather("Gather", x.shape, i.shape, 1), x, i, slice_copy=False) == got
    assert not slabs(gpu)


def test_slabs_many_invocations_big_endian_indices_rank_8(gpu, rng):
    x = random_array(rng, (50, 3, 100), "<f4")  # 300 floats a slab: 75 vectors, across many invocations
    i = rng.integers(-50, 50, (40,)).astype(">i8")
    assert gathered(gpu, indexing.gather("Gather", x.shape, i.shape, 0), x, i) == np.take(x, native(i), 0).tobytes()
    assert slabs(gpu)
    y = random_array(rng, (2, 3, 1, 2, 3, 2, 2, 4), "<f8")  # rank 8, slabs of 2 vectors
    j = rng.integers(-3, 3, (2, 2)).astype(np.int64)
    assert gathered(gpu, indexing.gather("Gather", y.shape, j.shape, 4), y, j) == np.take(y, j, 4).tobytes()
    assert slabs(gpu)
    z = random_array(rng, (6, 5, 8), "<f4")  # GatherND slices of 8 floats: slabs too
    t = np.stack([rng.integers(-6, 6, 9), rng.integers(-5, 5, 9)], -1).astype(np.int64)
    assert gathered(gpu, indexing.gather_nd("GND", z.shape, t.shape, 0), z, t) == onnx_run(
        "GatherND", {"x": z, "i": t}).tobytes()
    assert slabs(gpu)


@pytest.mark.parametrize("bad", BADS)
def test_slabs_out_of_range_first_named_nothing_written(gpu, rng, bad):
    x = random_array(rng, (40, 8), "<f4")
    i = rng.integers(-40, 40, (300,)).astype(np.int64)
    value = {"d": 40, "-d-1": -41}.get(bad, bad)
    i[250], i[77], i[299] = value, value, 2**40
    table, check = indexing.gather("Gather", x.shape, i.shape, 0)
    got = []
    with pytest.raises(ix.BadIndex) as e:
        ix.gather_indexed(gpu, data_of(x), index_of(i), check, table, got.append)
    assert e.value.position == (77,) and e.value.value == value and got == []
    assert f"indices[77] = {value} is out of range [-40, 39]" in str(e.value)
    assert slabs(gpu)
