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

from .index_table import WRAP
from .indexed_buffers import run_into_result
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
    return run_into_result(
        gpu, bufs, SHADER, f"words{pairs.width}", "nd pairs", src=src, raw=raw, status=status,
        nbytes=count * pairs.width * 4, units=count, per="RUN", blob=pairs.blob, max_dim=max_dim, poison=poison,
        params=lambda gx: struct.pack("<8I", count, gx, pairs.outer, int(big), 0, 0, 0, 0))
