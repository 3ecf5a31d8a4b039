"""GatherND's kernels as properties, byte for byte against onnx.reference on
random bits (NaN payloads, -0.0): random structures (data ranks 1 to 8,
batch_dims 0-2, tuples of 1 to 3, slices of one element to more than an
invocation's 16 words, row- and column-major data, little- and big-endian
int64 tuples with negatives wrapped, one tuple to thousands) x every
kernel the host can choose (the whole-slice words kernel,
gpu/render/slices.py's words; the pairs of int64 in runs,
gpu/render/rows.py's NdRows, gpu/indexed_variants.py; the general lookups, forced by
``slice_copy=False``; the words kernel where pairs would run, forced by
``indexed_variants.ENABLED["nd pairs"]``; small bindings, windows and dispatch grids) x every
element width (bool to complex128, big-endian data). One tally per
property asserts each case ran the kernel meant for it. Bad indices
(2**32 + 1, -(d + 1), d, the int64 extremes, in range for another axis)
are refused by the first position, value and range on every kernel, with
nothing written.
"""

from __future__ import annotations

import dataclasses
import struct

import numpy as np
import pytest

from conftest import random_array
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.gpu import indexed_variants as iv
from onnxop_cli.gpu.render import slices
from onnxop_cli.ops import indexing
from properties import Tally, kernel_ran, little, native, reference

POISON = 0xA5
WIDTHS = ["bool", "u1", "<i2", "<f2", "<f4", "<i4", "<f8", "<i8", "<c16", ">f4"]
SLICES = [(), (1,), (3,), (4,), (3, 4), (2, 8), (17,), (5, 7), (17, 4), (5, 16)]  # one element to over 16 words
# forced variants: gather_indexed's keywords, or iv.ENABLED["nd pairs"] off ("words")
SMALL = 1024
MANY = ("u1", "<f4", "<c16")  # the widths of the cases of many tuples (a byte, a word, a vector)
VARIANTS = {"chosen": {}, "lookups": {"slice_copy": False}, "words": {}, "bindings": {"binding_bytes": SMALL},
            "windows": {"window_bytes": SMALL}, "grid": {"max_groups_per_dim": 2}}


def gather_nd(gpu, x: np.ndarray, i: np.ndarray, b: int, variant: str = "chosen", fortran: bool = False) -> bytes:
    item = x.dtype.itemsize
    ds = tuple(s // item for s in np.asfortranarray(x).strides) if fortran else None
    table, check = indexing.gather_nd("GND", x.shape, i.shape, b, ds, None)
    stored = np.asfortranarray(x).T.copy() if fortran else np.ascontiguousarray(x)
    swap = item if x.dtype.byteorder == ">" else 0
    data = ix.Data(MemoryBytes(stored), x.shape, item * 8, swap, *((ds,) if fortran else ()))
    index = ix.Index(MemoryBytes(np.ascontiguousarray(i)), i.shape, True, i.dtype.byteorder == ">")
    out = bytearray()
    iv.ENABLED["nd pairs"] = variant != "words"
    try:
        n = ix.gather_indexed(gpu, data, index, check, table, out.extend, poison=POISON, **VARIANTS[variant])
    finally:
        iv.ENABLED["nd pairs"] = True
    assert n == len(out)
    return bytes(out)


def tuples(rng, bounds, lead, dtype="<i8") -> np.ndarray:
    """Index tuples over ``bounds`` (negatives included) after ``lead`` axes."""
    cols = [rng.integers(-d, d, lead) for d in bounds]
    return np.stack(cols, axis=-1).astype(dtype).reshape(tuple(lead) + (len(bounds),))


def meant(variant: str, x: np.ndarray, lead: tuple, b: int, m: int, fortran: bool) -> str:
    """The kernel the host should choose for this structure and variant."""
    item = x.dtype.itemsize
    if variant == "lookups" or x.dtype.byteorder == ">":
        return "lookups"  # swapped data: the lookups kernel swaps it
    nbytes = item if fortran else int(np.prod(x.shape[b + m:])) * item  # column-major: a slice is one element
    if nbytes % 4:
        return "lookups"
    if nbytes % 16 == 0:
        return "slabs"  # whole vec4s, in any bands and windows: gpu/render/slices.py
    out = int(np.prod(x.shape[b + m:])) * item * (len(lead) and int(np.prod(lead)))
    if (variant == "windows" and x.nbytes > SMALL) or (variant == "bindings" and max(x.nbytes, out) > SMALL):
        return "lookups"  # the words and pairs kernels take one band of one window
    pairs = m == 2 and nbytes // 4 in (1, 2) and variant != "words"
    return "nd pairs" if pairs else "slices"


def dims(rng, low: int, high: int, n: int) -> tuple:
    return tuple(int(d) for d in rng.integers(low, high, n))


def structures(rng, dtype: str):
    """(data, indices, batch_dims, column-major, variants) for one width:
    every slice shape with tuples of one (also on the lookups) and of two
    (also on the words where pairs would run), batch_dims 0-2 in turn, with
    big-endian tuples on the kernel chosen (for tuples of two; all for
    float32); column-major data; tuples of three; hundreds and thousands of
    tuples over data larger than the small windows, on every variant (for
    MANY); then
    (float32) one tuple alone and data ranks 1 to 8 with every tuple length."""
    for k, (m, tail) in enumerate((m, t) for m in (1, 2) for t in SLICES):
        b = k % 3
        shape = dims(rng, 1, 6, b + m) + tail
        i = tuples(rng, shape[b:b + m], shape[:b] + dims(rng, 2, 46, 1))
        x = random_array(rng, shape, dtype)
        yield x, i, b, False, ("chosen", "lookups" if m == 1 else "words")
        if m == 2 or dtype[1:] == "f4":  # big-endian tuples (the pairs kernel swaps its own)
            yield x, i.astype(">i8"), b, False, ("chosen",)
    if dtype[0] != ">":
        for m in (1, 2):  # a column-major slice is one element (its axes are never contiguous)
            shape = dims(rng, 2, 7, 1) + (5, 4)
            yield random_array(rng, shape, dtype), tuples(rng, shape[:m], (9,)), 0, True, ("chosen",)
    shape = dims(rng, 1, 6, 3)
    yield random_array(rng, shape, dtype), tuples(rng, shape, (7,)), 0, False, ("chosen",)
    many = ((0, (), 700, VARIANTS), (1, (), 2000, ("chosen", "grid")), (0, (3,), 2000, VARIANTS),
            (0, (17,), 2000, VARIANTS))
    for b, tail, n, variants in many if dtype in MANY else ():
        shape = dims(rng, 16, 40, b + 2) + tail
        yield random_array(rng, shape, dtype), tuples(rng, shape[b:b + 2], shape[:b] + (n,)), b, False, tuple(variants)
    if dtype == "<f4":
        x = random_array(rng, (6, 8), dtype)
        yield x, tuples(rng, x.shape, ()), 0, False, ("chosen",)  # one tuple alone
        for rank in range(1, 9):
            shape = (2, 3, 1, 2, 3, 2, 1, 3)[:rank]
            for m in range(1, rank + 1):
                yield random_array(rng, shape, dtype), tuples(rng, shape[:m], (5, 1)), 0, False, ("chosen",)


@pytest.mark.parametrize("dtype", WIDTHS)
def test_gather_nd_matches_the_reference(gpu, rng, dtype):
    """Each structure on the chosen kernel and the variants structures() names
    (the lookups and the words only where they change the kernel)."""
    tally = Tally()
    for k, (x, i, b, fortran, variants) in enumerate(structures(rng, dtype)):
        want = little(reference("GatherND", native(x), native(i), batch_dims=b))
        first = meant("chosen", x, i.shape[:-1], b, i.shape[-1], fortran)
        for variant in variants:
            kernel = meant(variant, x, i.shape[:-1], b, i.shape[-1], fortran)
            if variant in ("lookups", "words") and kernel == first:
                continue  # forced onto the kernel chosen anyway
            label = f"case {k}: data {x.shape} {x.dtype.str}{' F' if fortran else ''}, indices {i.shape} " \
                    f"{i.dtype.str}, batch_dims {b}, {variant}"
            assert gather_nd(gpu, x, i, b, variant, fortran) == want, label
            tally.add(label, kernel, kernel_ran(gpu))
    item = np.dtype(dtype).itemsize
    kernels = ("slabs",) + ("slices",) * (item < 16) + ("nd pairs",) * (item <= 8)  # those its slices can take
    tally.check("lookups", *(() if dtype[0] == ">" else kernels))


# "d" on the second entry: in range for the first axis
BAD = [2**32 + 1, 2**32, -(2**32) + 1, 2**63 - 1, -(2**63), "d", "-d-1"]


def test_bad_indices_named_nothing_written(gpu, rng):
    """Every bad value on every kernel (words, vec4s, pairs, lookups), both byte
    orders, runs along one row and across rows: a second bad index later
    never the one named."""
    tally = Tally()
    kernels = {"slices": ((6, 5, 3), "<f4"), "nd pairs": ((6, 8), "<f4"), "lookups": ((6, 5, 3), "u1"),
               "slabs": ((6, 5, 4), "<f4")}
    for k, (bad, kernel) in enumerate((bad, kernel) for bad in BAD for kernel in kernels):
        shape, dtype = kernels[kernel]
        x = random_array(rng, shape, dtype)
        j = k // len(kernels)  # the bad value's number
        big, which = j % 2 == 1, (j + k) % 2
        i = tuples(rng, shape[:2], (4, 40) if (j // 2 + k) % 2 else (40, 4))  # runs along a row, across rows
        d, other = shape[which], shape[1 - which]
        value = {"d": d, "-d-1": -d - 1}.get(bad, bad)
        flat = i.reshape(-1, 2)
        flat[150, 1 - which] = other  # later: never the one named
        flat[61, which] = value
        if big:
            i = i.astype(">i8")
        table, check = indexing.gather_nd("GND", x.shape, i.shape, 0)
        got: list = []
        with pytest.raises(ix.BadIndex) as e:
            ix.gather_indexed(gpu, ix.Data(MemoryBytes(x), x.shape, x.dtype.itemsize * 8),
                              ix.Index(MemoryBytes(np.ascontiguousarray(i)), i.shape, True, big),
                              check, table, got.append)
        where = (*map(int, np.unravel_index(61, i.shape[:-1])), which)
        label = f"case {k}: {kernel} indices{list(where)} = {value}"
        assert (e.value.position, e.value.value, got) == (where, value, []), label
        assert f"indices[{', '.join(map(str, where))}] = {value} is out of range [-{d}, {d - 1}]" in str(e.value)
        tally.add(label, kernel, kernel_ran(gpu))
    tally.check(*kernels)


def test_zero_size(gpu, rng):
    """Slices of zero elements: no kernel, the indices still checked; no tuples: nothing."""
    x = random_array(rng, (4, 0, 3), "<f4")
    i = np.zeros((5, 1), np.int64)
    assert gather_nd(gpu, x, i, 0) == b""
    i[2, 0] = 4
    with pytest.raises(ix.BadIndex, match=r"indices\[2, 0\] = 4"):
        gather_nd(gpu, x, i, 0)
    y = random_array(rng, (4, 3), "<f4")
    assert gather_nd(gpu, y, np.zeros((0, 2), np.int64), 0) == b""


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


def test_plan_only_pairs_of_row_major_wrapped_indices():
    """The pairs plan refuses a tuple's two indices apart (even leading
    strides), odd leading index strides and other check modes."""
    x, i = (6, 8), (5, 4, 2)
    table, check = indexing.gather_nd("GND", x, i, 0)
    cut = slices.plan(table, 32, check.bounds)
    assert iv.nd_pairs(cut, check) is not None
    assert iv.nd_pairs(cut, dataclasses.replace(check, mode=check.mode + 1)) is None
    apart, _ = indexing.gather_nd("GND", x, i, 0, None, (8, 2, 40))
    assert iv.nd_pairs(slices.plan(apart, 32, check.bounds), check) is None
    odd = struct.pack("<4I", 4, 0, 3, 0)  # a leading axis of 4 tuples, 3 index elements apart
    assert iv.nd_pairs(slices.Slices(1, 2, cut.blob[:16] + odd + cut.blob[32:]), check) is None
