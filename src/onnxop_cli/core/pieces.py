"""A piece: a region of an output (core/region.py) -- a box of it copied
through a Load of one input, or filled with a value, either under a mask or a
triangle, or an input's elements converted (Cast's) -- the unit operators
of several inputs tile their outputs with (ops/tensor_op.py) and
gpu/render/pieces.py's kernel writes (gpu/pieces.py), and the cutting of
pieces to bands and windows (``cut``, ``fit``, pure index arithmetic over
the box and its accesses). Pure data: nothing here touches bytes or the
GPU."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Iterator, NamedTuple, Optional, Sequence

from .region import Access, Convert, Fill, Load, Masked, Select, Tri, Value


@dataclass(frozen=True)
class Piece:
    """A region of an output: a box of ``shape`` in the output, element i
    written to output element ``dst_offset + i . dst_strides``, and the
    ``value`` of its elements (core/region.py: a Load through an access over
    the box's shape, a Fill, a Masked one of them, a Select, or a Convert,
    which only the elementwise kernel makes: ``moved``)."""

    shape: tuple[int, ...]
    dst_strides: tuple[int, ...]
    dst_offset: int
    value: Value

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def dst(self) -> Access:
        """Where the box lies in the output: its own access into it."""
        return Access(self.shape, self.dst_strides, self.dst_offset)

    @property
    def loads(self) -> tuple[Load, ...]:
        """What the piece reads: its value's loads (a select's ``then``, mask and other side)."""
        v = self.value
        if isinstance(v, Convert):
            v = v.load
        if isinstance(v, Masked):
            return tuple(x for x in (v.value, v.mask) if isinstance(x, Load))
        if isinstance(v, Select):
            return v.then, v.mask, v.other
        return (v,) if isinstance(v, Load) else ()

    @property
    def copied(self) -> Optional[Load]:
        """The load whose elements the piece is, as they are; else None."""
        return self.value if isinstance(self.value, Load) else None

    def with_loads(self, f: Callable[[Load], Load], t: Callable[[Tri], Tri] = lambda tri: tri, **changes) -> Piece:
        """The piece with ``f`` applied to each of its loads, ``t`` to its
        triangle (and ``changes``)."""
        return replace(self, value=_mapped(self.value, f, t), **changes)


def _mapped(v: Value, f: Callable[[Load], Load], t: Callable[[Tri], Tri]) -> Value:
    if isinstance(v, Load):
        return f(v)
    if isinstance(v, Convert):
        return replace(v, load=f(v.load))
    if isinstance(v, Masked):
        return replace(v, value=_mapped(v.value, f, t), mask=t(v.mask) if isinstance(v.mask, Tri) else f(v.mask))
    if isinstance(v, Select):
        return Select(f(v.mask), f(v.then), f(v.other))
    return v


class Fields(NamedTuple):
    """A value as the pieces kernel's record has it (gpu/piece_records.py ``general``
    and ``runs`` pack these, so a record is a flattened value):
    the load written where the value is chosen (``src``; None: ``fill``'s
    bytes), the bool input (``mask``) or triangle (``tri``) that chooses,
    whether elsewhere is filled with ``fill`` (``otherwise``) rather than
    kept, and a select's load where the mask says no (``other``)."""

    src: Optional[Load] = None
    fill: bytes = b""
    mask: Optional[Load] = None
    tri: Optional[Tri] = None
    otherwise: bool = False
    other: Optional[Load] = None


def fields(v: Value) -> Fields:
    """``v``'s record fields; a conversion has none (``moved`` refuses it first).
    A record holds one fill: a Masked fill's, else its ``otherwise``'s."""
    if isinstance(v, Load):
        return Fields(src=v)
    if isinstance(v, Fill):
        return Fields(fill=v.data)
    if isinstance(v, Select):
        return Fields(src=v.then, mask=v.mask, other=v.other)
    if not isinstance(v, Masked):
        raise RuntimeError(f"a {type(v).__name__} value is not a record of the pieces kernel")
    if isinstance(v.value, Fill) and v.otherwise is not None and v.otherwise.data != v.value.data:
        raise RuntimeError("a masked fill with another fill where the mask says no is not a record of the pieces "
                           "kernel (it holds one fill)")
    fill = v.value if isinstance(v.value, Fill) else v.otherwise
    return Fields(src=v.value if isinstance(v.value, Load) else None, fill=fill.data if fill is not None else b"",
                  mask=v.mask if isinstance(v.mask, Load) else None, tri=v.mask if isinstance(v.mask, Tri) else None,
                  otherwise=v.otherwise is not None)


def rebuilt(p: Piece, src: Optional[Load], mask: Optional[Load], tri: Optional[Tri], **changes) -> Piece:
    """``p`` with its value's source, mask and triangle replaced (the
    summaries' narrowed pieces, core/shown.py); not a select's or a
    conversion's (``two_pass`` and ``moved`` come first)."""
    v = p.value
    if isinstance(v, Masked):
        v = Masked(src if isinstance(v.value, Load) else v.value, mask if tri is None else tri, v.otherwise)
    elif isinstance(v, Load):
        v = src
    assert not isinstance(v, (Select, Convert)) and v is not None
    return replace(p, value=v, **changes)


def moved(pieces: Sequence[Piece]) -> Sequence[Piece]:
    """``pieces``, for a path that makes them by moving bytes (the pieces
    kernel, strings on the host, summaries); a conversion raises, since its
    elements are not its load's bytes (Cast's plan keeps its region beside
    the runner that makes it: ops/plan.py ``OutputPlan.moves``)."""
    for p in pieces:
        if isinstance(p.value, Convert):
            raise RuntimeError(f"a piece converts to {p.value.to}: only the elementwise kernel makes it, not a copy")
    return pieces


def forwards(p: Piece) -> Optional[Piece]:
    """The piece with every destination stride made positive (an axis that
    writes leftwards read from its other end: Pad's reflections and wraps,
    whose runs repeat right to left); the same elements to the same places,
    so a piece's place in the plan (what it overwrites) is kept. None if
    such an axis is a triangle's row or column."""
    dst, d_off, q = list(p.dst_strides), p.dst_offset, p
    v = p.value
    tri = v.mask if isinstance(v, Masked) and isinstance(v.mask, Tri) else None
    for a, (d, ds) in enumerate(zip(p.shape, p.dst_strides)):
        if ds >= 0 or d <= 1:
            continue
        if tri is not None and a in (tri.row, tri.col):
            return None
        d_off += (d - 1) * ds
        dst[a] = -ds
        q = q.with_loads(lambda x: x.flipped(a))  # every load walks with the destination
    return replace(q, dst_strides=tuple(dst), dst_offset=d_off)


def flatten(p: Piece) -> Piece:
    """A fill piece with its axes of one index dropped and the axes it lays
    out contiguously merged: the same elements to the same places
    (ConstantOfShape's or Pad's fill of the whole output becomes one row,
    long enough for gpu/pieces.py's runs kernel)."""
    if not isinstance(p.value, Fill) or p.size == 0:
        return p
    axes = [(d, s) for d, s in zip(p.shape, p.dst_strides) if d != 1]
    if not axes:
        return p
    shape, strides = [axes[-1][0]], [axes[-1][1]]
    for d, s in reversed(axes[:-1]):
        if s == shape[0] * strides[0]:
            shape[0] *= d
        else:
            shape.insert(0, d)
            strides.insert(0, s)
    return replace(p, shape=tuple(shape), dst_strides=tuple(strides))


def two_pass(p: Piece) -> list[Piece]:
    """A select piece as the two plain pieces it equals: ``other`` copied
    over the box, then ``src`` under the mask (keeping the rest). For the
    paths that follow pieces element by element, not the kernel: summaries
    (core/shown.py) and strings on the host (core/apply_tensors.py)."""
    v = p.value
    if not isinstance(v, Select):
        return [p]
    return [replace(p, value=v.other), replace(p, value=Masked(v.then, v.mask))]


# ------------------------------------------------------------ cutting

def _sub(p: Piece, start: int, stop: int) -> Piece:
    """``p`` restricted to [start, stop) along its first axis."""
    def tri(t: Tri) -> Tri:  # k counts from the piece's origin: fold the new origin in
        k, r, c, upper = t
        return Tri(k + (start if r == 0 else 0) - (start if c == 0 else 0), r, c, upper)

    return p.with_loads(lambda x: x.window(start, stop), tri, shape=(stop - start,) + p.shape[1:],
                        dst_offset=p.dst_offset + start * p.dst_strides[0])


def _drop_first(p: Piece) -> Piece:
    """A piece whose first axis has one index, without that axis (a triangle
    row or column on it is then constant, already folded into k)."""
    def tri(t: Tri) -> Tri:
        k, r, c, upper = t
        return Tri(k, -1 if r <= 0 else r - 1, -1 if c <= 0 else c - 1, upper)

    return p.with_loads(Load.dropped, tri, shape=p.shape[1:], dst_strides=p.dst_strides[1:])


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
    lo, hi = p.dst.span()
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
    rlo, rhi = p.dst.dropped().span()
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
    if max((x.at.reach() for x in p.loads), default=0) <= window or not p.shape:
        yield p
        return
    if p.shape[0] == 1:
        yield from fit(_drop_first(p), window)
        return
    half = p.shape[0] // 2
    yield from fit(_sub(p, 0, half), window)
    yield from fit(_sub(p, half, p.shape[0]), window)


def extent(p: Piece, width: int) -> int:
    """Bytes of window the widest range a piece reads needs, its elements counted at ``width`` bits: the
    width the window's element limit is counted in (gpu/pieces.py), so that a piece whose ranges fit the
    window sized for them is not cut. (A Fortran-order mask counted at its own 8 bits sized the window
    for a float64 Where 8x too small for it, and cut the output into a dispatch for each few rows.)"""
    if not p.size:
        return 0
    f = fields(p.value)
    return max((x.at.reach() * width // 8 + 1 for x in (f.src, f.mask, f.other) if x is not None), default=0)


def ranges(p: Piece) -> tuple[int, int, int, int, int, int]:
    """The source, mask and other element ranges (lo, hi each) a piece reads."""
    f = fields(p.value)
    s, m, o = ((0, 0) if x is None else x.at.span() for x in (f.src, f.mask, f.other))
    return (*s, *m, *o)
