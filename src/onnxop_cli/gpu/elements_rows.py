"""GatherElements by runs of 16 output elements (gpu/render/rows.py's ElementsRows):
where the index tensor is row-major int64 and the elements 32 or 64 bits,
each invocation reads its indices two a vec4 load, walks the table once
and stores whole vec4s. Planning here; gpu/indexed.py dispatches it for one
band of one little-endian window, the raw indices checked as read (nothing
reaches the sink if one is bad).
"""

from __future__ import annotations

from dataclasses import dataclass

from .index_table import Table, row_strides
from .indexed_buffers import run_into_result
from .render.rows import AXIS, KERNELS


@dataclass(frozen=True)
class Rows:
    words: int  # words per element: 1 or 2
    blob: bytes  # the axes buffer: per output axis (dim, data stride, 0, 0)
    rank: int
    lstride: int  # the gathered axis' data stride


def plan(table: Table, bits: int) -> Rows | None:
    """The plan of a GatherElements ``table`` (``extra["elements"]``) for
    elements of ``bits``, or None: not 32 or 64 bits, or the indices not row-major. Each condition
    is what the kernel can read (whole-word elements, index e at position e: two a vec4 load), not a
    speed measured on one driver, so none is a question of gpu/choose.py."""
    if (table.mode != 0 or not table.extra.get("elements") or table.size == 0 or bits not in (32, 64)
            or len(table.lookups) != 1 or table.lookups[0].at != 0):
        return None
    shape = table.shape
    if any(s != r for s, r, d in zip(table.index.strides, row_strides(shape), shape) if d > 1):
        return None
    blob = AXIS.layout.pack_rows({"dim": d, "stride": s & 0xFFFFFFFF} for d, s in zip(shape, table.data.strides))
    return Rows(bits // 32, blob, len(shape), table.lookups[0].stride)


def run(gpu, bufs, src, raw, status, rows: Rows, count: int, big: bool, bound: int, max_dim: int,
        poison: int | None):
    """Dispatch the kernel over ``count`` output elements into a result
    buffer of ``bufs``, returned; the caller reads ``status`` before
    anything reaches a sink."""
    kernel = KERNELS["gather-elements", rows.words]
    return run_into_result(
        gpu, bufs, kernel, "rows", src=src, raw=raw, status=status, nbytes=count * rows.words * 4,
        units=count, per=kernel.schedule.per, blob=rows.blob, max_dim=max_dim, poison=poison,
        params=lambda gx: kernel.PARAMS.pack(count=count, groups_x=gx, rank=rows.rank, iswap=int(big), bound=bound,
                                             lstride=rows.lstride & 0xFFFFFFFF))
