"""GatherND by pairs (gpu/indexed_variants.py, gpu/render/rows.py's NdRows) as one
property: byte for byte against onnx.reference (numpy's fancy indexing, the
same rule, for more than 1,000 tuples: the reference walks them in Python)
on random bits, the output poisoned first. Random and fixed structures
(index tensors of one to three leading axes, batch_dims 0 and 1, both
index byte orders, rows of 39 to 2,000 tuples, exactly one band) x every
schedule the host can take (forced: the tuples uploaded at once or a band
of 64 at a time through two buffers in turn, mapped or staged) x slices of
one and two words (a float, four bytes, a double, two ints). One tally
asserts each case ran the pairs kernel with the bands meant for it, and
that every band class came up. Bad indices in a late band
are refused by the first position, value and range, nothing written.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import random_array
from properties import Tally, reference
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.gpu import indexed_variants as iv
from onnxop_cli.ops import indexing

BAND = 64 * 16  # bytes: 64 tuples a band, the smallest (whole runs of whole vectors)
# (data dtype, slice tail): slices of one word and of two
WIDTHS = [("<f4", ()), ("u1", (4,)), ("<f8", ()), ("<i4", (2,))]
# schedule: (RAW_BAND, mapped)
VARIANTS = {"one upload": (8 << 20, None), "bands": (BAND, None), "bands staged": (BAND, False)}
UPLOADS = ("one upload", "bands", "bands staged")
CLASSES = ("one upload", "bands")


def tuples(rng, bounds, lead, dtype="<i8") -> np.ndarray:
    return np.stack([rng.integers(-d, d, lead) for d in bounds], axis=-1).astype(dtype)


def structures(rng, dtype: str, tail: tuple):
    """(data shape, index leading shape, batch_dims, index dtype, variants):
    the fixed ones of the replaced tests (seven bands, the last short, rows
    of 61 across runs and bands, in bands for every width, at once too for
    float32 and float64; for float32 batch_dims 1, big-endian tuples,
    exactly one band, rows of 2,000 and of 39), then a random one on an
    upload schedule in turn."""
    yield (13, 11) + tail, (7, 61), 0, "<i8", UPLOADS if dtype in ("<f4", "<f8") else UPLOADS[1:]
    if dtype == "<f4":
        yield (3, 9, 7) + tail, (3, 50), 1, "<i8", UPLOADS[:2]
        yield (13, 11) + tail, (300,), 0, ">i8", UPLOADS
        yield (13, 11) + tail, (64,), 0, "<i8", ("bands",)  # one band's bytes: uploaded at once
        yield (13, 11) + tail, (3, 2000), 0, "<i8", UPLOADS[:2]
        yield (13, 11) + tail, (2000, 39), 0, "<i8", UPLOADS[:1]
    k = WIDTHS.index((dtype, tail))
    b = k % 2
    lead = tuple(int(d) for d in rng.integers(1, 40 if b == 0 else 12, 1 + k % 3))
    data = tuple(int(d) for d in rng.integers(2, 9, 2 + b)) + tail
    yield data, lead if not b else data[:1] + lead[1:], b, ("<i8", ">i8")[k // 2 % 2], (UPLOADS[k % 3],)


def meant(lead: tuple) -> tuple[str, int]:
    """The class (bands or not) and the bands meant for these leading index
    dims on the RAW_BAND set already."""
    count, run = int(np.prod(lead)), iv.RUN
    bands = -(-count // max(run, iv.RAW_BAND // 16 // run * run)) if count * 16 > iv.RAW_BAND else 0
    return "bands" if bands else "one upload", bands


def run(gpu, x, i, b=0, **kw):
    table, check = indexing.gather_nd("GND", x.shape, i.shape, b)
    index = ix.Index(MemoryBytes(np.ascontiguousarray(i)), i.shape, True, i.dtype.byteorder == ">")
    out = bytearray()
    n = ix.gather_indexed(gpu, ix.Data(MemoryBytes(np.ascontiguousarray(x)), x.shape, x.dtype.itemsize * 8),
                          index, check, table, out.extend, poison=0xA5, **kw)
    assert n == len(out)
    return bytes(out), gpu.cache[ix.LAST]


def want(x: np.ndarray, i: np.ndarray, b: int) -> bytes:
    if i.size // 2 <= 1000:
        return reference("GatherND", x, i.astype("<i8"), batch_dims=b).tobytes()
    assert b == 0
    return x[tuple(np.moveaxis(i.astype("<i8"), -1, 0))].tobytes()


@pytest.mark.parametrize("dtype, tail", WIDTHS)
def test_gather_nd_pairs_match_the_reference(gpu, rng, monkeypatch, dtype, tail):
    tally = Tally()
    for k, (shape, lead, b, itype, variants) in enumerate(structures(rng, dtype, tail)):
        x = random_array(rng, shape, dtype)
        i = tuples(rng, shape[b:b + 2], lead, itype)
        expected = want(x, i, b)
        for variant in variants:
            raw_band, mapped = VARIANTS[variant]
            monkeypatch.setattr(iv, "RAW_BAND", raw_band)
            kind, bands = meant(lead)
            got, counts = run(gpu, x, i, b, mapped=mapped)
            label = f"case {k}: {shape} {dtype} by {lead} {itype} batch_dims {b}, {variant}"
            assert got == expected, label
            ran = "none" if counts.get("nd pairs") != 1 else "bands" if counts.get("nd bands") else "one upload"
            tally.add(label, kind, ran)
            assert counts.get("nd bands", 0) == bands, (label, counts)
    tally.check(*CLASSES if dtype in ("<f4", "<f8") else CLASSES[1:2])


def test_bad_index_in_a_late_band_named(gpu, rng, monkeypatch):
    """Bad indices (2**32 + 1, -(d + 1), d) at tuples 300 (band 4) and 400
    (band 6): the first named by position, value and range, nothing written."""
    monkeypatch.setattr(iv, "RAW_BAND", BAND)
    for bad, which in ((2**32 + 1, 0), (-12, 1), (13, 0)):
        x = random_array(rng, (13, 11), "<f4")
        i = tuples(rng, (13, 11), (7, 61))
        i.reshape(-1, 2)[400, 1 - which] = 2**32
        i.reshape(-1, 2)[300, which] = bad
        table, check = indexing.gather_nd("GND", x.shape, i.shape, 0)
        got = []
        with pytest.raises(ix.BadIndex) as e:
            ix.gather_indexed(gpu, ix.Data(MemoryBytes(x), x.shape, 32), ix.Index(MemoryBytes(i), i.shape), check,
                              table, got.append)
        assert not got and gpu.cache[ix.LAST].get("nd bands") == 7, bad
        assert e.value.position == (300 // 61, 300 % 61, which) and e.value.value == bad
        d = x.shape[which]
        assert f"out of range [-{d}, {d - 1}]" in str(e.value)


def test_plan_orders_only_row_major_tuples():
    """No GPU: row-major tuples are in slice order; tuples with gaps between rows are not."""
    from onnxop_cli.gpu.render import slices

    table, check = indexing.gather_nd("GND", (6, 8), (5, 4, 2), 0)
    assert iv.nd_pairs(slices.plan(table, 32, check.bounds), check).ordered
    table, check = indexing.gather_nd("GND", (6, 8), (5, 4, 2), 0, None, (16, 2, 1))
    assert not iv.nd_pairs(slices.plan(table, 32, check.bounds), check).ordered
