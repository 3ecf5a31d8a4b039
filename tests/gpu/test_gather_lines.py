"""Gather along lines (gpu/render/lines.py, gpu/indexed_variants.py): a
Gather whose index axes come last before a slice of one or two words, and
Compress along an inner axis, which runs as one. Byte for byte against
onnx.reference (numpy for packed 4-bit) on random bits, the output
poisoned first; every call asserts whether the lines kernel ran
(``gpu.cache[ix.LAST]["lines"]``) and whether indices.wgsl checked the
indices first (``check passes``: the fused path checks them in the kernel).
Lines of 1 .. 40 units (shorter than an invocation's 16 words, crossing
line ends mid-invocation, not multiples of 4, so the vector index loads
start mid-vector), outer ranks 0 .. 3, 2-D indices, int32 and int64 and
big-endian indices, negatives wrapped, several bands, a grid of more than
``max_groups_per_dim`` rows; bad indices (2**32 + 1, -(d + 1), d, -1
without negatives) refused by the first position, with nothing written.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from conftest import random_array
from tensor_refs import reference, same
from onnxop_cli import compress
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.ops import indexing

POISON = 0xA5


def gather(gpu, x: np.ndarray, i: np.ndarray, axis: int, lines: bool = True, checks: int = 0,
           check_mode: int | None = None, **kw) -> bytes:
    """Gather on the device, asserting whether the lines kernel ran and how many index check passes."""
    table, check = indexing.gather("Gather", x.shape, i.shape, axis)
    if check_mode is not None:
        check = replace(check, mode=check_mode)
    xs = np.ascontiguousarray(x)
    ic = np.ascontiguousarray(i)
    data = ix.Data(MemoryBytes(xs), x.shape, xs.dtype.itemsize * 8)
    index = ix.Index(MemoryBytes(ic), i.shape, ic.dtype.itemsize == 8, ic.dtype.byteorder == ">")
    out = bytearray()
    n = ix.gather_indexed(gpu, data, index, check, table, out.extend, poison=POISON, **kw)
    assert n == len(out)
    counts = gpu.cache[ix.LAST]
    assert bool(counts.get("lines")) == lines, counts
    assert counts["check passes"] == checks, counts
    return bytes(out)


def want(x: np.ndarray, i: np.ndarray, axis: int) -> bytes:
    y = reference("Gather", 13, [x, i.astype(i.dtype.newbyteorder("="))], {"axis": axis})[0]
    return np.ascontiguousarray(y.astype(y.dtype.newbyteorder("<"))).tobytes()


@pytest.mark.parametrize("fuse", [True, False])
@pytest.mark.parametrize("idx", ["<i4", "<i8", ">i4", ">i8"])
def test_lines_of_every_length(gpu, rng, fuse, idx):
    """One-word units (float32) along the last axis, lines of 1 .. 40."""
    x = random_array(rng, (7, 37), "<f4")
    for m in (1, 3, 4, 5, 13, 16, 17, 33, 40):
        i = rng.integers(-37, 37, m).astype(idx)
        assert gather(gpu, x, i, 1, fuse=fuse, checks=int(not fuse)) == want(x, i, 1), m


@pytest.mark.parametrize("dtype,slice_shape", [
    ("<f8", ()), ("<i8", ()), ("<c8", ()), ("<f4", (2,)), ("<f2", (2,)), ("<f2", (4,)), ("u1", (4,)), ("u1", (8,)),
    ("?", (4,)), ("<i2", (1, 2)),
])
@pytest.mark.parametrize("fuse", [True, False])
def test_units_of_one_and_two_words(gpu, rng, dtype, slice_shape, fuse):
    """Slices of one or two words, whatever the element: 8-byte elements,
    pairs of floats, 2-byte and 1-byte elements in whole words."""
    x = random_array(rng, (3, 4, 29) + slice_shape, dtype)
    for m in (2, 9, 31):
        i = rng.integers(-29, 29, m).astype(np.int64)
        assert gather(gpu, x, i, 2, fuse=fuse, checks=int(not fuse)) == want(x, i, 2), (dtype, m)


def test_outer_ranks_and_index_shapes(gpu, rng):
    """No leading axis (one line), one, three (line starts found by
    division), axes of size 1 among them, and 2-D indices (the index axes
    flattened row-major)."""
    for shape, axis in [((23,), 0), ((5, 1, 23), 2), ((2, 3, 5, 23), 3), ((3, 1, 4, 23, 1), 3)]:
        x = random_array(rng, shape, "<f4")
        for ishape in [(17,), (3, 7), (2, 1, 8)]:
            i = rng.integers(-23, 23, ishape).astype(np.int32)
            assert gather(gpu, x, i, axis) == want(x, i, axis), (shape, ishape)


def test_bands_and_a_wide_grid(gpu, rng):
    """Outputs in several bands (the indices checked by indices.wgsl first,
    read as int32 offsets), and a dispatch grid of more than one row."""
    x = random_array(rng, (40, 50), "<f8")
    i = rng.integers(-50, 50, 45).astype(np.int64)
    assert gather(gpu, x, i, 1, binding_bytes=1024, checks=1) == want(x, i, 1)
    y = random_array(rng, (300, 70), "<f4")
    i = rng.integers(-70, 70, 66).astype(np.int32)
    assert gather(gpu, y, i, 1, max_groups_per_dim=2) == want(y, i, 1)
    assert gather(gpu, y, i, 1, max_groups_per_dim=2, binding_bytes=4096, checks=1) == want(y, i, 1)


def test_packed_four_bit_in_words(gpu, rng):
    """4-bit elements, 8 to a slice: one-word units copied as words."""
    codes = rng.integers(0, 16, (6, 11, 8), dtype=np.uint8)
    packed = (codes.reshape(-1, 2)[:, 0] | (codes.reshape(-1, 2)[:, 1] << 4)).astype(np.uint8)
    i = rng.integers(-11, 11, 19).astype(np.int64)
    table, check = indexing.gather("Gather", codes.shape, i.shape, 1)
    out = bytearray()
    ix.gather_indexed(gpu, ix.Data(MemoryBytes(packed), codes.shape, 4),
                      ix.Index(MemoryBytes(i), i.shape, True), check, table, out.extend, poison=POISON)
    assert gpu.cache[ix.LAST].get("lines") == 1
    w = np.take(codes, np.where(i < 0, i + 11, i), axis=1).reshape(-1, 2)
    assert bytes(out) == (w[:, 0] | (w[:, 1] << 4)).astype(np.uint8).tobytes()


@pytest.mark.parametrize("fuse", [True, False])
@pytest.mark.parametrize("idx", ["<i4", "<i8", ">i8"])
def test_bad_indices(gpu, rng, fuse, idx):
    """The first bad position named, in a vector-loaded run and in a line's
    end, nothing written; without negatives (Gather-1) -1 is bad too."""
    x = random_array(rng, (9, 37), "<f4")
    values = [37, -38] + ([2**32 + 1, -(2**32) + 1] if idx != "<i4" else [2**31 - 1])
    for value in values:
        for at in ((5, 3), (5, 2)):
            i = rng.integers(-37, 37, (6, 23)).astype(idx)
            i[at[0], at[1]] = i[5, 20] = value
            out = []
            with pytest.raises(ix.BadIndex) as e:
                table, check = indexing.gather("Gather", x.shape, i.shape, 1)
                ix.gather_indexed(gpu, ix.Data(MemoryBytes(x), x.shape, 32),
                                  ix.Index(MemoryBytes(np.ascontiguousarray(i)), i.shape, i.dtype.itemsize == 8,
                                           i.dtype.byteorder == ">"), check, table, out.append, fuse=fuse)
            assert str(e.value) == (f"Gather: indices[{at[0]}, {at[1]}] = {value} is out of range [-37, 36] "
                                    "for axis 1 of size 37"), e.value
            assert out == []
    i = rng.integers(-37, 37, (4, 8)).astype(idx)  # lines of 32: every index loaded in its own lane only
    for at in range(8, 12):
        bad = i.copy()
        bad.reshape(-1)[at] = 37
        with pytest.raises(ix.BadIndex, match=rf"indices\[1, {at - 8}\] = 37 is out of range"):
            gather(gpu, x, bad, 1, fuse=fuse)
    i = np.array([3, 0, 36, -1, 4], idx)
    with pytest.raises(ix.BadIndex, match=r"indices\[3\] = -1 is out of range \[0, 36\]"):
        gather(gpu, x, i, 1, check_mode=ix.NONNEG, fuse=fuse)
    ok = np.array([3, 0, 36, 1, 4], idx)
    assert gather(gpu, x, ok, 1, check_mode=ix.NONNEG, fuse=fuse, checks=int(not fuse)) == want(x, ok, 1)


def test_other_tables_keep_their_kernels(gpu, rng):
    """Not lines: big-endian data, 16-byte slices (the vec4 slabs), slices
    of three words or of 2 bytes, GatherND's tables, a gathered axis with
    a slice that is not contiguous after it."""
    x = random_array(rng, (5, 7), ">f4")
    i = rng.integers(-7, 7, 6).astype(np.int64)
    table, check = indexing.gather("Gather", x.shape, i.shape, 1)
    out = bytearray()
    ix.gather_indexed(gpu, ix.Data(MemoryBytes(x), x.shape, 32, 4), ix.Index(MemoryBytes(i), i.shape),
                      check, table, out.extend)
    assert "lines" not in gpu.cache[ix.LAST]
    assert bytes(out) == want(x, i, 1)
    for shape in [(5, 7, 4), (5, 7, 3), (5, 7)]:
        dtype = "<f2" if len(shape) == 2 else "<f4"
        y = random_array(rng, shape, dtype)
        assert gather(gpu, y, i, 1, lines=False) == want(y, i, 1), shape
    z = random_array(rng, (5, 7), "<f4")
    pairs = rng.integers(0, 5, (6, 1)).astype(np.int64)
    table, check = indexing.gather_nd("GND", z.shape, pairs.shape, 0)
    ix.gather_indexed(gpu, ix.Data(MemoryBytes(z), z.shape, 32), ix.Index(MemoryBytes(pairs), pairs.shape),
                      check, table, bytearray().extend)
    assert "lines" not in gpu.cache[ix.LAST]


@pytest.mark.parametrize("dtype", ["<f4", "<f8", "<i8", "<u4"])
def test_compress_runs_as_lines(backend, gpu, rng, dtype):
    """Compress along the last axis (C and Fortran order) and an inner one
    with a pair of floats left, and flattened: the lines kernel, against
    onnx.reference; conditions shorter than the axis, kept counts not
    multiples of 4."""
    x = random_array(rng, (6, 45), dtype)
    y = random_array(rng, (4, 45, 2), "<f4")
    for data, axis in [(x, 1), (np.asfortranarray(x), 1), (x, -1), (y, 1), (x, None)]:
        length = data.size if axis is None else data.shape[axis]
        for n in (length, length - 3):
            cond = (np.arange(n) % 5 != 2) & (rng.integers(0, 4, n) != 0)
            cond[0] = True
            attrs = {} if axis is None else {"axis": axis}
            w = reference("Compress", 11, [data, cond], attrs)[0]
            gpu.cache.pop(ix.LAST, None)
            got = compress(data, condition=cond, axis=axis, backend=backend)
            assert same(got, w.astype(w.dtype.newbyteorder("<"))), (data.shape, axis, n)
            assert gpu.cache[ix.LAST].get("lines") == 1, (data.shape, axis, n)
