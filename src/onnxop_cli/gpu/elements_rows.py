"""GatherElements by runs of 16 output elements (shaders/gather_elements_rows.wgsl):
where the index tensor is row-major int64 and the elements 32 or 64 bits,
each invocation reads its indices two a vec4 load, walks the table once
and stores whole vec4s. Planning here; gpu/indexed.py dispatches it for one
band of one little-endian window, the raw indices checked as read (nothing
reaches the sink if one is bad).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .engines.base import BufferUsage as U
from .index_table import Table, row_strides
from .indexed_buffers import _bind, _dispatch, _grid_x, _pipeline
from .kernels import shader_const

SHADER = "gather_elements_rows.wgsl"


@dataclass(frozen=True)
class Rows:
    words: int  # words per element: 1 or 2
    blob: bytes  # the axes buffer: per output axis (dim, data stride, 0, 0)
    rank: int
    lstride: int  # the gathered axis' data stride


def plan(table: Table, bits: int) -> Rows | None:
    """The plan of a GatherElements ``table`` (``extra["elements"]``) for
    elements of ``bits``, or None: not 32 or 64 bits, or the indices not row-major."""
    if (table.mode != 0 or not table.extra.get("elements") or table.size == 0 or bits not in (32, 64)
            or len(table.lookups) != 1 or table.lookups[0][1] != 0):
        return None
    shape = table.shape
    if any(s != r for s, r, d in zip(table.istrides, row_strides(shape), shape) if d > 1):
        return None
    blob = b"".join(struct.pack("<4I", d, s & 0xFFFFFFFF, 0, 0) for d, s in zip(shape, table.dstrides))
    return Rows(bits // 32, blob, len(shape), table.lookups[0][0])


def run(gpu, bufs, src, raw, status, rows: Rows, count: int, big: bool, bound: int, max_dim: int,
        poison: int | None):
    """Dispatch the kernel over ``count`` output elements into a result
    buffer of ``bufs``, returned; the caller reads ``status`` before
    anything reaches a sink."""
    nbytes = count * rows.words * 4
    bufs.counts["rows"] = 1
    dst = bufs.result("dst", nbytes + 16)
    if poison is not None:
        gpu.queue.write_buffer(dst, 0, bytes([poison]) * nbytes)
    groups = -(-count // (shader_const(SHADER, "WG") * shader_const(SHADER, "RUN")))
    gx = _grid_x(groups, max_dim)
    params = bufs.new("rows params", 32, U.UNIFORM | U.COPY_DST)
    gpu.queue.write_buffer(params, 0, struct.pack("<8I", count, gx, rows.rank, int(big), bound,
                                                  rows.lstride & 0xFFFFFFFF, 0, 0))
    axes = bufs.new("rows axes", len(rows.blob), U.STORAGE | U.COPY_DST)
    gpu.queue.write_buffer(axes, 0, rows.blob)
    kinds = ("read-only-storage", "storage", "uniform", "read-only-storage", "read-only-storage", "storage")
    pipeline, layout = _pipeline(gpu, SHADER, kinds, f"words{rows.words}")
    encoder = gpu.device.create_command_encoder()
    _dispatch(gpu, encoder, pipeline, _bind(gpu, layout, (src, dst, params, axes, raw, status)), groups, max_dim)
    gpu.queue.submit([encoder.finish()])
    return dst
