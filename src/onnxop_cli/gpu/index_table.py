"""What an indexed kernel is told (gpu/indexed.py, gpu/scatter.py), as plain data with no device code: the
index check modes, ``Check`` and ``Table`` (an access of the data and one of the index tensor over the
output's shape, and the lookups that add indices read to the data's place: core/region.py). ops/ builds
these from the ONNX shapes at plan time; kept apart from gpu/indexed.py so that importing the registry
(every operator module) does not import the indexed kernels' code (tests/process/test_startup_lazy.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

from ..core.region import Access, Lookup
from ..core.region import c_strides as row_strides
from .layout import Struct

if TYPE_CHECKING:
    from ..core.sources import ByteSource

WRAP, RANGE, NONNEG, MODULO = 0, 1, 2, 3  # index check modes: -d .. d-1 wrapped; 0 .. d; 0 .. d-1; any, mod d
# A table's rows as the kernels read them (gpu/render/indices.py's table() declares them): per output (or
# leading) axis one Axis, then per lookup one Lookup, each a 16-byte row of `axes` (WGSL has no unions).
TABLE_AXIS = Struct("Axis", (
    ("dim", "u32"),
    ("dstride", "u32"),  # data stride (elements, or words in the slice kernels)
    ("istride", "u32"),  # index stride: the axis' step in the index tensor
    ("look", "u32"),     # 1 + the row of the separable lookup along this axis (core/region.py Lookup.axis); 0 none
))
TABLE_LOOKUP = Struct("Lookup", (
    ("stride", "u32"),  # data stride of one step of the looked-up index
    ("ioff", "u32"),    # the index's offset from the element's index position
    ("bound", "u32"),   # the indexed axis' size (the checking kernels' range)
    ("claim", "u32"),   # the stride in slices (gpu/render/scatter_slices.py's claims; 0 elsewhere)
))


class Shaped:
    """What has a ``shape``: its ``size``, in elements."""

    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class Index(Shaped):
    """An index tensor: int64 (``wide``) or int32, row-major, ``big``-endian or not."""

    source: ByteSource
    shape: tuple[int, ...]
    wide: bool = True
    big: bool = False
    fortran: bool = False  # stored column-major (the table's index strides say so too)

    @property
    def width(self) -> int:
        return 8 if self.wide else 4


@dataclass(frozen=True)
class Check:
    """How an index tensor is checked: ``bounds[p % len(bounds)]`` for index p; ``mode`` WRAP (valid
    -d .. d-1), RANGE (valid 0 .. d), NONNEG (valid 0 .. d-1: opsets before negative indices) or MODULO (every
    int64 valid, written as its remainder mod d in 0 .. d-1, all 64 bits: TensorScatter's circular write
    indices); ``op`` and ``name`` for the message."""

    bounds: tuple[int, ...]
    op: str
    name: str = "indices"
    mode: int = WRAP
    what: Callable[[int], str] | None = None  # bound number -> "axis 1 of size 3"
    inner: int = 1  # index p checks against bounds[(p // inner) % len(bounds)]

    def bound_of(self, position: int) -> int:
        return (position // self.inner) % len(self.bounds)


@dataclass(frozen=True)
class Table(Shaped):
    """The gather kernel's map from output elements to source elements: element i reads the data at
    ``data``'s place for i plus, per lookup, the index read at ``index``'s place for i plus its ``at``, times
    its ``stride`` (the modes read the index their own way); a separable lookup (``axis`` >= 0) reads its
    index at its ``at`` plus i's coordinate along that axis instead (``separable``)."""

    data: Access  # over the output's (or the updates') shape, into the data (elements)
    index: Access  # over the same shape, into the index tensor
    lookups: tuple[Lookup, ...] = ()
    mode: int = 0  # 0 lookups, 1 reverse (ReverseSequence), 2 circular (TensorScatter)
    time_axis: int = -1
    time_stride: int = 0
    modulus: int = 1
    extra: dict = field(default_factory=dict, compare=False)

    @classmethod
    def over(cls, shape: Sequence[int], dstrides: Sequence[int], istrides: Sequence[int],
             lookups: Sequence[tuple[int, int]] = (), **kw) -> Table:
        """The table over ``shape`` with these data and index strides."""
        shape = tuple(shape)
        return cls(Access(shape, tuple(dstrides)), Access(shape, tuple(istrides)),
                   tuple(Lookup(*x) for x in lookups), **kw)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def separable(self) -> bool:
        """Whether its lookups are separable ones (core/region.py ``Lookup.axis``), at most one an axis: the
        gather kernel's ``axes`` case, which no other kernel reads; a table mixing the kinds has no kernel."""
        along = [lk.axis for lk in self.lookups if lk.axis >= 0]
        if along and (len(along) != len(self.lookups) or len(set(along)) != len(along) or self.mode != 0):
            raise ValueError(f"no kernel reads a table of lookups {self.lookups} (mode {self.mode})")
        return bool(along)


def is_row_major(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether ``strides`` are ``shape``'s row-major ones along every axis longer than 1."""
    return all(s == r for s, r, d in zip(strides, row_strides(shape), shape) if d > 1)

