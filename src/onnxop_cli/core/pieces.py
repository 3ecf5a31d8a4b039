"""A piece: a box of an output copied from a strided view of one input, or
filled with a value -- the unit operators of several inputs tile their
outputs with (ops/family.py) and shaders/pieces.wgsl writes (gpu/pieces.py).
Pure data, next to View: nothing here touches bytes or the GPU."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Optional


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
    (core/shown.py) and strings on the host (core/family.py)."""
    if p.other is None:
        return [p]
    return [
        replace(p, src=p.other, src_strides=p.other_strides, src_offset=p.other_offset, mask=None,
                mask_strides=(), mask_offset=0, other=None, other_strides=(), other_offset=0, otherwise_fill=False),
        replace(p, other=None, other_strides=(), other_offset=0, otherwise_fill=False),
    ]
