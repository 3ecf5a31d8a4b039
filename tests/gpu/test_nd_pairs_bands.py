"""GatherND pairs with the raw tuples uploaded a band at a time (gpu/nd_rows.py:
``uploads_own``, RAW_BAND shrunk here so small tensors take it), and the
kernel's runs of eight tuples read before their data words
(shaders/gather_nd_rows.wgsl's ``eight``). Byte for byte against
onnx.reference on random bits, the bands counted (``gpu.cache[ix.LAST]["nd
bands"]``: a silent single upload fails it), mapped and staged (the second
and later bands refill two buffers in turn); bad indices (2**32 + 1, -(d + 1),
d) in a late band and in two bands are refused by the first position,
value and range, nothing written; tuples of one band, and tuples not in
slice order (the plan), keep one upload.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from conftest import random_array
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.gpu import choose, nd_rows
from onnxop_cli.ops import indexing

BAND = 64 * 16  # bytes: 64 tuples a band, the smallest (whole runs of whole vectors)


def reference(x: np.ndarray, i: np.ndarray, b: int = 0) -> bytes:
    node = helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=b)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 0, None) for n in "xi"],
                              [helper.make_tensor_value_info("y", 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return ReferenceEvaluator(model).run(None, {"x": x, "i": i.astype("<i8")})[0].tobytes()


@pytest.fixture
def small_bands(monkeypatch):
    monkeypatch.setattr(nd_rows, "RAW_BAND", BAND)


def tuples(rng, bounds, lead, dtype="<i8") -> np.ndarray:
    return np.stack([rng.integers(-d, d, lead) for d in bounds], axis=-1).astype(dtype)


def run(gpu, x, i, b=0, **kw):
    table, check = indexing.gather_nd("GND", x.shape, i.shape, b)
    index = ix.Index(MemoryBytes(np.ascontiguousarray(i)), i.shape, True, i.dtype.byteorder == ">")
    out = bytearray()
    n = ix.gather_indexed(gpu, ix.Data(MemoryBytes(np.ascontiguousarray(x)), x.shape, x.dtype.itemsize * 8),
                          index, check, table, out.extend, poison=0xA5, **kw)
    assert n == len(out)
    counts = gpu.cache[ix.LAST]
    assert counts.get("nd pairs") == 1, counts
    return bytes(out), counts


@pytest.mark.parametrize("mapped", [None, False])
@pytest.mark.parametrize("dtype, tail", [("<f4", ()), ("u1", (4,)), ("<f8", ()), ("<i4", (2,))])
def test_bands_match_reference(gpu, rng, small_bands, mapped, dtype, tail):
    """7 x 61 tuples (427: seven bands, the last short; rows of 61 cross
    runs and bands), slices of one and two words."""
    x = random_array(rng, (13, 11) + tail, dtype)
    i = tuples(rng, (13, 11), (7, 61))
    got, counts = run(gpu, x, i, mapped=mapped)
    assert counts.get("nd bands") == 7
    assert got == reference(x, i)


def test_bands_batch_dims_big_endian(gpu, rng, small_bands):
    x = random_array(rng, (3, 9, 7), "<f4")
    i = tuples(rng, (9, 7), (3, 50))
    got, counts = run(gpu, x, i, 1)
    assert counts.get("nd bands") == 3 and got == reference(x, i, 1)
    big = tuples(rng, (13, 11), (300,), ">i8")
    y = random_array(rng, (13, 11), "<f4")
    got, counts = run(gpu, y, big)
    assert counts.get("nd bands") == 5 and got == reference(y, big)


def test_one_band_keeps_one_upload(gpu, rng, small_bands):
    x = random_array(rng, (13, 11), "<f4")
    i = tuples(rng, (13, 11), (64,))  # exactly one band's bytes: uploaded at once
    got, counts = run(gpu, x, i)
    assert "nd bands" not in counts and got == reference(x, i)


@pytest.mark.parametrize("bad, which", [(2**32 + 1, 0), (-12, 1), (13, 0)])
def test_bad_index_in_a_late_band_named(gpu, rng, small_bands, bad, which):
    """Bad indices at tuples 300 (band 4) and 400 (band 6): the first named,
    nothing written."""
    x = random_array(rng, (13, 11), "<f4")
    i = tuples(rng, (13, 11), (7, 61))
    i.reshape(-1, 2)[400, 1 - which] = 2**32
    i.reshape(-1, 2)[300, which] = bad
    table, check = indexing.gather_nd("GND", x.shape, i.shape, 0)
    got = []
    with pytest.raises(ix.BadIndex) as e:
        ix.gather_indexed(gpu, ix.Data(MemoryBytes(x), x.shape, 32), ix.Index(MemoryBytes(i), i.shape), check,
                          table, got.append)
    assert not got and gpu.cache[ix.LAST].get("nd bands") == 7
    assert e.value.position == (300 // 61, 300 % 61, which) and e.value.value == bad
    d = x.shape[which]
    assert f"out of range [-{d}, {d - 1}]" in str(e.value)


def test_plan_orders_only_row_major_tuples():
    """No GPU: row-major tuples are in slice order; tuples with gaps between rows are not."""
    from onnxop_cli.gpu import slices

    table, check = indexing.gather_nd("GND", (6, 8), (5, 4, 2), 0)
    assert nd_rows.plan(slices.plan(table, 32, check.bounds), check.mode).ordered
    table, check = indexing.gather_nd("GND", (6, 8), (5, 4, 2), 0, None, (16, 2, 1))
    assert not nd_rows.plan(slices.plan(table, 32, check.bounds), check.mode).ordered


@pytest.mark.parametrize("long_row", [nd_rows.LONG_ROW, 40])
def test_long_runs(gpu, rng, monkeypatch, long_row):
    """Runs of LONG_RUN slices: rows of 2000 (more slices than a workgroup's
    runs of RUN would cover; runs that cross a row's end among ones that do
    not), and, LONG_ROW shrunk, rows of 45 (every run crosses one) with
    slices of one and two words; one upload and bands (the ``nd_run``
    schedule question forced to "long": "short" keeps runs of 16)."""
    monkeypatch.setattr(nd_rows, "LONG_ROW", long_row)
    monkeypatch.setenv(choose.ENV_SCHEDULE, "nd_run=long")
    cases = [("<f4", (3, 2000))] + ([("<f4", (5, 45)), ("<f8", (5, 45)), ("<f8", (3, 2000))] if long_row == 40 else [])
    for dtype, lead in cases:
        x = random_array(rng, (13, 11), dtype)
        i = tuples(rng, (13, 11), lead)
        want = reference(x, i)
        got, counts = run(gpu, x, i)
        assert counts["nd run"] == 64 and "nd bands" not in counts and got == want, (dtype, lead)
        monkeypatch.setattr(nd_rows, "RAW_BAND", 128 * 16)
        got, counts = run(gpu, x, i)
        assert counts.get("nd bands") == -(-i.size // 2 // 128) and got == want, (dtype, lead)
        monkeypatch.setattr(nd_rows, "RAW_BAND", 16 << 20)
    x = random_array(rng, (13, 11), "<f4")
    i = tuples(rng, (13, 11), (2000, 39))
    got, counts = run(gpu, x, i)
    assert counts["nd run"] == 16 and got == reference(x, i)
    monkeypatch.setenv(choose.ENV_SCHEDULE, "nd_run=short")
    i = tuples(rng, (13, 11), (3, 2000))
    got, counts = run(gpu, x, i)
    assert counts["nd run"] == 16 and got == reference(x, i)
