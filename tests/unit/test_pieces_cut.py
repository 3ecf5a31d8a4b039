"""core/pieces.cut and fit as pure index arithmetic: a piece cut at band
edges (or to read windows) gives parts that write exactly the piece's
elements (each once, reading the same source, mask and other elements through
accesses of the part's own shape), whatever the signs of its strides -- Pad's
reflect and wrap plan repeat axes that walk the output right to left."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from onnxop_cli.core.pieces import Piece, cut, fit, forwards
from onnxop_cli.core.region import Select, load


def _writes(p: Piece, base: int = 0) -> dict[int, tuple[int, ...]]:
    """Output element -> the element each of the piece's loads reads for it."""
    assert all(x.at.shape == p.shape for x in p.loads)
    out = {}
    for i in itertools.product(*(range(d) for d in p.shape)):
        dst = base + p.dst_offset + sum(a * s for a, s in zip(i, p.dst_strides))
        assert dst not in out
        out[dst] = tuple(x.at.offset + sum(a * s for a, s in zip(i, x.at.strides)) for x in p.loads)
    return out


def _piece(rng) -> Piece:
    """A random select piece: a row-major box with random signs (an
    injective map into [0, total)), three loads with random strides."""
    rank = int(rng.integers(1, 4))
    shape = tuple(int(d) for d in rng.integers(1, 5, rank))
    inner = [1]
    for d in reversed(shape[1:]):
        inner.insert(0, inner[0] * (d + int(rng.integers(0, 2))))
    signs = [int(s) for s in rng.choice([-1, 1], rank)]
    dst = tuple(s * c for s, c in zip(signs, inner))
    start = sum((d - 1) * c for d, c, s in zip(shape, inner, signs) if s < 0)
    src, msk, oth = (tuple(int(x) for x in rng.integers(-4, 5, rank)) for _ in range(3))
    return Piece(shape, dst, start, Select(load(1, shape, msk, 30), load(0, shape, src, 50), load(2, shape, oth, 40)))


def test_leftward_pieces_cut_at_every_band_width():
    rng = np.random.default_rng(3)
    for _ in range(200):
        p = _piece(rng)
        whole = _writes(p)
        assert whole == _writes(forwards(p))
        count = max(whole) + 1
        for band in range(1, count + 1):
            got: dict[int, tuple[int, ...]] = {}
            for lo in range(0, count, band):
                for part in cut(p, lo, min(count, lo + band)):
                    w = _writes(part, lo)
                    assert all(lo <= k < lo + band for k in w) and not set(w) & set(got)
                    got.update(w)
            assert got == whole, (p, band)


def test_pieces_fit_to_read_windows():
    """fit cuts a piece until every access it reads spans ``window``
    elements (or it is down to one element): the same writes, the same reads."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        p = _piece(rng)
        for window in (1, 3, 8, 1000):
            got: dict[int, tuple[int, ...]] = {}
            for part in fit(p, window):
                assert not part.shape or all(x.at.reach() <= window for x in part.loads)
                w = _writes(part)
                assert not set(w) & set(got)
                got.update(w)
            assert got == _writes(p), (p, window)


def test_a_value_the_kernel_record_cannot_hold_is_refused():
    """The pieces kernel's record is a flattened value with one fill: a
    conversion, or a masked fill with a different fill where the mask says
    no, raises instead of being written as something else."""
    from onnxop_cli.core.pieces import fields
    from onnxop_cli.core.region import Access, Convert, Fill, Load, Masked

    mask = Load(1, Access.row_major((4,)))
    with pytest.raises(RuntimeError, match="Convert"):
        fields(Convert(Load(0, Access.row_major((4,))), "int8"))
    with pytest.raises(RuntimeError, match="one fill"):
        fields(Masked(Fill(b"\x01"), mask, Fill(b"\x02")))
    assert fields(Masked(Fill(b"\x01"), mask, Fill(b"\x01"))).fill == b"\x01"
