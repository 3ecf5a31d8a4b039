"""GatherElements' kernels as one property (the runs kernel,
gpu/render/rows.py's ElementsRows through gpu/indexed_variants.py; the element
kernel, indexed_gather.wgsl): byte for byte against onnx.reference where the
rows of every width, numpy's take_along_axis (the same rule) for the
other structures (onnx.reference's reads some 2-D shapes wrong), on random bits, the output poisoned first.
Random and fixed structures (ranks 1 to 8 on every axis, odd sizes, rows of
16 and more, shorter, counts not whole runs or vectors, the extreme indices
-d and d - 1, indices in either byte order; column-major data, which the
table's strides read, and column-major indices and big-endian data, which
keep the element kernel; zero sizes) x every schedule the host can take
(the runs kernel for 32- and 64-bit elements; forced: the element kernel,
``slice_copy=False``, and bands of 256 bytes, which keep it) x every element
width (bool to complex128). One tally asserts each case ran the kernel meant
for it and that each came up. Bad indices are refused by the first
position, nothing written.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import random_array
from properties import Tally, data_of, little, native, reference
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.ops import indexing

WIDTHS = ["bool", "u1", "<i2", "<f2", "<f4", "<i4", "<f8", "<i8", "<c16"]
ROWS = ("<f4", "<i4", "<f8", "<i8")  # 32 and 64 bits: the runs kernel's
VARIANTS = {"chosen": (True, None), "elements": (False, None), "bands": (True, 256)}
LONG_AND_SHORT = (((3, 64), (3, 64)), ((5, 16), (5, 16)), ((2, 33), (2, 47)), ((7, 3), (7, 5)), ((1, 1), (1, 1)),
                  ((300,), (4097,)))


def shorter(rng, shape: tuple, axis: int) -> tuple:
    return tuple(int(rng.integers(1, s + 1)) if k != axis else int(rng.integers(1, 30)) for k, s in enumerate(shape))


def structures(rng, dtype: str):
    """(data shape, index shape, axis, layout, variants, what): rows of
    (21, 37) (random but for float32 and float64) on both axes for every
    width; for float32 and float64 every
    rank 1-8 on axes 0, last and one drawn, rows long and short and
    big-endian data; big-endian indices (float32); column-major data and
    indices (float64); bands
    (float32 and a byte); zero sizes (float32)."""
    every = dtype in ("<f4", "<f8")
    shape = (21, 37) if every else tuple(int(d) for d in rng.integers(1, 40, 2))  # random for the others
    for axis in (0, 1):
        yield shape, tuple(s - 2 * (k == axis and s > 2) for k, s in enumerate(shape)), axis, "C", \
            ("chosen", "elements"), "rows"
    for rank in range(1, 9) if every else ():
        shape = tuple(int(v) for v in rng.integers(2, 5, rank - 1)) + (int(rng.integers(1, 40)),)
        for axis in sorted({0, rank - 1, int(rng.integers(0, rank))}) if every else [rank - 1]:
            yield shape, shorter(rng, shape, axis), axis, "C", ("chosen", "elements"), f"rank {rank}"
    for shape, ishape in LONG_AND_SHORT * every:
        yield shape, ishape, len(shape) - 1, "C", ("chosen", "elements"), "long and short rows"
    if dtype == "<f4":
        yield (9, 23), (9, 20), 1, ">i", ("chosen", "elements"), "big-endian indices"
    if dtype == "<f8":
        yield (9, 23), (9, 20), 1, "F", ("chosen",), "Fortran data"
    if dtype == "<f8":
        yield (9, 23), (9, 20), 1, "Fi", ("chosen",), "Fortran indices"
    if every:
        yield (9, 23), (9, 20), 1, ">", ("chosen", "elements"), "big-endian data"
    if dtype in ("<f4", "u1"):
        yield (9, 23), (9, 20), 1, "C", ("bands",), "bands"
    if dtype == "<f4":
        for shape, ishape, axis in (((4, 5), (0, 5), 1), ((4, 5), (4, 0), 1), ((0, 5), (0, 3), 1),
                                    ((4, 5), (0, 5), 0)):
            yield shape, ishape, axis, "C", ("chosen",), "zero size"


def meant(dtype: str, ishape: tuple, layout: str, variant: str) -> str:
    if not np.prod(ishape):
        return "none"
    rows = dtype in ROWS and layout in ("C", ">i", "F") and variant == "chosen"
    return "rows" if rows else "elements"


def gather_elements(gpu, data: ix.Data, i: np.ndarray, axis: int, fortran: bool = False,
                    variant: str = "chosen") -> tuple[bytes, str]:
    """The output's bytes and the kernel that ran: "rows", "elements" or "none"."""
    slice_copy, binding = VARIANTS[variant]
    istrides = tuple(s // i.itemsize for s in i.strides) if fortran else None
    table, check = indexing.gather_elements("GE", data.shape, i.shape, axis, data.strides, istrides)
    raw = i.ravel(order="F") if fortran else np.ascontiguousarray(i)
    index = ix.Index(MemoryBytes(raw), i.shape, True, i.dtype.byteorder == ">", fortran)
    out = bytearray()
    n = ix.gather_indexed(gpu, data, index, check, table, out.extend, poison=0xA5, slice_copy=slice_copy,
                          binding_bytes=binding)
    assert n == len(out)
    return bytes(out), "rows" if gpu.cache[ix.LAST].get("rows") else "elements" if n else "none"


def expected(x: np.ndarray, i: np.ndarray, axis: int, onnx: bool) -> bytes:
    """onnx.reference's bytes (``onnx``: its GatherElements special-cases 2-D
    shapes it reads wrong for some, (3, 64) by (3, 64) on axis 1), else numpy's."""
    x, i = native(x), i.astype("<i8")
    if onnx:
        return little(reference("GatherElements", x, i, axis=axis))
    part = x[tuple(slice(0, n) if k != axis else slice(None) for k, n in enumerate(i.shape))]
    d = x.shape[axis]
    return little(np.take_along_axis(part, np.where(i < 0, i + d, i), axis))


@pytest.mark.parametrize("dtype", WIDTHS)
def test_gather_elements_matches_the_reference(gpu, rng, dtype):
    tally = Tally()
    for k, (shape, ishape, axis, layout, variants, what) in enumerate(structures(rng, dtype)):
        x = random_array(rng, shape, dtype)
        d = shape[axis]
        i = rng.integers(-d, d, ishape).astype(">i8" if layout == ">i" else "<i8") if d else np.zeros(ishape, "<i8")
        if i.size:
            i.reshape(-1)[0], i.reshape(-1)[-1] = -d, d - 1
        if layout == ">":
            x = x.astype(x.dtype.newbyteorder(">"))
        data = data_of(x)
        if layout == "F":  # column-major data: the table's strides
            f = np.asfortranarray(x)
            data = ix.Data(MemoryBytes(f.ravel(order="F")), f.shape, x.itemsize * 8, 0,
                           tuple(s // x.itemsize for s in f.strides))
        want = expected(x, i, axis, what == "rows")
        for variant in variants:
            got, ran = gather_elements(gpu, data, np.asfortranarray(i) if layout == "Fi" else i, axis,
                                       layout == "Fi", variant)
            label = f"case {k} ({what}): {shape} {dtype} {layout} by {ishape} on axis {axis}, {variant}"
            assert got == want, label
            tally.add(label, meant(dtype, ishape, layout, variant), ran)
    tally.check("elements", *(("rows",) if dtype in ROWS else ()), *(("none",) if dtype == "<f4" else ()))


def test_gather_elements_bad_refused_nothing_written(gpu, rng):
    """Bad indices in an adds-only run (rows 40 wide, runs of 16), at such a
    run's end and in a run across two rows, and at the last position, in
    either byte order, for 32 and 64 bits: the first named, nothing written."""
    for bad in (2**32 + 1, 2**32, 2**63 - 1, -(2**63), 40, -41):
        for where in ((1, 10), (2, 23), (3, 2)):
            for dtype in ("<f4", "<f8"):
                x = random_array(rng, (4, 40), dtype)
                for big in (False, True):
                    i = rng.integers(-40, 40, (4, 40)).astype(">i8" if big else "<i8")
                    i[where] = i[3, 39] = bad
                    table, check = indexing.gather_elements("GE", x.shape, i.shape, 1)
                    got = []
                    with pytest.raises(ix.BadIndex) as e:
                        ix.gather_indexed(gpu, data_of(x), ix.Index(MemoryBytes(i), i.shape, True, big), check,
                                          table, got.append)
                    assert gpu.cache[ix.LAST].get("rows"), (bad, where, dtype, big)
                    assert f"indices[{where[0]}, {where[1]}] = {bad} is out of range [-40, 39]" in str(e.value)
                    assert e.value.value == bad and got == []
