"""Gathers along lines (gpu/render/lines.py): a table whose one index
axis (or row-major index axes) comes after every other output axis, and
whose slices (the trailing axes no index moves, gpu/slices.py) are one or
two whole words: Gather along the last axis of 4- and 8-byte elements,
Compress along it. The output is lines of the indices' units, each
invocation writes 16 words as vec4 stores, reading the indices (checked by
the index check (gpu/render/indexed.py) first) as vec4 loads. Planning here; gpu/indexed.py runs it
for a little-endian source of one window, in any bands.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from .engines.base import BufferUsage as U
from .index_table import WRAP, Table, row_strides
from .program import compiled, grid_x
from . import gather_windows, slices
from .render.lines import AXIS, I32, I64, LINES, PARAMS


@dataclass(frozen=True)
class Lines:
    width: int  # words per unit: 1 or 2
    m: int  # units per line: the indices
    outer: int  # leading output axes (entries of blob)
    blob: bytes  # per leading axis, the shader's Axis records
    lstride: int  # the gathered axis' data stride, in words
    bound: int  # the gathered axis' size


def plan(table: Table, bits: int, bounds: tuple[int, ...]) -> Lines | None:
    """The line plan of a Gather ``table`` (``extra["slices"]`` "slabs")
    for elements of ``bits``, or None: its index axes not the last before
    the slice or not row-major, or the slice not one or two whole words.
    Every condition is what the kernel can run, none a speed threshold (where
    it runs it measured faster than the element kernel: docs/operators.md,
    benchmarks/gather_lines_ab.py)."""
    if table.mode != 0 or len(table.lookups) != 1 or table.lookups[0].at != 0 or table.extra.get("slices") != "slabs":
        return None
    cut = slices.plan(table, bits, bounds)
    if cut is None or cut.width not in (1, 2):
        return None
    axes = [(d, s, i) for d, s, i in zip(table.shape[:cut.outer], table.data.strides, table.index.strides) if d > 1]
    lead = next((n for n, (_, _, i) in enumerate(axes) if i != 0), len(axes))
    along = axes[lead:]
    if any(s != 0 for _, s, _ in along) or [i for _, _, i in along] != list(row_strides([d for d, _, _ in along])):
        return None
    m = math.prod(d for d, _, _ in along)
    if bounds[0] >= 1 << 31:  # the index check's (gpu/render/indexed.py) offsets are read as int32
        return None
    blob = AXIS.layout.pack_rows(({"dim": d, "stride": ((s * bits) // 32) & 0xFFFFFFFF}
                                      for d, s, _ in axes[:lead]))
    return Lines(cut.width, m, lead, blob or bytes(16), ((table.lookups[0].stride * bits) // 32) & 0xFFFFFFFF,
                 bounds[0])


def run(gpu: Any, bufs: Any, windows: gather_windows.Windows, fused: tuple[Any, Any, Any, Any] | None, norm: Any,
        lines: Lines, count: int, bits: int, band: int, sink: Callable[[memoryview], None], max_dim: int,
        poison: int | None, checked: Callable[[], None] | None) -> int:
    """The table's ``count`` elements into ``sink``, in bands of ``band``,
    from the one window's buffer; the raw indices checked as read
    (``fused``: raw buffer, status, Index, Check; ``checked`` raises if one
    was bad) or ``norm``, those the index check (gpu/render/indexed.py) checked (read as int32)."""
    bufs.counts["lines"] = 1
    axes = bufs.new("lines axes", len(lines.blob), U.STORAGE | U.COPY_DST)
    gpu.queue.write_buffer(axes, 0, lines.blob)
    if fused is None:
        raw, status, big, wide, mode = norm, bufs.new("no status", 16, U.STORAGE), False, False, WRAP
    else:
        raw, status, big, wide, mode = fused[0], fused[1], fused[2].big, fused[2].wide, fused[3].mode
    render = LINES[lines.width, I64 if wide else I32]
    kernel = compiled(gpu, render)
    per = render.schedule.per_group

    def fill(dst: Any, e0: int, n: int, window: Any) -> None:
        assert window is None, "gather_lines runs on one window"
        words = n * bits // 32
        groups = -(-words // per)
        params = bufs.params("lines params", PARAMS.pack(
            words=words, groups_x=grid_x(groups, max_dim), u0=e0 * bits // (32 * lines.width), m=lines.m,
            outer=lines.outer, lstride=lines.lstride, iswap=int(big), cmode=mode, bound=lines.bound))

        encoder = gpu.device.create_command_encoder()
        kernel.dispatch(encoder, groups, max_dim, kernel.bind([windows.first, dst, params, axes, raw, status]))
        gpu.queue.submit([encoder.finish()])

    return gather_windows.run_bands(gpu, bufs, windows, fill, count, bits, band, sink, poison, checked)
