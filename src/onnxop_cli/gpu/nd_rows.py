"""GatherND by runs of 16 slices (shaders/gather_nd_rows.wgsl): where a
whole-slice table (gpu/slices.py) has slices of one or two words and index
tuples that are pairs of row-major int64, each invocation reads a tuple as
one vec4 load, walks the table once, steps by adds and stores whole vec4s.
Planning here; gpu/indexed.py dispatches it for one band of one
little-endian window, the raw indices checked as read (nothing reaches the
sink if one is bad).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .engines.base import BufferUsage as U
from .index_table import WRAP
from .indexed_buffers import _bind, _dispatch, _grid_x, _pipeline
from .kernels import shader_const
from .slices import Slices

SHADER = "gather_nd_rows.wgsl"
ENABLED = True  # False: such tables keep indexed_slices.wgsl (benchmarks/indexed_ops.py --before)


@dataclass(frozen=True)
class Pairs:
    width: int  # words per slice: 1 or 2
    outer: int
    blob: bytes  # indexed_slices.wgsl's axes buffer (gpu/slices.py)


def plan(cut: Slices, mode: int) -> Pairs | None:
    """The plan for ``cut`` with indices checked in ``mode``, or None: not
    wrapped (GatherND's), not two lookups at tuple offsets 0 and 1, a leading
    index stride odd (a tuple not one aligned vec4), or slices not of one or
    two words."""
    rows = [struct.unpack_from("<4I", cut.blob, 16 * r) for r in range(len(cut.blob) // 16)]
    if not ENABLED or mode != WRAP or cut.width not in (1, 2) or len(rows) != cut.outer + 2:
        return None
    if rows[cut.outer][1] != 0 or rows[cut.outer + 1][1] != 1:
        return None
    if any(r[2] % 2 for r in rows[:cut.outer] if r[0] > 1):
        return None
    return Pairs(cut.width, cut.outer, cut.blob)


def run(gpu, bufs, src, raw, status, pairs: Pairs, count: int, big: bool, max_dim: int, poison: int | None):
    """Dispatch the kernel over ``count`` slices into a result buffer of
    ``bufs``, returned; the caller reads ``status`` before anything
    reaches a sink."""
    nbytes = count * pairs.width * 4
    bufs.counts["nd pairs"] = 1
    dst = bufs.result("dst", nbytes + 16)
    if poison is not None:
        gpu.queue.write_buffer(dst, 0, bytes([poison]) * nbytes)
    groups = -(-count // (shader_const(SHADER, "WG") * shader_const(SHADER, "RUN")))
    params = bufs.new("nd pairs params", 32, U.UNIFORM | U.COPY_DST)
    gpu.queue.write_buffer(params, 0, struct.pack("<8I", count, _grid_x(groups, max_dim), pairs.outer, int(big),
                                                  0, 0, 0, 0))
    axes = bufs.new("nd pairs axes", len(pairs.blob), U.STORAGE | U.COPY_DST)
    gpu.queue.write_buffer(axes, 0, pairs.blob)
    kinds = ("read-only-storage", "storage", "uniform", "read-only-storage", "read-only-storage", "storage")
    pipeline, layout = _pipeline(gpu, SHADER, kinds, f"words{pairs.width}")
    encoder = gpu.device.create_command_encoder()
    _dispatch(gpu, encoder, pipeline, _bind(gpu, layout, (src, dst, params, axes, raw, status)), groups, max_dim)
    gpu.queue.submit([encoder.finish()])
    return dst
