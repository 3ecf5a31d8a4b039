"""ReverseSequence's kernels as one property (gpu/indexed_variants.py,
gpu/render/reverse.py; the element kernel, indexed_gather.wgsl): byte
for byte against onnx.reference (numpy's reversal for packed 2- and 4-bit
codes, which no ONNX type has) on random bits, the output poisoned first.
Random and fixed structures (ranks 2 to 8, odd sizes, either axis order,
blocks of one word where an invocation's 16 words span several batch
entries or start mid-entry, inner blocks that are not whole words, lengths
of 0 and the whole time axis, in either byte order; big-endian and
column-major data; zero sizes) x every schedule the host can take (the
blocks kernel where the plan allows; forced: the element kernel,
``slice_copy=False``, and bands of 512 bytes, which keep it) x every element
width (2 bits to 128). One tally asserts each case ran the kernel meant for
it (blocks, elements, or none for an empty output) and that each came up.
Bad lengths are refused by the first position, nothing written.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import random_array
from properties import Tally, data_of, little, native, reference
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.ops import indexing

WIDTHS = ["2", "4", "bool", "u1", "<i2", "<u2", "<f2", "<f4", "<i4", "<f8", "<i8", "<c16"]  # "2", "4": bits, packed
# schedule: slice_copy, binding_bytes
VARIANTS = {"chosen": (True, None), "elements": (False, None), "bands": (True, 512)}
BOUNDARY = ((37, 13), (5, 3), (3, 1), (1, 600), (600, 1))  # blocks of one word, 16 a invocation


def bits_of(dtype: str) -> int:
    return int(dtype) if dtype.isdigit() else 8 if dtype == "bool" else np.dtype(dtype).itemsize * 8


def structures(rng, dtype: str):
    """(shape, batch_axis, layout, lengths' dtype, variants, what): inner
    blocks of whole words for every width in both axis orders (random leading
    dims but for float32; batch axis 0 for the packed codes, none for
    uint16); for float32 every rank 2-8 and the invocation boundaries; blocks not whole words (one narrow element);
    big-endian data (16, 32, 64 and 128 bits); for float32 big-endian
    lengths, column-major data and zero sizes; bands (float32, a byte and
    float64)."""
    bits = bits_of(dtype)
    inner = 3 if bits >= 32 else 12 if bits >= 8 else 3 * 32 // bits
    lead = (7, 5) if dtype == "<f4" else tuple(int(d) for d in rng.integers(1, 10, 2))  # random for the others
    for axis in (0, 1)[:1 if dtype.isdigit() else 2] * (dtype != "<u2"):  # (<u2: part words only, as replaced)
        yield lead + (inner,), axis, "C", "<i8", ("chosen", "elements"), "whole words"
    for rank in range(2, 9) if dtype == "<f4" else ():
        shape = tuple(int(v) for v in rng.integers(1, 4, rank))
        shape = (shape[0] + 2, shape[1] + 4) + shape[2:-1] + (shape[-1] * max(1, 32 // bits),) * (rank > 2)
        for axis in (0, 1):
            yield shape, axis, "C", "<i8", ("chosen", "elements"), f"rank {rank}"
    for shape in BOUNDARY * (dtype == "<f4"):
        for axis in (0, 1):
            yield shape, axis, "C", "<i8", ("chosen", "elements"), "invocation boundary"
    if bits in (8, 16):
        yield (6, 11), 0, "C", "<i8", ("chosen", "elements"), "part words"
    if dtype == "<f4":
        yield (6, 9, 2), 0, "C", ">i8", ("chosen", "elements"), "big-endian lengths"
    if dtype in ("<f4", "<i2", "<f8", "<c16"):
        yield (6, 9, 2), 0, ">", ">i8", ("chosen", "elements"), "big-endian"
    if dtype == "<f4":
        yield (6, 9, 3), 0, "F", "<i8", ("chosen",), "Fortran"
    if dtype in ("<f4", "u1", "<f8"):
        yield (40, 33 * 32 // bits), 0, "C", "<i8", ("bands",), "bands"
    if dtype == "<f4":
        for shape, axis in (((0, 5, 2), 0), ((4, 0, 2), 0), ((4, 5, 0), 0), ((0, 3), 1)):
            yield shape, axis, "C", "<i8", ("chosen",), "zero size"


def data(rng, dtype: str, shape: tuple, layout: str):
    """(array of values, ix.Data the kernels read): packed codes for 2 and 4 bits."""
    if dtype.isdigit():
        bits = int(dtype)
        codes = rng.integers(0, 1 << bits, shape).astype(np.uint8)
        per = 8 // bits
        flat = codes.reshape(-1)
        packed = np.zeros(flat.size // per, np.uint8)
        for j in range(per):
            packed |= flat[j::per] << (j * bits)
        return codes, data_of(packed, bits, shape)
    x = random_array(rng, shape, dtype)
    if layout == ">":
        x = x.astype(x.dtype.newbyteorder(">"))
    if layout == "F":
        f = np.asfortranarray(x)
        return x, ix.Data(MemoryBytes(f.ravel(order="F")), x.shape, bits_of(dtype), 0,
                          tuple(s // x.itemsize for s in f.strides))
    return x, data_of(x)


def meant(shape, dtype: str, layout: str, variant: str) -> str:
    if not np.prod(shape):
        return "none"
    whole = int(np.prod(shape[2:])) * bits_of(dtype) % 32 == 0
    return "blocks" if whole and layout == "C" and variant == "chosen" else "elements"


def reverse(gpu, data: ix.Data, lens: np.ndarray, batch_axis: int, variant: str = "chosen") -> tuple[bytes, str]:
    """The output's bytes and the kernel that ran: "blocks", "elements" or "none"."""
    slice_copy, binding = VARIANTS[variant]
    table, check = indexing.reverse_sequence("RS", data.shape, lens.shape, batch_axis, 1 - batch_axis, data.strides)
    out = bytearray()
    index = ix.Index(MemoryBytes(np.ascontiguousarray(lens)), lens.shape, True, lens.dtype.byteorder == ">")
    n = ix.gather_indexed(gpu, data, index, check, table, out.extend, poison=0xA5, slice_copy=slice_copy,
                          binding_bytes=binding)
    assert n == len(out)
    return bytes(out), "blocks" if gpu.cache[ix.LAST].get("runs") else "elements" if n else "none"


def numpy_reverse(x: np.ndarray, lens, batch_axis: int) -> np.ndarray:
    """The reversal on the host (time is the other of axes 0, 1), for the packed codes."""
    y = x.copy()
    for b, n in enumerate(int(v) for v in lens):
        if batch_axis == 0:
            y[b, :n] = x[b, :n][::-1]
        else:
            y[:n, b] = x[:n, b][::-1]
    return y


def expected(x: np.ndarray, lens: np.ndarray, batch_axis: int, dtype: str) -> bytes:
    if dtype.isdigit():
        bits, per = int(dtype), 8 // int(dtype)
        y = numpy_reverse(x, lens, batch_axis).reshape(-1, per).astype(np.uint8)
        return (y << (np.arange(per) * bits).astype(np.uint8)).sum(axis=1, dtype=np.uint8).tobytes()
    if not x.size:
        return b""
    want = reference("ReverseSequence", native(x), lens.astype("<i8"), batch_axis=batch_axis,
                     time_axis=1 - batch_axis)
    return little(np.ascontiguousarray(want))


@pytest.mark.parametrize("dtype", WIDTHS)
def test_reverse_sequence_matches_the_reference(gpu, rng, dtype):
    tally = Tally()
    for k, (shape, axis, layout, ltype, variants, what) in enumerate(structures(rng, dtype)):
        x, d = data(rng, dtype, shape, layout)
        steps = shape[1 - axis]
        lens = rng.integers(0, steps + 1, (shape[axis],)).astype(ltype)
        if lens.size > 1:
            lens[0], lens[-1] = steps, 0  # one whole reversal, one none
        want = expected(x, lens, axis, dtype)
        for variant in variants:
            got, ran = reverse(gpu, d, lens, axis, variant)
            label = f"case {k} ({what}): {shape} {dtype} {layout}, batch axis {axis}, {ltype} lengths, {variant}"
            assert got == want, label
            tally.add(label, meant(shape, dtype, layout, variant), ran)
    tally.check("elements", *(("blocks",) if dtype != "<u2" else ()), *(("none",) if dtype == "<f4" else ()))


def test_rank_1_refused():
    with pytest.raises(ix.OpError, match="rank 2 or more"):
        indexing.reverse_sequence("RS", (5,), (5,), 0, 1)


def test_bad_lengths_refused_nothing_written(gpu, rng):
    """Negative, the time axis + 1, 2**32 + 1, 2**32, int64's extremes, in
    either byte order and axis order, at positions 23 and 27: the first named
    on the blocks kernel, nothing written."""
    for bad in (-1, 41, 2**32 + 1, 2**32, 2**63 - 1, -(2**63)):
        for batch_axis in (0, 1):
            x = random_array(rng, (30, 40) if batch_axis == 0 else (40, 30), "<f4")
            for big in (False, True):
                lens = rng.integers(0, 41, (30,)).astype(">i8" if big else "<i8")
                lens[23] = lens[27] = bad
                table, check = indexing.reverse_sequence("RS", x.shape, lens.shape, batch_axis, 1 - batch_axis)
                got = []
                with pytest.raises(ix.BadIndex) as e:
                    ix.gather_indexed(gpu, data_of(x), ix.Index(MemoryBytes(lens), lens.shape, True, big), check,
                                      table, got.append)
                assert gpu.cache[ix.LAST].get("runs"), (bad, batch_axis, big)
                assert f"sequence_lens[23] = {bad} is out of range [0, 40]" in str(e.value) and e.value.value == bad
                assert got == []
