"""Scatters on the device: copy the data, then apply the updates in index
order; the output is read back once no update is pending.

    data ──(re-layout / swap: the indexed gather)──▶ out;  updates ──▶ upd
    indices ──the index check (gpu/render/indexed.py)──▶ norm ──offsets mode──▶ targets
    the rounds (gpu/scatter_claims.py), or one kernel that applies every update (``_kernel``)

The kernels that skip the rounds: ScatterND with reduction none whose slices are whole words
(gpu/render/slices.py's plan; ``_by_slices``: a claim per index tuple, then a word copy), and ScatterElements with
a reduction over enough lines (``_by_lines``: an invocation applies a line's updates in index order; only they can
name its elements).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import OpError
from .device import Gpu
from .buffers import dispatch_limit
from .choose import answer
from .indexed import (LAST, NO_BAD, NONNEG, WRAP, U, Buffers, Check, Data, Index, Sink, Table, binding_limit,
                      check_data, check_indices, fits, launch, read_status, reads_raw, to_sink)
from .render import slices
from .render.scatter import Lines
from .render.scatter_slices import Slices
from .scatter_claims import DUPLICATES, Fill, Reduce, apply_head, arithmetic, rounds, scatter_banded, targets_of


def scatter_indexed(gpu: Gpu, data: Data, updates: Data, index: Index | None, check: Check | None, table: Table,
                    reduce: Reduce, sink: Sink, *, max_groups_per_dim: int | None = None, slice_copy: bool = True,
                    mapped: bool | None = None, fold: bool = True, binding_bytes: int | None = None) -> int:
    """Copy ``data`` and apply ``updates`` (their targets by ``table``, whose shape is the updates') in index
    order; stream the result into ``sink``; return the bytes written. reduction none with two updates on one
    element is an OpError, raised before anything reaches the sink. ``slice_copy`` False: the rounds, never the
    slice and line kernels. ``mapped``: as gather_indexed's. ``fold`` (False: the separate check pass, for
    comparisons): those kernels read and check the raw int64 indices themselves where they can (a bad one:
    nothing reaches the sink). Data (or its claims, 4 bytes an element) past one binding (or ``binding_bytes``,
    which tests force small) goes a band at a time (gpu/scatter_claims.py's ``scatter_banded``)."""
    op = check.op if check else "scatter"
    check_data(data, op)
    if updates.bits != data.bits:
        raise ValueError("updates and data have one element type")
    n = updates.size
    if table.size != n:
        raise ValueError(f"the table maps {table.size} updates, not {n}")
    if n >= NO_BAD:
        raise OpError(f"{op}: {n} updates; the device takes at most {NO_BAD - 1}")
    fits(gpu, updates.nbytes, "the updates", op)
    fits(gpu, 4 * n, "the update targets", op)
    cap = min(binding_bytes or binding_limit(gpu), binding_limit(gpu))
    banded = data.nbytes > cap or 4 * data.size > cap  # the data or its claims past one binding
    max_dim = dispatch_limit(gpu, max_groups_per_dim)
    bufs = Buffers(gpu, mapped=mapped is None or mapped)
    try:
        with gpu.errors(f"{op} on the device"):
            # the kernel is chosen before the check only where it could read and check the raw indices itself
            # (the whole-slice scatter's raw steps, the line kernel's mode 2): int64 indices it ``reads_raw``,
            # a wrap or non-negative check
            asked = (fold and not banded and data.size > 0 and n > 0 and index is not None and check is not None
                     and index.wide and check.mode in (WRAP, NONNEG) and reads_raw(gpu, index, check))
            kernel = _kernel(gpu, table, data, reduce, index, check, slice_copy) if asked else None
            raw = (index, check) if asked and _direct(kernel) else None
            if raw:  # read and checked by the kernel that applies them: no check pass
                norm = bufs.upload("indices", index.source, index.size * 8)
                bufs.counts["folded checks"] += 1
            else:
                norm = check_indices(gpu, bufs, index, check, max_dim) if index is not None else bufs.new(
                    "norm", 16, U.STORAGE)
            if data.size == 0:
                return 0
            upd = _copy_in(gpu, bufs, updates, max_dim, output=False) if n else None
            if banded:
                return scatter_banded(gpu, bufs, data, upd, norm, table, reduce, op, max_dim, sink, cap)
            out = _copy_in(gpu, bufs, data, max_dim)
            if n:
                if not asked:
                    kernel = _kernel(gpu, table, data, reduce, index, check, slice_copy)
                _apply(gpu, bufs, out, upd, norm, table, data, updates, reduce, op, max_dim, kernel, raw)
            return to_sink(gpu, bufs, out, data.nbytes, sink)
    finally:
        gpu.cache[LAST] = bufs.counts  # this call's, not a schedule question's case run inside it (scatter_lines)
        bufs.release()


def _copy_in(gpu: Gpu, bufs: Buffers, data: Data, max_dim: int, output: bool = True) -> Any:
    """``data`` on the device, row-major and little-endian (uploaded as it is, or re-laid as a band of its whole:
    gpu/scatter_claims.py's ``Fill``); ``output``: the buffer the result is read from."""
    if not data.swap and data.row_major:
        return bufs.upload("scatter data", data.source, data.nbytes, readable=output)
    out = bufs.result("scatter data", data.nbytes) if output else bufs.new(
        "scatter data", data.nbytes, U.STORAGE | U.COPY_SRC | U.COPY_DST)
    Fill(gpu, bufs, data, max_dim, data.size)(out, 0, data.size)
    return out


# Lines a line-per-invocation scatter needs (its parallelism), else the rounds run: LINES_AT_LEAST or
# more always take the lines (256 was measured on lavapipe, Mesa 22.3), fewer than FEWEST_LINES the rounds
# (one line is a 1-D scatter); between, choose.py's ``scatter_lines`` answers, measured per adapter on
# SCATTER_LINES lines (gpu/schedule_cases.py).
LINES_AT_LEAST, FEWEST_LINES = 256, 16


@dataclass(frozen=True)
class _Lines:
    """ScatterElements' line kernel (``_by_lines``): ``line`` updates a line, ``inner`` apart; ``dlen`` the
    data's axis length where the updates have the data's shape but for the axis (the lines read the indices
    themselves), else 0 (they read the targets, computed first)."""

    line: int
    inner: int
    dlen: int

    def group(self, bits: int) -> int | None:
        """Lines an invocation takes so that it alone writes their words: 1 for 32- and 64-bit elements, and
        for narrower ones whose lines are whole words (the axis last, ``dlen`` a multiple of a word's
        elements); a word's elements when ``inner`` (the stride along the axis) is a multiple of them (that
        many adjacent lines share each word); else None (``dlen`` 0: no data line length known, or lines
        that share words otherwise: the ``shared`` kernel, one line an invocation)."""
        per = 32 // bits if bits < 32 else 1
        if per == 1 or (self.dlen and self.inner == 1 and self.dlen % per == 0):
            return 1
        return per if self.dlen and self.inner % per == 0 else None


def _kernel(gpu: Gpu, table: Table, data: Data, reduce: Reduce, index: Index | None, check: Check | None,
            slice_copy: bool) -> slices.Slices | _Lines | None:
    """The kernel of the module's two cases that apply the updates without rounds, or None (the rounds)."""
    if not slice_copy:
        return None
    if reduce.kind == "none":
        return slices.plan(table, data.bits, check.bounds) if check is not None else None
    axis = table.extra.get("line_axis")
    if index is None or axis is None or not table.size or arithmetic(reduce, data.bits) is None:
        return None
    line = table.shape[axis]
    lines = table.size // line
    if lines < FEWEST_LINES or (lines < LINES_AT_LEAST and answer(gpu, "scatter_lines") == "rounds"):
        return None
    direct = not index.fortran and all(d == e for k, (d, e) in enumerate(zip(table.shape, data.shape)) if k != axis)
    return _Lines(line, math.prod(table.shape[axis + 1:]), data.shape[axis] if direct else 0)


def _direct(kernel: slices.Slices | _Lines | None) -> bool:
    """Whether ``kernel`` reads the indices (not targets computed first)."""
    return isinstance(kernel, slices.Slices) or (kernel is not None and kernel.dlen > 0)


def _apply(gpu: Gpu, bufs: Buffers, out: Any, upd: Any, norm: Any, table: Table, data: Data, updates: Data,
           reduce: Reduce, op: str, max_dim: int, kernel: slices.Slices | _Lines | None,
           raw: tuple[Index, Check] | None) -> None:
    """The updates applied to ``out`` by ``kernel`` (``_kernel``), or in rounds. ``raw`` (index, check): ``norm``
    holds the raw indices, which the kernel checks."""
    if isinstance(kernel, slices.Slices):
        _by_slices(gpu, bufs, out, upd, norm, kernel, data.nbytes // 4, updates.nbytes // 4, op, max_dim, raw)
        return
    if not _direct(kernel):  # each update's data element first
        norm = targets_of(bufs, out, norm, table, max_dim)
    if kernel is None:
        rounds(gpu, bufs, out, upd, norm, data, updates.size, reduce, op, max_dim)
    else:
        _by_lines(gpu, bufs, out, upd, norm, updates.size, data.bits, reduce, kernel, max_dim, raw)


def _raw_fields(raw: tuple[Index, Check] | None) -> dict[str, int]:
    """The kernels' Params ``iswap`` and ``cmode``: the raw int64 indices' byte order and check mode."""
    return {"iswap": int(raw[0].big), "cmode": raw[1].mode} if raw else {"iswap": 0, "cmode": 0}


def _by_slices(gpu: Gpu, bufs: Buffers, out: Any, upd: Any, norm: Any, cut: slices.Slices, data_words: int,
               words: int, op: str, max_dim: int, raw: tuple[Index, Check] | None = None) -> None:
    """reduction none by whole slices: gpu/render/scatter_slices.py's claim, then its apply.
    ``raw`` (index, check): ``norm`` is the raw int64 index tensor, checked by the claim."""
    tuples = words // cut.width
    claims = bufs.new("slice claims", 4 * (data_words // cut.width), U.STORAGE)  # zeroed, as a new buffer is
    status = bufs.status(NO_BAD if raw else 0)
    axes = bufs.holding("axes", cut.blob)
    starts = bufs.new("slice starts", 4 * tuples if raw else 16, U.STORAGE)  # the raw claim's targets, for the raw apply
    for step, count in (("claim", tuples), ("apply", words)):
        kernel = Slices(step, bool(raw))
        launch(bufs, kernel, count, 1 if step == "claim" else kernel.schedule.words, max_dim, f"slice {step} params",
               dict(words=count, **_raw_fields(raw), **cut.fields),
               [upd, out, None, axes, norm, status, claims, starts, norm if raw else axes])
        if step == "claim" and read_status(gpu, bufs, status, raw):
            raise OpError(f"{op}: {DUPLICATES}")


def _by_lines(gpu: Gpu, bufs: Buffers, out: Any, upd: Any, targets: Any, n: int, bits: int, reduce: Reduce,
              line: _Lines, max_dim: int, raw: tuple[Index, Check] | None = None) -> None:
    """The ``n`` updates applied a line (or ``_Lines.group``'s lines) an invocation (gpu/render/scatter.py's
    ``Lines``). ``targets``: the checked indices where ``line.dlen`` is set, else the updates' data elements;
    ``raw`` (index, check): the raw int64 indices, which the lines check."""
    status = bufs.status()
    group = line.group(bits)
    kernel = Lines(arithmetic(reduce, bits) or "", bits, shared=group is None)
    invocations = n // line.line // (group or 1)
    launch(bufs, kernel, invocations, 1, max_dim, "line params", dict(
        count=invocations, mode=2 if raw else 1 if line.dlen else 0, line=line.line, inner=line.inner,
        dlen=line.dlen, group=group or 1, **_raw_fields(raw), **apply_head(reduce, bits)),
        [targets, None, upd, out, status, targets])
    bufs.counts["shared lines" if kernel.shared else "word lines"] = 1  # tests look
    if raw:
        read_status(gpu, bufs, status, raw)
