"""GatherND by runs of 16 or 64 slices (gpu/render/rows.py's NdRows): where a
whole-slice table (gpu/slices.py) has slices of one or two words and index
tuples that are pairs of row-major int64, each invocation reads a tuple as
one vec4 load, walks the table once, steps by adds and stores whole vec4s.
Planning here; gpu/indexed.py dispatches it for one band of one
little-endian window, the raw indices checked as read (nothing reaches the
sink if one is bad).

Where the tuples lie in slice order (a row-major index tensor) and take
more than RAW_BAND bytes, they are not uploaded at once: one dispatch per
RAW_BAND of them, through two buffers in turn (``uploads_own``). On Mesa's
CPU drivers device memory is malloc'd, and glibc maps a block above 32 MiB
afresh each time: a 64 MiB index tensor's buffer cost ~40 ms of page faults
every call (Mesa 25; ~90 ms on a loaded machine), where 8 MiB blocks come
back from the heap already touched: 20,482 page faults a call before, 0
after, Mesa 22.3; 16 MiB bands still took 4,098 (benchmarks/nd_pairs_upload.py).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Iterator

from .choose import answer
from .index_table import WRAP
from .indexed_buffers import Buffers, Slice, run_into_result
from .render.rows import KERNELS, RUNS
from .slices import Slices

ENABLED = True  # False: such tables keep the whole-slice words kernel (benchmarks/indexed_ops.py --before)
RAW_BAND = 8 << 20  # bytes of raw tuples a dispatch reads, where they lie in slice order (tests shrink it)
# RAW_BAND is a memory bound, not a speed choice among kernels (so no question of choose.py): it keeps each
# buffer under glibc's largest mmap threshold (32 MiB; two in turn), where a CPU driver's malloc reuses touched
# heap; a driver with device memory of its own pays one more dispatch per 8 MiB, nothing a measurement could trade
TUPLE = 16  # bytes: two int64
# Leading rows of this many slices or more may take runs of RUNS["long"] slices an invocation, not "short", where
# choose.py's ``nd_run`` answers "long" (1.18x the kernel's speed for a 2048 x 2048 output on Mesa 22.3):
# a run that crosses a row's end steps slice by slice, so shorter rows keep "short". Not measured per driver:
# it bounds the runs that leave the fast path (at most one in LONG_ROW / 64 = 16); which run length is faster
# on rows that long is the measured part (nd_run, cached per adapter and driver)
LONG_ROW = 1024


@dataclass(frozen=True)
class Pairs:
    width: int  # words per slice: 1 or 2
    outer: int
    blob: bytes  # the whole-slice table (gpu/slices.py)
    ordered: bool  # slice p's tuple is the p-th of the index tensor (row-major): bands of tuples can be uploaded
    row: int  # slices along the last leading axis (0: none)


def uploads_own(pairs: Pairs | None, tuples: int) -> bool:
    """Whether ``run`` uploads these ``tuples`` itself, a band at a time
    (the caller then passes no raw buffer)."""
    return pairs is not None and pairs.ordered and tuples * TUPLE > RAW_BAND


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
    ordered, step = True, 2  # istride of each leading axis, row-major: 2 x the slices after it
    for dim, _, istride, _ in reversed(rows[:cut.outer]):
        ordered = ordered and (dim == 1 or istride == step)
        step *= dim
    return Pairs(cut.width, cut.outer, cut.blob, ordered, rows[cut.outer - 1][0] if cut.outer else 0)


def run(gpu, bufs: Buffers, src, raw, status, pairs: Pairs, count: int, index: Any, max_dim: int,
        poison: int | None):
    """Dispatch the kernel over ``count`` slices into a result buffer of
    ``bufs``, returned; the caller reads ``status`` before anything
    reaches a sink. ``raw``: the uploaded tuples, or None where
    ``uploads_own`` (``index.source`` is then read a band at a time)."""
    big = int(index.big)
    long = pairs.row >= LONG_ROW and answer(gpu, "nd_run") == "long"
    run = RUNS["long" if long else "short"]
    kernel = KERNELS["gather-nd", pairs.width]
    bufs.counts["nd run"] = run  # tests look

    def record(end: int, first: int) -> Any:
        return lambda gx: kernel.PARAMS.pack(count=end, groups_x=gx, outer=pairs.outer, iswap=big, first=first,
                                             ibase=2 * first, run=run)

    def bands() -> Iterator[tuple[int, Any, Any]]:
        step = max(run, RAW_BAND // TUPLE // run * run)  # whole runs
        held: list[Any] = []  # two buffers in turn: one is read while the other is filled
        for k, first in enumerate(range(0, count, step)):
            end = min(count, first + step)
            piece = Slice(index.source, first * TUPLE, (end - first) * TUPLE)
            if len(held) < 2:
                held.append(bufs.upload("indices", piece, piece.nbytes))
            else:
                bufs.refill(held[k % 2], piece, piece.nbytes)
            bufs.counts["nd bands"] = k + 1  # tests look
            yield end - first, held[k % 2], record(end, first)

    return run_into_result(
        gpu, bufs, kernel, "nd pairs", src=src, raw=raw, status=status,
        nbytes=count * pairs.width * 4, units=count, per=run, blob=pairs.blob, max_dim=max_dim, poison=poison,
        params=record(count, 0), parts=bands() if raw is None else None)
