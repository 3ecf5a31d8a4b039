"""Which gather dispatches go through a transpose kernel, and their
parameter records: the tiled kernel on GPUs, the blocked one on CPU adapters
(gpu/render/strided.py; gather.variants picks by adapter, choose.py's
``transpose`` question; docs/performance-adapters.md has the figures).

The generic gather writes the output in order and reads wherever the index
map points. When the innermost output axis has a large source stride (a
transpose that moves the innermost axis: 2-D ``1,0``, 3-D ``2,1,0`` and
``0,2,1``, Fortran order), each read is on a new cache line; the transpose
kernels read along the box axis whose source stride is 1 and write along
the innermost output axis, both in order.

The choice is made per dispatch from the box's strides (the Access), with no
measurement. The tiled kernel takes a box when

- its elements are whole words (32, 64, 128 bits) and any byte swap is by
  whole words (``swap`` 0, 4 or 8): sub-word elements share output words
  between neighbours, which only the generic gather assembles;
- the upload holds every element it reads (``keep`` is false), so offsets
  fit a u32;
- its innermost axis has at least MIN_EXTENT elements read at least a cache
  line apart (``MIN_STRIDE_BYTES``), and some other box axis has source
  stride +-1.

The blocked kernel asks for the same and more (see blocked_plan): 32-bit
elements, and every offset on a 16-byte word. Everything else (slices,
broadcasts, Tile, DepthToSpace with small blocks, whose innermost runs
already read neighbouring source elements) stays with the generic gather.

MIN_STRIDE_BYTES and MIN_EXTENT are not speed thresholds measured on one
driver: below a cache line the generic gather's reads already share lines
(no kernel can gain there), and fewer than 8 elements along l leave most of
a tile idle. Whether a transposing box goes to a transpose kernel at all,
and to which, is measured per adapter (choose.py's ``transpose``).
"""

from __future__ import annotations

from .program import grid_x
from .render.strided import KERNELS
from .tiling import Dispatch

TILE = KERNELS["tiled"].schedule.tile  # words per tile row, elements along l
MIN_STRIDE_BYTES = 64  # a cache line: below it the gather's reads already share lines
MIN_EXTENT = 8  # elements along the innermost axis: fewer would leave most of a tile's 32 idle
U32 = (1 << 32) - 1


def _box(d: Dispatch, shape: tuple[int, ...]) -> tuple[dict[int, int], dict[int, int], int] | None:
    """(extent, stride) by view axis of the box's axes, and the last axis; None for a box of one axis."""
    axes = range(d.box.axis, len(shape))
    if len(axes) < 2:
        return None
    return {k: d.box.extent if k == d.box.axis else shape[k] for k in axes}, dict(zip(axes, d.strides)), axes[-1]


def plan(d: Dispatch, shape: tuple[int, ...], bits: int, swap: int) -> dict[str, int] | None:
    """The tiled kernel's Params fields for dispatch ``d`` of a view of
    ``shape`` (``a`` its read axis, ``groups`` its workgroups), or None where
    the generic gather should write it."""
    box = _box(d, shape)
    if bits < 32 or swap not in (0, 4, 8) or d.keep or box is None:
        return None
    dims, strides, last = box
    if dims[last] < MIN_EXTENT or abs(strides[last]) * bits // 8 < MIN_STRIDE_BYTES:
        return None
    units = [k for k in dims if k != last and abs(strides[k]) == 1 and dims[k] > 1]
    if not units:
        return None
    a = max(units, key=lambda k: dims[k])
    tiles_a, tiles_l = -(-dims[a] // (TILE // (bits // 32))), -(-dims[last] // TILE)
    groups = d.box.count // (dims[a] * dims[last]) * tiles_a * tiles_l
    return None if groups >= 1 << 32 else dict(groups=groups, first_word=d.box.words(bits)[0],
                                               lg=(bits // 32).bit_length() - 1, swap=swap, a=a,
                                               tiles_a=tiles_a, tiles_l=tiles_l)


# ------------------------------------------------------------ blocked (CPU adapters)


def blocked_plan(d: Dispatch, shape: tuple[int, ...], bits: int, swap: int, wg: int) -> dict[str, int] | None:
    """The Params fields for dispatch ``d`` of the blocked kernel on workgroups of
    ``wg``, or None: it needs 32-bit elements and every offset on a 16-byte word
    (see gpu/render/strided.py)."""
    box = _box(d, shape)
    if bits != 32 or swap not in (0, 4) or d.keep or box is None or d.box.e0 % 4 or d.base % 4:
        return None
    dims, strides, last = box
    if dims[last] % 4 or abs(strides[last]) * 4 < MIN_STRIDE_BYTES:
        return None
    units = [k for k in dims if k != last and strides[k] == 1 and dims[k] > 1]
    if not units:
        return None
    a = max(units, key=lambda k: (dims[k] % 4 == 0, dims[k]))  # a partial last block costs a little
    if any(strides[k] % 4 for k in dims if k != a and dims[k] > 1) or strides[last] < 0:
        return None
    blocks_a, blocks_l = -(-dims[a] // 4), dims[last] // 4
    spans_a = -(-blocks_a // wg)
    groups = d.box.count // (dims[a] * dims[last]) * blocks_l * spans_a
    return None if groups >= 1 << 32 else dict(groups=groups, first_word=d.box.e0, a=a, blocks_a=blocks_a,
                                               blocks_l=blocks_l, spans_a=spans_a, swap=swap)


def record(name: str, d: Dispatch, shape: tuple[int, ...], bits: int, swap: int, rank: int, at: int,
           max_dim: int) -> tuple[bytes, int] | None:
    """(the 64-byte Params record, workgroups) if transpose kernel ``name``
    (gpu/render/strided.py's ``tiled`` or a ``blocked`` one) takes dispatch ``d``, else None."""
    kernel = KERNELS[name]
    fields = plan(d, shape, bits, swap) if name == "tiled" else blocked_plan(d, shape, bits, swap, kernel.schedule.wg)
    if fields is None:
        return None
    groups = fields["groups"]
    return kernel.PARAMS.pack(groups_x=grid_x(groups, max_dim), rank=rank, axis0=d.box.axis, dim0=d.box.extent,
                              at=at, base=d.base & U32, **fields), groups
