"""Whether an indexed gather's table can run as a copy of whole slices
(gpu/render/slices.py: GatherND's common case; gpu/render/scatter_slices.py:
ScatterND's with reduction none), and what those kernels are told. Plain
data, no device code: gpu/indexed_variants.py and gpu/scatter.py dispatch them.

A table qualifies when its trailing output axes read no index and are
contiguous in the data (the slice), the slice is a whole number of 32-bit
words, and every other stride (leading axes and lookups) is too: then each
output slice is ``width`` words copied from one data word on, and the
kernel moves words, never elements, whatever the element width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .index_table import TABLE_AXIS, TABLE_LOOKUP, Table

M = 0xFFFFFFFF  # strides as two's complement u32 words


@dataclass(frozen=True)
class Slices:
    width: int  # words per slice
    outer: int  # leading output axes
    blob: bytes  # the kernel's axes buffer
    strides: tuple[int, ...] = ()  # every data stride of the table (leading axes', lookups'), in words

    def vec4(self) -> bool:
        """Whether every slice and stride is whole 16-byte vectors (gpu/render/slices.py's vec4 variants):
        what the vector copy can move, a quarter of the word copy's loads, stores and bounds tests by
        construction (not a speed measured on one driver)."""
        return all(w % 4 == 0 for w in (self.width, *self.strides))

    @property
    def fields(self) -> dict[str, int]:
        """What a slice kernel's Params say of the plan (gpu/render/scatter_slices.py's, as gpu/render/slices.py's)."""
        return {"width": self.width, "outer": self.outer, "nlook": len(self.blob) // 16 - self.outer}


def plan(table: Table, bits: int, bounds: tuple[int, ...]) -> Slices | None:
    """The slice plan of ``table`` for elements of ``bits``, or None. Only
    tables that ask for it (``extra["slices"]``: GatherND's and ScatterND's) take it."""
    if table.mode != 0 or not table.lookups or table.size == 0 or not table.extra.get("slices"):
        return None
    rank = len(table.shape)
    k, run = rank, 1  # the slice: trailing axes with no index, contiguous in the data
    while k > 0 and table.index.strides[k - 1] == 0 and (table.shape[k - 1] == 1 or table.data.strides[k - 1] == run):
        run *= table.shape[k - 1]
        k -= 1
    slice_bits = math.prod(table.shape[k:]) * bits
    if slice_bits % 32:
        return None
    strides = [s for d, s in zip(table.shape[:k], table.data.strides[:k]) if d > 1] + [s for s, _ in table.lookups]
    if any((s * bits) % 32 for s in strides):
        return None
    axes = [{"dim": d, "dstride": ((s * bits) // 32) & M, "istride": i & M}
            for d, s, i in zip(table.shape[:k], table.data.strides[:k], table.index.strides[:k])]
    elems = math.prod(table.shape[k:])  # claim: a lookup's stride in slices (ScatterND's claims)
    looks = [{"stride": ((s * bits) // 32) & M, "ioff": o, "bound": bounds[t % len(bounds)], "claim": (s // elems) & M}
             for t, (s, o) in enumerate(table.lookups)]
    blob = TABLE_AXIS.layout.pack_rows(axes) + TABLE_LOOKUP.layout.pack_rows(looks)
    words = tuple(r["dstride"] for r in axes) + tuple(r["stride"] for r in looks)
    return Slices(slice_bits // 32, k, blob, words)
