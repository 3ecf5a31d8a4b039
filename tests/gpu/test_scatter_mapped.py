"""The scatter kernels' mapped transfers (gpu/indexed_buffers.py, gpu/scatter.py): on adapters that map
their storage buffers the data, updates, raw indices and result move through the kernel's own buffers
mapped, elsewhere staged. Every test asserts the path each transfer took and compares byte for byte with
onnx.reference on random bits, every element width, big-endian and column-major storage, reductions,
bands of lines; out-of-range indices and ScatterND duplicates are refused with nothing written, the
first bad one named whichever invocation finds it, folded into the kernel that applies them or in a
check pass of its own. The gathers': test_indexed_mapped.py."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import random_array
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.gpu import scatter as sc
from onnxop_cli.ops import indexing
from properties import BADS, CLS, WIDTHS, data_of, index_of, little, native, reference, transfer_path


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
    want = little(reference("ScatterND", x, i, u))
    tc = indexing.scatter_nd("SND", x.shape, i.shape, u.shape)
    assert scattered(gpu, tc, x, i, u, sc.Reduce()) == want
    transfer_path(gpu)
    assert scattered(gpu, tc, x, i, u, sc.Reduce(), mapped=False) == want
    transfer_path(gpu, mapped=False)
    assert scattered(gpu, tc, x, i, u, sc.Reduce(), slice_copy=False) == want  # the rounds
    transfer_path(gpu)


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
        want = little(reference("ScatterND", x, i, u))
        assert scattered(gpu, tc, x, i, u, sc.Reduce()) == want, dtype
        folded(gpu, True)
        transfer_path(gpu)
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
    want = little(reference("ScatterElements", x, i, u, axis=2, reduction=reduction))
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
    assert bytes(out) == reference("ScatterElements", x, i, u, axis=1, reduction="add").tobytes()
    folded(gpu, True)
    i[7, 1] = -1
    with pytest.raises(ix.BadIndex, match=r"indices\[7, 1\] = -1 is out of range \[0, 4\]"):
        sc.scatter_indexed(gpu, data_of(x), data_of(u), index_of(i), check, table, reduce, out.extend)


def test_int32_and_fortran_indices_keep_the_check_pass(gpu, rng):
    x = random_array(rng, (300, 5), "<f4")
    u = random_array(rng, (300, 3), "<f4")
    i = rng.integers(-5, 5, u.shape).astype(np.int32)
    tc = indexing.scatter_elements("SE", x.shape, i.shape, u.shape, 1)
    want = reference("ScatterElements", x, i.astype(np.int64), u, axis=1, reduction="max")
    assert scattered(gpu, tc, x, i, u, sc.Reduce("max", 2, False)) == want.tobytes()
    folded(gpu, False)


@pytest.mark.every_dtype  # a reduction's kernel is the type's own
@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
@pytest.mark.parametrize("dtype", ["<f4", "<i4", "<f2", "u1", ">f4"])
@pytest.mark.parametrize("lines", [300, 5])  # the line kernel, the rounds
def test_scatter_elements_reductions_match_reference(gpu, rng, reduction, dtype, lines):
    x = random_array(rng, (lines, 7), dtype)
    u = random_array(rng, (lines, 11), dtype)
    i = rng.integers(-7, 7, (lines, 11)).astype(np.int64)
    want = little(reference("ScatterElements", native(x), i, native(u), axis=1, reduction=reduction))
    tc = indexing.scatter_elements("SE", x.shape, i.shape, u.shape, 1)
    reduce = sc.Reduce(reduction, CLS[x.dtype.kind], False)
    assert scattered(gpu, tc, x, i, u, reduce) == want
    transfer_path(gpu)
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
    transfer_path(gpu)
    e = np.zeros((0, 5), np.float64)
    tc = indexing.scatter_elements("SE", e.shape, e.shape, e.shape, 1)
    assert scattered(gpu, tc, e, e.astype(np.int64), e, sc.Reduce("add", 2, False)) == b""
