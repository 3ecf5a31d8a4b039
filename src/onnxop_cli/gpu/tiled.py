"""Which gather dispatches go through the blocked transpose kernel, and their
parameter records (gpu/render/transpose.py; gather.variants asks choose.py's
``transpose`` question whether it runs on this adapter at all;
docs/performance-adapters.md has the figures).

The generic gather writes the output in order and reads wherever the index
map points. When the innermost output axis has a large source stride (a
transpose that moves the innermost axis: 2-D ``1,0``, 3-D ``2,1,0`` and
``0,2,1``, Fortran order), each read is on a new cache line; the blocked
kernel reads along the box axis whose source stride is 1 and writes along
the innermost output axis, both in order.

The choice is made per dispatch from the box's strides (the Access), with no
measurement (see blocked_plan): 32-bit elements, any byte swap by whole
elements, the upload holding every element it reads (``keep`` false, so
offsets fit a u32), every offset on a 16-byte word, and an innermost axis
read at least a cache line apart (``MIN_STRIDE_BYTES``: below it the generic
gather's reads already share lines, no kernel can gain there) while another
box axis has source stride 1. Everything else (slices, broadcasts, Tile,
DepthToSpace with small blocks, whose innermost runs already read
neighbouring source elements) stays with the generic gather.
"""

from __future__ import annotations

from .program import grid_x
from .render.strided import KERNELS
from .tiling import Dispatch

MIN_STRIDE_BYTES = 64  # a cache line: below it the gather's reads already share lines
U32 = (1 << 32) - 1


def blocked_plan(d: Dispatch, shape: tuple[int, ...], bits: int, swap: int, wg: int) -> dict[str, int] | None:
    """The Params fields for dispatch ``d`` of the blocked kernel on workgroups of
    ``wg``, or None: it needs 32-bit elements and every offset on a 16-byte word
    (see gpu/render/strided.py)."""
    axes = range(d.box.axis, len(shape))
    if bits != 32 or swap not in (0, 4) or d.keep or len(axes) < 2 or d.box.e0 % 4 or d.base % 4:
        return None
    dims = {k: d.box.extent if k == d.box.axis else shape[k] for k in axes}
    strides, last = dict(zip(axes, d.strides)), axes[-1]
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
    (gpu/render/strided.py's ``blocked`` ones) takes dispatch ``d``, else None."""
    kernel = KERNELS[name]
    fields = blocked_plan(d, shape, bits, swap, kernel.schedule.wg)
    if fields is None:
        return None
    groups = fields["groups"]
    return kernel.PARAMS.pack(groups_x=grid_x(groups, max_dim), rank=rank, axis0=d.box.axis, dim0=d.box.extent,
                              at=at, base=d.base & U32, **fields), groups
