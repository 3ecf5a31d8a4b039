"""The indexed kernels' mapped transfers (gpu/indexed_buffers.py): on adapters that map their storage buffers (``can_map``:
wgpu and Dawn on lavapipe) the data, the raw indices and the result move
through the kernel's own buffers mapped, elsewhere staged. Every test
asserts the path each transfer took (a silent fallback fails) and compares
byte for byte with numpy / onnx.reference on random bits, for every element
width, int64 and int32 indices, big-endian and column-major storage, ranks
1 to 8, several bands and data windows, zero sizes, Gather by whole slabs;
out-of-range indices (2**32 + 1, int64's extremes, +-d) are refused with
nothing written; the staged path (``mapped=False``) gives the same bytes.
The scatters' (and ScatterND's duplicates): test_scatter_mapped.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import random_array
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.gpu.buffers import can_map
from onnxop_cli.ops import indexing
from properties import BADS, WIDTHS, data_of, index_of, little, native, reference, transfer_path


def gathered(gpu, table_check, x, i, mapped=None, **kw) -> bytes:
    table, check = table_check
    out = bytearray()
    n = ix.gather_indexed(gpu, data_of(x), index_of(i), check, table, out.extend, mapped=mapped, poison=0xA5, **kw)
    assert n == len(out)
    return bytes(out)


# ------------------------------------------------------------------ gathers


@pytest.mark.parametrize("dtype", WIDTHS)
@pytest.mark.parametrize("itype", ["<i8", "<i4"])
def test_gather_every_width(gpu, rng, dtype, itype):
    x = random_array(rng, (7, 5, 3), dtype)
    i = rng.integers(-5, 5, (4, 6)).astype(itype)
    want = little(np.take(x, i, axis=1))
    got = gathered(gpu, indexing.gather("Gather", x.shape, i.shape, 1), x, i)
    transfer_path(gpu)
    assert got == want
    assert gathered(gpu, indexing.gather("Gather", x.shape, i.shape, 1), x, i, mapped=False) == want
    transfer_path(gpu, mapped=False)


@pytest.mark.parametrize("dtype", WIDTHS)
def test_gather_elements_every_width(gpu, rng, dtype):
    x = random_array(rng, (6, 9), dtype)
    i = rng.integers(-9, 9, (6, 13)).astype(np.int64)
    want = little(np.take_along_axis(x, np.where(i < 0, i + 9, i), axis=1))
    assert gathered(gpu, indexing.gather_elements("GE", x.shape, i.shape, 1), x, i) == want
    transfer_path(gpu)


@pytest.mark.parametrize("dtype", ["u1", "<f2", "<f4", "<f8"])
def test_gather_nd_slices_and_reverse_sequence(gpu, rng, dtype):
    x = random_array(rng, (6, 5, 8), dtype)
    i = np.stack([rng.integers(-6, 6, 11), rng.integers(-5, 5, 11)], axis=-1).astype(np.int64)
    assert gathered(gpu, indexing.gather_nd("GND", x.shape, i.shape, 0), x, i) == little(
        reference("GatherND", x, i))
    transfer_path(gpu)
    lens = rng.integers(0, 6, (5,)).astype(np.int64)
    want = reference("ReverseSequence", native(x), lens, batch_axis=1, time_axis=0)
    assert gathered(gpu, indexing.reverse_sequence("RS", x.shape, lens.shape, 1, 0), x, lens) == little(want)
    transfer_path(gpu)


@pytest.mark.parametrize("rank", range(1, 9))
def test_ranks(gpu, rng, rank):
    shape = tuple(int(v) for v in rng.integers(1, 4, rank))
    x = random_array(rng, shape, "<f4")
    axis = rank - 1
    i = rng.integers(-shape[axis], shape[axis], (3,)).astype(np.int64)
    assert gathered(gpu, indexing.gather("Gather", x.shape, i.shape, axis), x, i) == np.take(x, i, axis).tobytes()
    transfer_path(gpu)
    j = rng.integers(-shape[axis], shape[axis], shape).astype(np.int64)
    want = np.take_along_axis(x, np.where(j < 0, j + shape[axis], j), axis)
    assert gathered(gpu, indexing.gather_elements("GE", x.shape, j.shape, axis), x, j) == want.tobytes()
    transfer_path(gpu)


def test_big_endian_data_and_indices(gpu, rng):
    for dtype in (">f4", ">i2", ">f8", ">c16"):
        x = random_array(rng, (5, 7), dtype)
        i = rng.integers(-5, 5, (9,)).astype(">i8")
        assert gathered(gpu, indexing.gather("Gather", x.shape, i.shape, 0), x, i) == little(
            np.take(native(x), native(i), 0)), dtype
        transfer_path(gpu)


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
    transfer_path(gpu)
    assert bytes(out) == np.take(x, i, 1).tobytes()


def test_bands_windows_and_odd_lengths(gpu, rng):
    """Several bands (dst mapped and read again), data windows (several
    mapped uploads), byte data whose length is no whole word."""
    x = random_array(rng, (301, 7), "u1")
    i = rng.integers(-301, 301, (500,)).astype(np.int64)
    want = np.take(x, i, 0).tobytes()
    table_check = indexing.gather("Gather", x.shape, i.shape, 0)
    assert gathered(gpu, table_check, x, i, binding_bytes=256, window_bytes=512) == want
    transfer_path(gpu)
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
    transfer_path(gpu)
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
    assert gathered(gpu, indexing.gather_nd("GND", z.shape, t.shape, 0), z, t) == reference(
        "GatherND", z, t).tobytes()
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
