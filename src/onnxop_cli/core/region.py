"""The one index-map IR: what every output element of an operator is.

An **access** is a strided map over one row-major source, in elements:
element ``i`` (a row-major multi-index over ``shape``) is source element
``offset + sum(i[k] * strides[k])``; strides may be 0 (broadcast) or negative
(reversed slices). Transpose, Expand, Slice, Tile, DepthToSpace and
SpaceToDepth are different tables for this one map (ops/), and so are
Fortran order (reversed strides) and the reshapes (the identity); see numpy's
``as_strided``. A view operator's plan is one access of its input, read
row-major (ops/plan.py); a chain of them composes into one (``reshaped``, an
operator's ``view`` applied to its input's access: core/graph_steps.py).

A **value** says what an element is: a ``Load`` (an input read through an
access); a ``Fill`` (the same bytes everywhere); a ``Masked`` load or fill,
chosen where a mask (a ``Load`` of a bool input, or a ``Tri``angle) says so,
elsewhere a fill or what an earlier region wrote; a ``Select`` (Where: one
load where the mask says yes, another where it says no); or a ``Convert``,
a Load's element converted to another type (Cast's). A **region** is a box
of the output and the value of its elements: core/pieces.py's ``Piece``,
which the operators of several inputs tile their outputs with (the pieces
kernel takes a value flattened: core/pieces.py ``fields``). gpu/tiling.py
cuts an access into GPU work, gpu/pieces.py writes pieces. Pure Python:
nothing here touches bytes or the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional, Union


@dataclass(frozen=True)
class Access:
    """A strided map over one row-major source (the module docstring)."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0

    @classmethod
    def row_major(cls, shape: tuple[int, ...]) -> Access:
        """A row-major tensor read as it is (the identity view)."""
        return cls(tuple(shape), c_strides(shape))

    @classmethod
    def fortran(cls, shape: tuple[int, ...]) -> Access:
        """A column-major tensor read in row-major order."""
        return cls(tuple(shape), f_strides(shape))

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def span(self) -> tuple[int, int]:
        """The lowest and highest source element the view reads (size > 0)."""
        lo = hi = self.offset
        for d, s in zip(self.shape, self.strides):
            lo += min(0, (d - 1) * s)
            hi += max(0, (d - 1) * s)
        return lo, hi

    def simplified(self) -> Access:
        """The same map on fewer axes: size-1 axes dropped, and neighbours
        merged where the outer stride is the inner one times the inner dim
        (cheaper index arithmetic; the identity shows as one axis of stride
        1). Never rank 0: a single element is one axis of one, an empty view
        one axis of zero."""
        if self.size == 0:
            return Access((0,), (1,), 0)
        merged: list[tuple[int, int]] = []
        for d, s in reversed([(d, s) for d, s in zip(self.shape, self.strides) if d != 1]):
            if merged and s == merged[-1][1] * merged[-1][0]:
                merged[-1] = (d * merged[-1][0], merged[-1][1])
            else:
                merged.append((d, s))
        merged.reverse()
        if not merged:
            merged = [(1, 1)]
        return Access(tuple(d for d, _ in merged), tuple(s for _, s in merged), self.offset)

    def reshaped(self, shape) -> Access | None:
        """The same elements in the same order under ``shape``, as one strided
        view, or None where no strides can say it (a transposed pair of axes
        merged into one): numpy's no-copy reshape. What lets a chain of view
        operators compose into one map with no intermediate."""
        shape = tuple(int(d) for d in shape)
        size = 1
        for d in shape:
            size *= d
        if size != self.size:
            raise ValueError(f"cannot reshape a view of {self.size} elements to {shape}")
        if size == 0:
            return Access(shape, c_strides(shape), 0)
        old = [(d, s) for d, s in zip(self.shape, self.strides) if d != 1]
        od, os_ = [d for d, _ in old], [s for _, s in old]
        new = [0] * len(shape)
        oi, oj, ni, nj = 0, 1, 0, 1
        while ni < len(shape) and oi < len(od):
            np_, op = shape[ni], od[oi]
            while np_ != op:
                if np_ < op:
                    np_ *= shape[nj]
                    nj += 1
                else:
                    op *= od[oj]
                    oj += 1
            if any(os_[k] != od[k + 1] * os_[k + 1] for k in range(oi, oj - 1)):
                return None
            new[nj - 1] = os_[oj - 1]
            for k in range(nj - 1, ni, -1):
                new[k - 1] = new[k] * shape[k]
            ni, oi = nj, oj
            nj, oj = nj + 1, oj + 1
        last = new[ni - 1] if ni >= 1 else 1
        for k in range(ni, len(shape)):
            new[k] = last
        return Access(shape, tuple(new), self.offset)

    def is_identity(self) -> bool:
        """Reads the source front to back, every element once, from element 0."""
        v = self.simplified()
        return v.offset == 0 and len(v.shape) == 1 and v.strides == (1,)

    # what cutting a region to bands and windows does to the accesses it reads (core/pieces.py)
    def window(self, start: int, stop: int) -> Access:
        """Indices [start, stop) of the first axis."""
        return Access((stop - start,) + self.shape[1:], self.strides, self.offset + start * self.strides[0])

    def dropped(self) -> Access:
        """Without the first axis (its one index, 0, read)."""
        return Access(self.shape[1:], self.strides[1:], self.offset)

    def flipped(self, axis: int) -> Access:
        """Axis ``axis`` walked from its other end."""
        strides = list(self.strides)
        strides[axis] = -strides[axis]
        return Access(self.shape, tuple(strides), self.offset + (self.shape[axis] - 1) * self.strides[axis])

    def reach(self) -> int:
        """How many source elements lie from the lowest one read to the highest."""
        lo, hi = self.span()
        return hi - lo + 1


@dataclass(frozen=True)
class Load:
    """A value read from input ``input`` (an index into the node's inputs)
    through ``at``: a region's copy, a select's mask or other side."""

    input: int
    at: Access

    def window(self, start: int, stop: int) -> Load:
        return Load(self.input, self.at.window(start, stop))

    def dropped(self) -> Load:
        return Load(self.input, self.at.dropped())

    def flipped(self, axis: int) -> Load:
        return Load(self.input, self.at.flipped(axis))


@dataclass(frozen=True)
class Fill:
    """A value: every element the little-endian bytes ``data`` (a string
    output's: b"", the empty string)."""

    data: bytes


class Tri(NamedTuple):
    """A mask: the element whose index on axis ``row`` is r and on axis
    ``col`` is c is chosen where c - r >= k (``upper``) or c - r <= k; an
    axis of -1 is cut away, its index folded into k (Trilu's)."""

    k: int
    row: int
    col: int
    upper: bool


@dataclass(frozen=True)
class Masked:
    """A value: ``value`` where ``mask`` says so; elsewhere ``otherwise``,
    or (None) what an earlier region wrote there."""

    value: Union[Load, Fill]
    mask: Union[Load, Tri]
    otherwise: Optional[Fill] = None


@dataclass(frozen=True)
class Select:
    """A value: ``then`` where ``mask`` says so, else ``other`` (Where's one
    pass: each output element written once)."""

    mask: Load
    then: Load
    other: Load


@dataclass(frozen=True)
class Convert:
    """A value: ``load``'s element converted to the ONNX type ``to`` (Cast's
    and CastLike's, ops/cast.py), with Cast's ``saturate`` and
    ``round_mode``. Not its load's bytes: the elementwise kernel makes it,
    and the paths that move bytes refuse it (core/pieces.py ``moved``)."""

    load: Load
    to: str
    saturate: bool = True
    round_mode: str = "up"


class Lookup(NamedTuple):
    """An index lookup of an indexed access (gpu/index_table.Table): the
    index read ``at`` elements past the element's place in the index tensor,
    times ``stride`` elements into the data. With an ``axis`` (>= 0) it is a
    separable lookup: the index read at ``at`` plus the element's coordinate
    along that output axis (a 1-D index vector per axis, ``at`` its start in
    the index tensor), whatever the element's place: Resize's per-axis
    tables, whose length is the sum of the axes', not their product."""

    stride: int
    at: int = 0
    axis: int = -1


def load(input: int, shape, strides, offset: int = 0) -> Load:
    """Input ``input`` read through (shape, strides, offset)."""
    return Load(input, Access(tuple(shape), tuple(strides), offset))


def c_strides(shape) -> tuple[int, ...]:
    """Row-major strides, in elements."""
    strides, step = [], 1
    for d in reversed(tuple(shape)):
        strides.append(step)
        step *= max(int(d), 1)
    return tuple(reversed(strides))


def f_strides(shape) -> tuple[int, ...]:
    """Column-major (Fortran) strides, in elements."""
    return tuple(reversed(c_strides(tuple(shape)[::-1])))


Value = Union[Load, Fill, Masked, Select, Convert]  # what a region's elements are (core/pieces.py Piece)
