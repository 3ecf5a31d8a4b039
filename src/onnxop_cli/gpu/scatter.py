"""Scatters on the device: copy the data, then apply the updates in index
order, in rounds (gpu/scatter_claims.py; the kernels: gpu/render/scatter.py).

    data ──(re-layout / swap: the indexed gather (gpu/render/indexed.py))──▶ out
    updates ──▶ upd;  indices ──the index check (gpu/render/indexed.py)──▶ norm ──offsets mode──▶ targets
    round: claim (each target's earliest pending update) ▶ apply ▶ reset
    out ──readback──▶ sink, once no update is pending

Updates to distinct elements run in parallel; the k-th update of one
element goes in round k, so the result is onnx.reference's (which loops in
index order) on every run, with no atomics whose order matters. The cost is
one round per update of the most-updated element (batched: a readback every
1, 2, 4 .. 64 rounds). reduction none with a second round means two updates
of one element: refused before the readback, so nothing is written.

Two cases skip the rounds: ScatterND with reduction none whose slices are
whole words (``_by_slices``: a claim per index tuple, then a word copy), and
ScatterElements with a reduction over enough lines (``_by_lines``: one
invocation applies a line's updates in index order; only its updates can
name its elements).
"""

from __future__ import annotations

import struct
from typing import Any

from ..errors import OpError
from .device import Gpu
from .indexed import (
    NO_BAD, Check, Data, Index, Sink, Table, Buffers, check_data, fits, Gather,
    LAST, NONNEG, WRAP, bad_index, to_sink, binding_limit, check_indices, read_small,
    row_strides, U,
)
from .choose import answer
from .program import compiled, grid_x
from .render.scatter import LINE_PARAMS, Lines
from .render.scatter_slices import PARAMS as SLICE_PARAMS, Slices
from .scatter_claims import DUPLICATES, Reduce, apply_head, arithmetic, rounds

from . import slices


def scatter_indexed(
    gpu: Gpu,
    data: Data,
    updates: Data,
    index: Index | None,
    check: Check | None,
    table: Table,
    reduce: Reduce,
    sink: Sink,
    *,
    max_groups_per_dim: int | None = None,
    max_rounds: int | None = None,
    slice_copy: bool = True,
    mapped: bool | None = None,
    fold: bool = True,
    binding_bytes: int | None = None,
) -> int:
    """Copy ``data`` and apply ``updates`` (their targets by ``table``, whose
    shape is the updates') in index order; stream the result into ``sink``.
    reduction none with two updates on one element is an OpError, raised
    before anything reaches the sink. ``slice_copy`` False keeps a table that
    qualifies off the whole-slice kernel (gpu/slices.py) and the line kernel
    (``_line``): the rounds run. ``mapped``: as gather_indexed's (the data
    read straight into the output buffer, which the sink reads where it
    lies). ``fold`` (False: the separate check pass, for comparisons): the
    slice and line kernels read the raw int64 indices and check them
    themselves (``_folds``); a bad one found there discards the output
    before it reaches the sink. Data (or its claims, 4 bytes an element)
    past one binding (or ``binding_bytes``, which tests force small) is
    scattered a band at a time (gpu/scatter_bands.py). Returns the bytes
    written."""
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
    max_dim = max_groups_per_dim or gpu.limits.get("max-compute-workgroups-per-dimension", 65535)
    bufs = Buffers(gpu, mapped=mapped is None or mapped)
    gpu.cache[LAST] = bufs.counts
    try:
        with gpu.errors(f"{op} on the device"):
            folded = fold and not banded and data.size > 0 and n > 0 and _folds(gpu, index, check, table, data, reduce, slice_copy)
            if folded:  # read and checked by the kernel that applies them: no check pass
                norm = bufs.upload("indices", index.source, index.size * 8)
                bufs.counts["folded checks"] += 1
            else:
                norm = check_indices(gpu, bufs, index, check, max_dim) if index is not None else bufs.new(
                    "norm", 16, U.STORAGE)
            if data.size == 0:
                return 0
            if banded:
                from .scatter_bands import scatter_banded

                return scatter_banded(gpu, bufs, data, updates, norm, table, reduce, op, max_dim, max_rounds,
                                      sink, cap, _copy_in, rounds)
            out = _copy_in(gpu, bufs, data, max_dim)
            if n:
                upd = _copy_in(gpu, bufs, updates, max_dim, output=False)
                _apply(gpu, bufs, out, upd, norm, index, check, table, data, updates, reduce, op, max_dim,
                       max_rounds, slice_copy, folded)
            return to_sink(gpu, bufs, out, data.nbytes, sink)
    finally:
        gpu.cache[LAST] = bufs.counts  # this call's, not a schedule question's case run inside it (scatter_lines)
        bufs.release()


def _copy_in(gpu: Gpu, bufs: Buffers, data: Data, max_dim: int, output: bool = True) -> Any:
    """``data`` on the device, row-major and little-endian (re-laid and swapped
    by the gather kernel if need be); ``output``: the buffer the result is read from."""
    if not data.swap and data.row_major:
        return bufs.upload("scatter data", data.source, data.nbytes, readable=output)
    raw = bufs.upload("input data", data.source, data.nbytes)
    out = bufs.result("scatter data", data.nbytes) if output else bufs.new(
        "scatter data", data.nbytes, U.STORAGE | U.COPY_SRC | U.COPY_DST)
    ident = Table.over(data.shape, data.strides or row_strides(data.shape), (0,) * len(data.shape))
    Gather(gpu, bufs, raw, bufs.new("norm", 16, U.STORAGE), ident, max_dim).run(
        out, 0, data.size, data.bits, data.swap)
    return out


def _cut(table: Table, data: Data, reduce: Reduce, check: Check | None, slice_copy: bool) -> slices.Slices | None:
    """ScatterND's slice plan (reduction none, whole words), or None."""
    return slices.plan(table, data.bits, check.bounds) if (
        slice_copy and reduce.kind == "none" and check is not None) else None


def _direct_line(gpu: Gpu, table: Table, data: Data, reduce: Reduce, index: Index | None,
                 slice_copy: bool) -> tuple[int, int] | None:
    """The line of ScatterElements' line kernel when its updates have the
    data's shape but for the axis (the lines read the indices themselves), or None."""
    line = _line(gpu, table, reduce, data.bits) if slice_copy and index is not None else None
    axis = table.extra.get("line_axis")
    if line is not None and index is not None and not index.fortran and all(
            d == e for k, (d, e) in enumerate(zip(table.shape, data.shape)) if k != axis):
        return line
    return None


def _folds(gpu: Gpu, index: Index | None, check: Check | None, table: Table, data: Data, reduce: Reduce,
           slice_copy: bool) -> bool:
    """Whether the kernel that applies the updates reads and checks the raw
    indices itself (the whole-slice scatter's raw steps, the line kernel's
    ``lines_raw``): int64 indices within one binding, a wrap or non-negative
    check, and a kernel that reads every index (every tuple is claimed,
    every update is on a line)."""
    if index is None or check is None or not index.wide or check.mode not in (WRAP, NONNEG):
        return False
    if not (0 < index.size < NO_BAD and index.size * 8 <= binding_limit(gpu)
            and index.source.nbytes >= index.size * 8 and all(d < 1 << 32 for d in check.bounds)):
        return False
    return _cut(table, data, reduce, check, slice_copy) is not None or (
        _direct_line(gpu, table, data, reduce, index, slice_copy) is not None)


def _apply(gpu: Gpu, bufs: Buffers, out: Any, upd: Any, norm: Any, index: Index | None, check: Check | None,
           table: Table, data: Data, updates: Data, reduce: Reduce, op: str, max_dim: int,
           max_rounds: int | None, slice_copy: bool, folded: bool = False) -> None:
    """The updates applied to ``out``: by whole slices, by lines, or in rounds.
    ``folded``: ``norm`` holds the raw indices (``_folds``)."""
    n = updates.size
    cut = _cut(table, data, reduce, check, slice_copy)
    raw = (index, check) if folded else None
    if cut is not None:  # ScatterND's common case: whole slices of words, distinct targets
        _by_slices(gpu, bufs, out, upd, norm, cut, data.nbytes // 4, updates.nbytes // 4, op, max_dim, raw)
        return
    line = _direct_line(gpu, table, data, reduce, index, slice_copy)
    if line is not None:  # the data's shape but for the axis: the lines read the indices themselves
        _by_lines(gpu, bufs, out, upd, norm, data, n, reduce, line, max_dim, data.shape[table.extra["line_axis"]],
                  raw)
        return
    assert not folded, "only the slice and line kernels check raw indices"
    line = _line(gpu, table, reduce, data.bits) if slice_copy and index is not None else None
    targets = bufs.new("targets", 4 * n, U.STORAGE | U.COPY_SRC)
    Gather(gpu, bufs, out, norm, table, max_dim).run(targets, 0, n, 32, 0, offsets=True)
    if line is not None:  # ScatterElements with a reduction: a line per invocation, in order
        _by_lines(gpu, bufs, out, upd, targets, data, n, reduce, line, max_dim)
    else:
        rounds(gpu, bufs, out, upd, targets, data, n, reduce, op, max_dim, max_rounds)


def _by_slices(gpu: Gpu, bufs: Buffers, out: Any, upd: Any, norm: Any, cut: slices.Slices, data_words: int,
               words: int, op: str, max_dim: int, raw: tuple[Index, Check] | None = None) -> None:
    """reduction none by whole slices (gpu/render/scatter_slices.py): a claim per index
    tuple (two on one slice: refused before anything is written), then the
    update words copied over their slices. ``raw`` (index, check): ``norm``
    is the raw int64 index tensor, checked by the claim (BadIndex before
    the apply runs)."""
    tuples = words // cut.width
    claims = bufs.new("slice claims", 4 * (data_words // cut.width), U.STORAGE | U.COPY_DST)
    status = bufs.status(NO_BAD if raw else 0)
    axes = bufs.new("axes", len(cut.blob), U.STORAGE | U.COPY_DST)
    gpu.queue.write_buffer(axes, 0, cut.blob)
    starts = bufs.new("slice starts", 4 * tuples if raw else 16, U.STORAGE)  # the raw claim's targets, for the raw apply
    big, cmode = (int(raw[0].big), raw[1].mode) if raw else (0, 0)
    for step, count, per in (("claim", tuples, 1), ("apply", words, None)):
        kernel = Slices(step, bool(raw))
        groups = -(-count // (kernel.schedule.wg * (per or kernel.schedule.words)))
        params = bufs.params(f"slice {step} params", cut.params(SLICE_PARAMS, count, grid_x(groups, max_dim), big,
                                                                cmode))
        program = compiled(gpu, kernel)
        encoder = gpu.device.create_command_encoder()
        if step == "claim":
            encoder.clear_buffer(claims)
        program.dispatch(encoder, groups, max_dim, program.bind([upd, out, params, axes, norm, status, claims, starts,
                                                                   norm if raw else axes]))
        gpu.queue.submit([encoder.finish()])
        if step == "claim":
            bad, dup = struct.unpack("<2I", read_small(gpu, bufs, status, 8))
            if raw and bad != NO_BAD:
                raise bad_index(raw[0], raw[1], bad)
            if dup:
                raise OpError(f"{op}: {DUPLICATES}")


# Lines a line-per-invocation scatter needs (its parallelism), else the rounds run: LINES_AT_LEAST or
# more always take the lines (256 was measured on lavapipe, Mesa 22.3), fewer than FEWEST_LINES the rounds
# (one line is a 1-D scatter); between, choose.py's ``scatter_lines`` answers, measured per adapter on
# SCATTER_LINES lines (gpu/schedule_cases.py).
LINES_AT_LEAST, FEWEST_LINES = 256, 16


def _line(gpu: Gpu, table: Table, reduce: Reduce, bits: int) -> tuple[int, int] | None:
    """(updates per line, their stride) where ScatterElements with a
    reduction can apply each line of updates along its axis in one
    invocation (``_by_lines``), or None."""
    axis = table.extra.get("line_axis")
    if reduce.kind == "none" or axis is None or not table.size or arithmetic(reduce, bits) is None:
        return None
    line = table.shape[axis]
    lines = table.size // line
    if lines < FEWEST_LINES or (lines < LINES_AT_LEAST and answer(gpu, "scatter_lines") == "rounds"):
        return None
    inner = 1
    for d in table.shape[axis + 1:]:
        inner *= d
    return line, inner


def _group(bits: int, line: tuple[int, int], dlen: int) -> int | None:
    """Lines an invocation takes so that it alone writes their words: 1 for
    32- and 64-bit elements, and for narrower ones whose lines are whole
    words (the axis last, its length ``dlen`` a multiple of a word's
    elements); a word's elements when ``inner`` (the stride along the axis)
    is a multiple of them (that many adjacent lines share each word); else
    None (no data line length known, ``dlen`` 0, or lines that share words
    otherwise: the ``shared`` kernel, one line an invocation)."""
    per = 32 // bits if bits < 32 else 1
    if per == 1:
        return 1
    if not dlen:
        return None
    if line[1] == 1 and dlen % per == 0:
        return 1
    return per if line[1] % per == 0 else None


def _by_lines(gpu: Gpu, bufs: Buffers, out: Any, upd: Any, targets: Any, data: Data, n: int, reduce: Reduce,
              line: tuple[int, int], max_dim: int, dlen: int = 0, raw: tuple[Index, Check] | None = None) -> None:
    """Every line of updates applied in index order by one invocation, a
    group of adjacent lines (``_group``) an invocation (gpu/render/scatter.py's
    ``Lines``: no rounds). ``dlen``: the data's axis length, and
    ``targets`` the checked indices (the updates have the data's shape but
    for the axis); ``raw`` (index, check): ``targets`` the raw int64
    indices, checked by the lines themselves (BadIndex after the dispatch,
    before anything is read back)."""
    big, cmode = (int(raw[0].big), raw[1].mode) if raw else (0, 0)
    status = bufs.status()
    group = _group(data.bits, line, dlen)
    kernel = Lines(arithmetic(reduce, data.bits) or "", data.bits, shared=group is None)
    invocations = n // line[0] // (group or 1)
    groups = -(-invocations // kernel.WG)
    params = bufs.params("line params", LINE_PARAMS.pack(
        count=invocations, groups_x=grid_x(groups, max_dim), mode=2 if raw else 1 if dlen else 0, line=line[0],
        inner=line[1], dlen=dlen, iswap=big, cmode=cmode, group=group or 1, **apply_head(reduce, data.bits)))
    lines = compiled(gpu, kernel)
    bufs.counts["shared lines" if kernel.shared else "word lines"] = 1  # tests look
    encoder = gpu.device.create_command_encoder()
    lines.dispatch(encoder, groups, max_dim, lines.bind([targets, params, upd, out, status, targets]))
    gpu.queue.submit([encoder.finish()])
    if raw:
        bad = struct.unpack("<I", read_small(gpu, bufs, status, 4))[0]
        if bad != NO_BAD:
            raise bad_index(raw[0], raw[1], bad)
