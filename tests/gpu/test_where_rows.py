"""Where's ``rows`` entry (shaders/where.wgsl, chosen by gpu/where.py's
``entry``): 32-bit X and Y of the output's shape, the condition broadcast
along leading axes (a row of 16 bytes or more), ROW_WORDS words an
invocation. Against numpy.where and onnx.reference on random bits (NaN
payloads, -0.0), condition bytes other than 0 and 1: rows of 16 (every
group of sixteen bytes one load), 17, 37 and 100 (groups that straddle the
row's end), several invocations and a short last one, bands of a few words
(a band that starts inside a row and inside a group), the staged buffers
(X or Y uploaded into dst), and the entry asserted taken where it claims
and not elsewhere (a row of 15 bytes, a condition of the output's shape, a
row under X broadcast, 64-bit elements).
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import random_array
from tensor_refs import reference, same
from onnxop_cli import where
from onnxop_cli.gpu import where as words

ROWS = [((16,), (9, 16)), ((1, 17), (131, 17)), ((37,), (40, 37)), ((1, 100), (23, 100)), ((1, 1, 64), (2, 9, 64))]


@pytest.fixture
def entries(monkeypatch):
    """The variants gpu/where.py chose, in order."""
    taken: list[str] = []
    real = words.variant

    def spy(*a, **k):
        taken.append(real(*a, **k))
        return taken[-1]

    monkeypatch.setattr(words, "variant", spy)
    return taken


def inputs(rng, cs, xs, dtype, any_byte=True):
    raw = rng.integers(0, 256, int(np.prod(cs)), dtype=np.uint8)
    raw[::3] = 0
    c = raw.view(np.bool_).reshape(cs) if any_byte else raw.astype(bool).reshape(cs)
    x, y = random_array(rng, xs, np.dtype(dtype)), random_array(rng, xs, np.dtype(dtype))
    x.reshape(-1)[:2] = np.array([np.nan, -0.0]).astype(dtype) if np.dtype(dtype).kind == "f" else x.reshape(-1)[:2]
    return c, x, y


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32])
def test_rows_match_references(backend, rng, dtype, entries):
    for cs, xs in ROWS:
        c, x, y = inputs(rng, cs, xs, dtype)
        got = where(c, x, y, backend=backend)
        assert entries[-1] == "rows", (cs, xs)
        assert same(got, np.where(c, x, y)), (dtype, cs, xs)
        assert same(got, reference("Where", 16, [c.astype(bool), x, y])[0]), (dtype, cs, xs)


@pytest.mark.parametrize("band", [48, 1040])
@pytest.mark.parametrize("mapped", [True, False])
def test_rows_small_bands_mapped_and_staged(backend, rng, monkeypatch, entries, band, mapped):
    """Bands of 12 and 260 words: a band's first word inside a row and
    inside a group of sixteen; staged: Y (else X) uploaded into dst."""
    monkeypatch.setattr(words, "BAND", band)
    if not mapped:
        monkeypatch.setattr(words, "can_map", lambda gpu: False)
    for cs, xs in [((1, 17), (13, 17)), ((37,), (7, 37)), ((1, 100), (5, 100))]:
        c, x, y = inputs(rng, cs, xs, np.float32)
        assert same(where(c, x, y, backend=backend), np.where(c, x, y)), (band, mapped, cs)
        assert entries[-1] == "rows"


def test_other_shapes_keep_their_entries(backend, rng, entries):
    for cs, xs, ys, dtype, entry in [((15,), (4, 15), (4, 15), np.float32, "wide"),
                                     ((6, 20), (6, 20), (6, 20), np.float32, "wide"),
                                     ((20,), (1, 20), (6, 20), np.float32, "wide"),
                                     ((20,), (6, 20), (6, 20), np.float64, "wide"),
                                     ((20,), (6, 20), (6, 20), np.float16, "small")]:
        c, x, _ = inputs(rng, cs, xs, dtype)
        y = random_array(rng, ys, np.dtype(dtype))
        assert same(where(c, x, y, backend=backend), np.where(c, x, y)), (cs, xs, ys)
        assert entries[-1] == entry, (cs, xs, ys, entries)
