"""core/pieces.cut as pure index arithmetic: a piece cut at band edges gives
parts that write exactly the piece's elements (each once, from the same
source element), whatever the signs of its strides -- Pad's reflect and
wrap plan repeat axes that walk the output right to left."""

from __future__ import annotations

import itertools

import numpy as np

from onnxop_cli.core.pieces import Piece, cut, forwards


def _writes(p: Piece, base: int = 0) -> dict[int, int]:
    out = {}
    for i in itertools.product(*(range(d) for d in p.shape)):
        dst = base + p.dst_offset + sum(a * s for a, s in zip(i, p.dst_strides))
        assert dst not in out
        out[dst] = p.src_offset + sum(a * s for a, s in zip(i, p.src_strides))
    return out


def test_leftward_pieces_cut_at_every_band_width():
    rng = np.random.default_rng(3)
    for _ in range(200):
        rank = int(rng.integers(1, 4))
        shape = tuple(int(d) for d in rng.integers(1, 5, rank))
        # a row-major box with random signs: an injective map into [0, total)
        inner = [1]
        for d in reversed(shape[1:]):
            inner.insert(0, inner[0] * (d + int(rng.integers(0, 2))))
        signs = [int(s) for s in rng.choice([-1, 1], rank)]
        dst = tuple(s * c for s, c in zip(signs, inner))
        start = sum((d - 1) * c for d, c, s in zip(shape, inner, signs) if s < 0)
        src = tuple(int(x) for x in rng.integers(-4, 5, rank))
        p = Piece(shape, dst, start, 0, src, 50)
        whole = _writes(p)
        assert whole == _writes(forwards(p))
        count = max(whole) + 1
        for band in range(1, count + 1):
            got: dict[int, int] = {}
            for lo in range(0, count, band):
                for part in cut(p, lo, min(count, lo + band)):
                    w = _writes(part, lo)
                    assert all(lo <= k < lo + band for k in w) and not set(w) & set(got)
                    got.update(w)
            assert got == whole, (shape, dst, band)
