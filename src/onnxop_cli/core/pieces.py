"""A piece: a box of an output copied from a strided view of one input, or
filled with a value -- the unit operators of several inputs tile their
outputs with (ops/tensor_op.py) and shaders/pieces.wgsl writes (gpu/pieces.py),
and the cutting of pieces to bands and windows (``cut``, ``fit``, pure index
arithmetic). Pure data, next to Access: nothing here touches bytes or the GPU."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Iterator, Optional, Sequence


@dataclass(frozen=True)
class Piece:
    """A box of ``shape`` in the output: element i goes to output element
    ``dst_offset + i . dst_strides`` and comes from element
    ``src_offset + i . src_strides`` of input ``src`` (None: ``fill``, the
    element's little-endian bytes). ``mask`` (an input index, a bool tensor)
    with its strides and offset, or ``tri`` (k, row axis, col axis, upper),
    choose per element; where they say no, the element gets ``fill`` when
    ``otherwise_fill`` and keeps what an earlier piece wrote when not -- or,
    a *select* piece (``other`` an input index, with a mask), is read from
    element ``other_offset + i . other_strides`` of input ``other``: Where's
    one pass, each output element written once."""

    shape: tuple[int, ...]
    dst_strides: tuple[int, ...]
    dst_offset: int = 0
    src: Optional[int] = None
    src_strides: tuple[int, ...] = ()
    src_offset: int = 0
    fill: bytes = b""
    mask: Optional[int] = None
    mask_strides: tuple[int, ...] = ()
    mask_offset: int = 0
    tri: Optional[tuple[int, int, int, bool]] = None
    otherwise_fill: bool = False
    other: Optional[int] = None
    other_strides: tuple[int, ...] = ()
    other_offset: int = 0

    @property
    def size(self) -> int:
        return math.prod(self.shape)


def forwards(p: Piece) -> Optional[Piece]:
    """The piece with every destination stride made positive (an axis that
    writes leftwards read from its other end: Pad's reflections and wraps,
    whose runs repeat right to left); the same elements to the same places,
    so a piece's place in the plan (what it overwrites) is kept. None if
    such an axis is a triangle's row or column."""
    dst, src, msk, oth = list(p.dst_strides), list(p.src_strides), list(p.mask_strides), list(p.other_strides)
    d_off, s_off, m_off, o_off = p.dst_offset, p.src_offset, p.mask_offset, p.other_offset
    for a, (d, ds) in enumerate(zip(p.shape, p.dst_strides)):
        if ds >= 0 or d <= 1:
            continue
        if p.tri is not None and a in (p.tri[1], p.tri[2]):
            return None
        d_off += (d - 1) * ds
        dst[a] = -ds
        if src:
            s_off += (d - 1) * src[a]
            src[a] = -src[a]
        if msk:
            m_off += (d - 1) * msk[a]
            msk[a] = -msk[a]
        if oth:  # a select piece's second source walks with the first
            o_off += (d - 1) * oth[a]
            oth[a] = -oth[a]
    return replace(p, dst_strides=tuple(dst), dst_offset=d_off, src_strides=tuple(src), src_offset=s_off,
                   mask_strides=tuple(msk), mask_offset=m_off, other_strides=tuple(oth), other_offset=o_off)


def two_pass(p: Piece) -> list[Piece]:
    """A select piece as the two plain pieces it equals: ``other`` copied
    over the box, then ``src`` under the mask (keeping the rest). For the
    paths that follow pieces element by element, not the kernel: summaries
    (core/shown.py) and strings on the host (core/apply_tensors.py)."""
    if p.other is None:
        return [p]
    return [
        replace(p, src=p.other, src_strides=p.other_strides, src_offset=p.other_offset, mask=None,
                mask_strides=(), mask_offset=0, other=None, other_strides=(), other_offset=0, otherwise_fill=False),
        replace(p, other=None, other_strides=(), other_offset=0, otherwise_fill=False),
    ]


# ------------------------------------------------------------ cutting

def span(shape: Sequence[int], strides: Sequence[int], offset: int) -> tuple[int, int]:
    lo = hi = offset
    for d, s in zip(shape, strides):
        lo += min(0, (d - 1) * s)
        hi += max(0, (d - 1) * s)
    return lo, hi


def _sub(p: Piece, start: int, stop: int) -> Piece:
    """``p`` restricted to [start, stop) along its first axis."""
    tri = p.tri
    if tri is not None:  # k counts from the piece's origin: fold the new origin in
        k, r, c, upper = tri
        tri = (k + (start if r == 0 else 0) - (start if c == 0 else 0), r, c, upper)
    return replace(
        p, shape=(stop - start,) + p.shape[1:],
        dst_offset=p.dst_offset + start * p.dst_strides[0],
        src_offset=p.src_offset + (start * p.src_strides[0] if p.src is not None else 0),
        mask_offset=p.mask_offset + (start * p.mask_strides[0] if p.mask is not None else 0),
        other_offset=p.other_offset + (start * p.other_strides[0] if p.other is not None else 0),
        tri=tri,
    )


def _drop_first(p: Piece) -> Piece:
    """A piece whose first axis has one index, without that axis (a triangle
    row or column on it is then constant, already folded into k)."""
    tri = p.tri
    if tri is not None:
        k, r, c, upper = tri
        tri = (k, -1 if r <= 0 else r - 1, -1 if c <= 0 else c - 1, upper)
    return replace(
        p, shape=p.shape[1:], dst_strides=p.dst_strides[1:],
        src_strides=p.src_strides[1:] if p.src is not None else (),
        mask_strides=p.mask_strides[1:] if p.mask is not None else (),
        other_strides=p.other_strides[1:] if p.other is not None else (),
        tri=tri,
    )


def cut(p: Piece, start: int, stop: int) -> Iterator[Piece]:
    """The parts of ``p`` whose output elements lie in [start, stop), offsets
    made band-relative. A part that straddles an edge is cut along its first
    axis: the rows wholly inside are one part, a straddling row is cut again.
    A piece with an axis that writes leftwards (Pad's reflect and wrap repeat
    runs right to left) is turned forwards first (core/pieces.forwards), so
    its rows walk the output forwards: such a piece straddling a band edge
    (outputs past one band, 64 MiB) failed here with an internal error."""
    if p.size == 0:
        return
    lo, hi = span(p.shape, p.dst_strides, p.dst_offset)
    if hi < start or lo >= stop:
        return
    if lo >= start and hi < stop:
        yield replace(p, dst_offset=p.dst_offset - start)
        return
    if any(ds < 0 and d > 1 for d, ds in zip(p.shape, p.dst_strides)):
        turned = forwards(p)
        if turned is not None:
            yield from cut(turned, start, stop)
            return
    d0, s0 = p.shape[0], p.dst_strides[0]
    assert d0 == 1 or s0 > 0, "a piece's first axis walks the output forwards"
    rlo, rhi = span(p.shape[1:], p.dst_strides[1:], p.dst_offset)
    i = 0
    while i < d0:
        row_lo, row_hi = rlo + i * s0, rhi + i * s0
        if row_lo >= stop:
            return
        if row_hi < start:
            i = max(i + 1, -(-(start - rhi) // s0))
            continue
        if row_lo >= start and row_hi < stop:
            j = min(d0 - 1, (stop - 1 - rhi) // s0)
            part = _sub(p, i, j + 1)
            yield replace(part, dst_offset=part.dst_offset - start)
            i = j + 1
            continue
        yield from cut(_drop_first(_sub(p, i, i + 1)), start, stop)
        i += 1


def fit(p: Piece, window: int) -> Iterator[Piece]:
    """``p`` cut along its first axis until the source and mask ranges it
    reads each fit ``window`` elements."""
    def reach(q: Piece) -> int:
        n = 0
        if q.src is not None:
            lo, hi = span(q.shape, q.src_strides, q.src_offset)
            n = max(n, hi - lo + 1)
        if q.mask is not None:
            lo, hi = span(q.shape, q.mask_strides, q.mask_offset)
            n = max(n, hi - lo + 1)
        if q.other is not None:
            lo, hi = span(q.shape, q.other_strides, q.other_offset)
            n = max(n, hi - lo + 1)
        return n

    if reach(p) <= window or not p.shape:
        yield p
        return
    if p.shape[0] == 1:
        yield from fit(_drop_first(p), window)
        return
    half = p.shape[0] // 2
    yield from fit(_sub(p, 0, half), window)
    yield from fit(_sub(p, half, p.shape[0]), window)


def extent(p: Piece, bits: int) -> int:
    """Bytes of the source (or mask) range a piece reads."""
    n = 0
    if p.size and p.src is not None:
        lo, hi = span(p.shape, p.src_strides, p.src_offset)
        n = (hi - lo + 1) * bits // 8 + 1
    if p.size and p.mask is not None:
        lo, hi = span(p.shape, p.mask_strides, p.mask_offset)
        n = max(n, hi - lo + 1)
    if p.size and p.other is not None:
        lo, hi = span(p.shape, p.other_strides, p.other_offset)
        n = max(n, (hi - lo + 1) * bits // 8 + 1)
    return n


def ranges(p: Piece) -> tuple[int, int, int, int, int, int]:
    """The source, mask and other element ranges (lo, hi each) a piece reads."""
    s = span(p.shape, p.src_strides, p.src_offset) if p.src is not None else (0, 0)
    m = span(p.shape, p.mask_strides, p.mask_offset) if p.mask is not None else (0, 0)
    o = span(p.shape, p.other_strides, p.other_offset) if p.other is not None else (0, 0)
    return (*s, *m, *o)
