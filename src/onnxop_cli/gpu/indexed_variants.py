"""The kernels an indexed gather runs a table on (``plan``; gpu/indexed.py asks): the element kernel
(gpu/render/indexed.py) on the variant of the table's case (``variant``, ``Gather``; the scatters' re-lay
and target passes run it too), or a faster kernel, one dispatch a band and window (``Dispatch``), planned
for the tables it fits: the slabs (gpu/render/slices.py ``whole``, ``windowed``), Gather's (and
Compress's) lines (gpu/render/lines.py), GatherND's pairs (gpu/render/rows.py's NdRows) or whole-word
slices (slices.py ``words``), GatherElements' rows (rows.py's ElementsRows), ReverseSequence's runs
(gpu/render/reverse.py). A planner's conditions are what its kernel can read, not a speed measured on one
driver (``plan`` asks choose.py only between Gather's word slices and the element kernel). ``ENABLED`` holds
one switch per variant: off, its tables run what runs without it (benchmarks/variant_kernels.py,
benchmarks/indexed_ops.py, tests).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from .choose import answer
from .engines.base import BufferUsage as U
from .index_table import TABLE_AXIS, TABLE_LOOKUP, WRAP, Check, Index, Table, is_row_major, row_strides
from .indexed_buffers import Buffers, Slice, launch
from .render.frame import Frame
from .render.indexed import NO_BAD, gather
from .render.indices import AXIS
from .render.lines import I32, I64, LINES
from .render import slices
from .render.reverse import REVERSE
from .render.rows import KERNELS as ROWS, RUN
from .render.slices import KERNELS as SLICES

Fused = tuple[Any, Any, Any, Any]  # raw indices, status, Index, Check: the kernel checks the raw indices as read
Fill = Callable[[Any, int, int, Any], None]  # indexed_buffers.Windows.run_each's run(dst, e0, elements, window)
ENABLED = {"lines": True, "slices": True, "nd pairs": True, "rows": True, "runs": True}
M = 0xFFFFFFFF  # strides as two's complement u32 words
RAW_BAND = 8 << 20  # bytes of raw tuples a dispatch reads, where they lie in slice order (tests shrink it)
# GatherND's pairs in slice order (a row-major index tensor) of more than RAW_BAND bytes go one dispatch per
# RAW_BAND, through two buffers in turn (``Dispatch.uploads_own``): a memory bound, not a speed choice. On
# Mesa's CPU drivers device memory is malloc'd, and glibc maps a block above 32 MiB afresh each time (a 64 MiB
# index tensor's buffer: ~40 ms of page faults every call, Mesa 25), where 8 MiB blocks come back from the
# heap already touched (20,482 page faults a call before, 0 after; 16 MiB: 4,098; benchmarks/nd_pairs_upload.py).
TUPLE = 16  # bytes: two int64


def variant(table: Table, raw: Index | None = None) -> str:
    """The element kernel's variant (render/indexed.py's VARIANTS) for ``table``'s case; ``raw``: the one
    reading and checking these raw indices itself."""
    if table.separable:
        name = "axes"
    elif table.mode == 0:
        name = ("flat", "one")[len(table.lookups)] if len(table.lookups) < 2 else "lookups"
    else:
        name = "reverse" if table.mode == 1 else "circular"
    if raw is None:
        return name
    if name in ("flat", "circular", "axes"):
        raise ValueError(f"no checking kernel for the {name} case")
    return name + ("_i64" if raw.wide else "_i32")


class Gather:
    """The indexed gather bound to one source, index buffer and table, of elements of ``bits`` (byte-swap
    unit ``swap``)."""

    def __init__(self, bufs: Buffers, src: Any, norm: Any, table: Table, max_dim: int,
                 fused: Fused | None = None, bits: int = 32, swap: int = 0) -> None:
        """``fused`` (raw index buffer, status buffer, index, check): the kernel
        reads and checks the raw indices itself; ``norm`` is then unused."""
        self.bufs, self.table, self.max_dim, self.bits, self.swap = bufs, table, max_dim, bits, swap
        self.render = gather(variant(table, fused[2] if fused else None))
        self.src, self.norm, self.fused = src, norm, fused
        self.raw, self.status, _, check = fused or (bufs.new("no raw indices", 16, U.STORAGE),
                                                    bufs.new("no status", 16, U.STORAGE), None, None)
        bounds = check.bounds if check else (0,)
        look = {lk.axis: t + 1 for t, lk in enumerate(table.lookups) if lk.axis >= 0}  # separable lookups' rows
        blob = TABLE_AXIS.layout.pack_rows({"dim": d, "dstride": s & M, "istride": i & M, "look": look.get(k, 0)}
                                           for k, (d, s, i) in enumerate(zip(table.shape, table.data.strides,
                                                                             table.index.strides)))
        blob += TABLE_LOOKUP.layout.pack_rows({"stride": lk.stride & M, "ioff": lk.at, "bound": bounds[t % len(bounds)],
                                               "claim": 0} for t, lk in enumerate(table.lookups))
        blob = blob or bytes(16)
        self.axes = bufs.holding("axes", blob)

    def run(self, dst: Any, e0: int, count: int, window: tuple[Any, int, int, bool] | None = None,
            offsets: bool = False) -> None:
        """Fill ``dst`` with elements e0 .. e0+count of the table's output (``Windows.run_each``' run);
        with ``window`` (buffer, first source element, elements, rmw) only
        those whose source lies in that window of the source."""
        t, f, bits, swap = self.table, self.fused, self.bits, self.swap
        src, win0, wcount, rmw = window or (self.src, 0, NO_BAD, False)
        words = 0 if count == 0 else (count if offsets else (count * bits + 31) // 32)
        iswap, cmode, bound = (int(f[2].big), f[3].mode, f[3].bounds[0]) if f else (0, 0, 0)
        launch(self.bufs, self.render, words, self.render.schedule.words, self.max_dim, "gather params", dict(
            words=words, e0=e0, band=count, bits=32 if offsets else bits, swap=swap, rank=len(t.shape),
            nlook=len(t.lookups), mode=t.mode, rev_axis=t.time_axis if t.mode in (1, 2) else NO_BAD,
            rev_stride=t.time_stride & M, modulus=max(1, t.modulus), offsets=int(offsets), win0=win0,
            wcount=wcount, rmw=int(rmw), iswap=iswap, cmode=cmode, bound=bound,
        ), [src, self.norm, dst, None, self.axes, self.raw, self.status])


@dataclass(frozen=True)
class Dispatch:
    """A variant that writes a band of one window in one dispatch (``fill_one``): the lines in any
    bands, the slabs in any bands and windows, the others one band of one window."""

    key: str  # the variant: its switch in ENABLED; bufs.counts[key] marks it taken (tests look)
    kernel: Frame
    unit: int  # output bytes per unit of work (a word, an element, a slice)
    per: int  # units an invocation
    fields: dict = field(default_factory=dict)  # its Params but the units, iswap and groups_x
    count: str = "count"  # the Params field of the units
    blob: bytes | None = None  # its axes buffer
    ordered: bool = False  # nd pairs: slice p's tuple is the p-th of the index tensor (row-major)
    first_unit: tuple[str, int] = ("", 0)  # lines, slabs: the Params field of a band's first unit, its bytes

    def uploads_own(self, tuples: int) -> bool:
        """Whether ``fill_one`` uploads these ``tuples`` itself, a band at a time (then no raw buffer is passed)."""
        return self.ordered and tuples * TUPLE > RAW_BAND


def plan(gpu: Any, table: Table, bits: int, check: Check, index: Index, fused: bool, single: bool) -> Dispatch | None:
    """The variant that runs ``table`` on little-endian data of ``bits`` (None: the element kernel), its
    raw ``index`` checked as read where ``fused``, the source one window where ``single``: Gather's lines
    (one window); whole slices in vec4s, the slabs; else, on one band of one window of int64 indices
    checked as read, whole-word slices (GatherND's pairs, or Gather's where choose.py's ``gather_words``
    does not answer "elements"), GatherElements' rows or ReverseSequence's runs."""
    one = lines(table, bits, check, index if fused else None) if single else None
    if one is not None:
        return one
    cut = slices.plan(table, bits, check.bounds) if (not fused or index.wide) and ENABLED["slices"] else None
    if cut is not None and cut.vec4():
        return slabs(cut, check, fused, single)
    if cut is not None and (not fused or not single or (
            table.extra.get("slices") == "slabs" and answer(gpu, "gather_words") == "elements")):
        cut = None
    if not (fused and single and index.wide):
        return None
    if cut is not None:
        return nd_pairs(cut, check) or Dispatch("slices", SLICES["words"], 4, SLICES["words"].schedule.per,
                                                dict(cut.fields, cmode=check.mode), "words", cut.blob)
    return elements_rows(table, bits, check) or reverse_runs(table, bits, check)


def slabs(cut: slices.Slices, check: Check, fused: bool, single: bool) -> Dispatch:
    """Whole slices in vec4s (``cut.vec4()``), in any bands and windows, the indices checked as read
    (``fused``) or by the index check before (its offsets): ``whole`` (VECS a lane) for one band of one buffer
    (``single``), fused, else ``windowed``."""
    name = "whole" if single and fused else "windowed"
    kernel = SLICES[name]
    per = slices.CHUNK if name == "windowed" else kernel.schedule.per
    return Dispatch("slabs", kernel, 16, per, dict(
        cut.fields, width=cut.width // 4, cmode=check.mode if fused else 0, normed=int(not fused), win0=0,
        wend=NO_BAD if name == "windowed" else 0, chunk=per), "words", cut.blob,
        first_unit=("first", 16))


def lines(table: Table, bits: int, check: Check, raw: Index | None) -> Dispatch | None:
    """The line plan of a Gather ``table`` (``extra["slices"]`` "slabs") of ``bits``, in any bands of one
    window, or None: its index axes not the last before the slice or not row-major, or the slice not one or
    two whole words (docs/operators.md, benchmarks/gather_lines_ab.py). ``raw``: the raw indices it checks
    as read, else (None) the index check's offsets, read as int32 in mode 0."""
    bounds = check.bounds
    if (not ENABLED["lines"] or table.mode != 0 or len(table.lookups) != 1 or table.lookups[0].at != 0
            or table.extra.get("slices") != "slabs" or bounds[0] >= 1 << 31):  # the index check's offsets: int32
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
    blob = AXIS.layout.pack_rows(({"dim": d, "stride": ((s * bits) // 32) & M} for d, s, _ in axes[:lead]))
    kernel = LINES[cut.width, I64 if raw is not None and raw.wide else I32]
    return Dispatch("lines", kernel, 4, kernel.schedule.words, {
        "m": m, "outer": lead, "lstride": ((table.lookups[0].stride * bits) // 32) & M, "bound": bounds[0],
        "cmode": WRAP if raw is None else check.mode}, "words", blob or bytes(16), first_unit=("u0", 4 * cut.width))


def nd_pairs(cut: slices.Slices, check: Check) -> Dispatch | None:
    """GatherND's pairs for ``cut``, or None: not wrapped (GatherND's), not two lookups at tuple offsets 0
    and 1, a leading index stride odd (a tuple not one aligned vec4), or slices not of one or two words."""
    rows = [struct.unpack_from("<4I", cut.blob, 16 * r) for r in range(len(cut.blob) // 16)]
    if (not ENABLED["nd pairs"] or check.mode != WRAP or cut.width not in (1, 2) or len(rows) != cut.outer + 2
            or rows[cut.outer][1] != 0 or rows[cut.outer + 1][1] != 1 or any(r[2] % 2 for r in rows[:cut.outer] if r[0] > 1)):
        return None
    ordered, step = True, 2  # istride of each leading axis, row-major: 2 x the slices after it
    for dim, _, istride, _ in reversed(rows[:cut.outer]):
        ordered = ordered and (dim == 1 or istride == step)
        step *= dim
    return Dispatch("nd pairs", ROWS["gather-nd", cut.width], 4 * cut.width, RUN,
                    {"outer": cut.outer, "first": 0, "ibase": 0, "run": RUN}, blob=cut.blob, ordered=ordered)


def elements_rows(table: Table, bits: int, check: Check) -> Dispatch | None:
    """GatherElements' rows for a ``table`` (``extra["elements"]``) of ``bits``, or None: not 32 or 64 bits,
    or the indices not row-major (whole-word elements, index e at position e: two a vec4 load)."""
    shape = table.shape
    if (not ENABLED["rows"] or table.mode != 0 or not table.extra.get("elements") or table.size == 0
            or bits not in (32, 64) or len(table.lookups) != 1 or table.lookups[0].at != 0 or table.separable
            or not is_row_major(shape, table.index.strides)):
        return None
    kernel = ROWS["gather-elements", bits // 32]
    blob = AXIS.layout.pack_rows({"dim": d, "stride": s & M} for d, s in zip(shape, table.data.strides))
    return Dispatch("rows", kernel, bits // 8, kernel.schedule.per, {
        "rank": len(shape), "bound": check.bounds[0], "lstride": table.lookups[0].stride & M}, blob=blob)


def reverse_runs(table: Table, bits: int, check: Check) -> Dispatch | None:
    """ReverseSequence's blocks for a ``table`` (``extra["runs"]``) of ``bits``, or None: the data not
    row-major, or its inner block not whole words."""
    shape = table.shape
    block = math.prod(shape[2:]) * bits
    if (not ENABLED["runs"] or table.mode != 1 or not table.extra.get("runs") or table.size == 0 or len(shape) < 2
            or not is_row_major(shape, table.data.strides) or block % 32):
        return None
    return Dispatch("runs", REVERSE, 4, REVERSE.schedule.words, {
        "width": block // 32, "d0": shape[0], "d1": shape[1], "time0": int(table.time_axis == 0),
        "bound": check.bounds[0]}, "words")


def fill_one(bufs: Buffers, d: Dispatch, src: Any, fused: Fused | None, norm: Any, bits: int,
             max_dim: int) -> Fill:
    """``Windows.run_each``' run for ``d`` from the one window's buffer ``src`` (the slabs: each window's), bound as
    (src, dst, params, [axes,] raw, status), the raw indices checked as read (``fused``) or ``norm``, those
    the index check checked (the lines and slabs): one dispatch a band, or where ``d.uploads_own`` (``fused`` holds no raw buffer) one per
    band of ``index.source``'s tuples, read a band at a time."""
    # the index check's offsets ``norm`` in place of raw indices, with a status no one reads
    raw, status, index, _ = fused if fused is not None else (norm, bufs.new("no status", 16, U.STORAGE), None, None)
    per, fields = d.per, dict(d.fields, iswap=int(bool(index and index.big)))
    bufs.counts[d.key] = 1
    axes = [] if d.blob is None else [bufs.holding(f"{d.key} axes", d.blob)]

    def fill(dst: Any, e0: int, n: int, window: Any) -> None:
        assert (window is None or "win0" in fields) and (e0 == 0 or d.first_unit[0]), "windows: the slabs only"
        units, source = n * bits // 8 // d.unit, src
        record = dict(fields, **{d.count: units})
        if d.first_unit[0]:  # the lines and slabs: the band's first unit
            record[d.first_unit[0]] = e0 * bits // 8 // d.first_unit[1]
        if window is not None:  # a slabs window starts on a whole vector (plan_windows': 128 elements)
            source, w0 = window[0], window[1] * bits // 8 // d.unit
            record.update(win0=w0, wend=w0 + -(-window[2] * bits // (8 * d.unit)))
        if d.kernel is SLICES["windowed"]:
            bufs.counts["windowed slab runs"] = bufs.counts.get("windowed slab runs", 0) + 1
        parts = [(units, raw, record)] if raw is not None else _bands(bufs, index, units, per, fields)
        for part, part_raw, params in parts:  # each part taken after the one before was submitted
            launch(bufs, d.kernel, part, per, max_dim, f"{d.key} params", params,
                   [source, dst, None, *axes, part_raw, status])

    return fill


def _bands(bufs: Buffers, index: Any, count: int, run: int, fields: dict) -> Iterator[tuple[int, Any, dict]]:
    """GatherND's pairs a RAW_BAND at a time, whole runs, through two buffers in turn (one is read while the
    other is filled): (slices, their tuples' buffer, the Params)."""
    step = max(run, RAW_BAND // TUPLE // run * run)
    held: list[Any] = []
    for k, first in enumerate(range(0, count, step)):
        end = min(count, first + step)
        piece = Slice(index.source, first * TUPLE, (end - first) * TUPLE)
        if len(held) < 2:
            held.append(bufs.upload("indices", piece, piece.nbytes))
        else:
            bufs.refill(held[k % 2], piece, piece.nbytes)
        bufs.counts["nd bands"] = k + 1  # tests look
        yield end - first, held[k % 2], dict(fields, count=end, first=first, ibase=2 * first)
