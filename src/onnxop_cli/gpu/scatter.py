"""Scatters on the device: copy the data, then apply the updates in index
order; the output is read back once no update is pending.

    data ──(re-layout / swap: the indexed gather)──▶ out;  updates ──▶ upd
    indices ──the index check (gpu/render/indexed.py)──▶ norm ──offsets mode──▶ targets
    the rounds (``rounds``), or one kernel that applies every update (``_kernel``)

The rounds (gpu/render/scatter.py's ``Apply`` and ``Pass``): the k-th update
of one element goes in round k, updates of distinct elements in parallel:
onnx.reference's result (it loops in index order) on every run, with no
atomics whose order matters. One round per update of the most-updated
element, in batches of 1, 2, 4 .. 64 with a readback after each; with
reduction none a second round is two updates of one element, refused before
the readback. ``Reduce`` says how updates combine (``arithmetic`` and
``apply_head``: the kernels' variant and the host's NaN facts for it).

The kernels that skip the rounds: ScatterND with reduction none whose slices
are whole words (gpu/render/slices.py's plan; ``_by_slices``: a claim per index
tuple, then a word copy), and ScatterElements with a reduction over enough
lines (``_by_lines``: an invocation applies a line's updates in index order;
only they can name its elements).

Data (or its claims, 4 bytes an element) past one storage binding goes a
band at a time (``scatter_banded``; the updates and their targets still fit
one binding each): the targets are found once, into the whole data; per
band, the band pass keeps the updates whose targets lie in it, the rounds
run and the band goes to the sink: the same bytes as one pass (the slice and
line kernels address the whole data: not there). With reduction none every
band's one round runs first, so a duplicate is refused before any band is written.
"""

from __future__ import annotations

import functools
import math
import operator
import struct
from dataclasses import dataclass
from typing import Any

from ..errors import OpError
from . import indexed_buffers
from .render import slices
from .buffers import dispatch_limit, reset_status
from .choose import answer
from .device import Gpu
from .indexed import (
    NO_BAD, Check, Data, Index, Sink, Table, Buffers, check_data, fits, Gather,
    LAST, NONNEG, WRAP, to_sink, binding_limit, check_indices, read_small, read_status, reads_raw,
    row_strides, U, launch,
)
from .program import compiled, grid_x
from .render.scatter import ARITH, PASSES, ROUND_PARAMS, Apply, Lines, Pass
from .render.scatter_slices import Slices

DUPLICATES = "two updates write one element with reduction none (the result is undefined); use distinct indices or a reduction"


@dataclass(frozen=True)
class Reduce:
    """How updates combine: ``kind`` none, add, mul, max or min; ``cls`` the arithmetic
    class (0 unsigned, 1 signed, 2 IEEE float, 3 bool, 4 bfloat16: ops/indexed_plan.py);
    ``numpy`` np.maximum's NaN rule (ScatterND) or Python's max() (ScatterElements)."""

    kind: str = "none"
    cls: int = 0
    numpy: bool = True
    inner: int = 0  # elements numpy combines in one call: 0 scalars (ScatterElements), else a slice's


def arithmetic(reduce: Reduce, bits: int) -> str | None:
    """The kernels' arithmetic (the key of gpu/render/scatter.py's ARITH that declares ``reduce``'s kind
    and class at ``bits``), or None where it has none (float64 add and mul: no f64 in WGSL, the op refuses them)."""
    return next((op for op, a in ARITH.items() if a.kind == reduce.kind and reduce.cls in a.classes
                 and bits in a.widths and a.numpy in (None, reduce.numpy)), None)


@functools.lru_cache(maxsize=None)
def nan_first(kind: str, bits: int, inner: int, bfloat: bool = False) -> bool:
    """Whether, of two NaN operands, numpy's ``+``/``*`` keeps the first (the
    element's) -- asked of this host's numpy (ml_dtypes for bfloat16), on
    scalars (``inner`` 0) or on arrays of ``inner`` elements, as the reference
    combines them: its scalar and SIMD loops answer differently on x86. The
    two NaNs differ in sign, which is all bfloat16 keeps of a NaN."""
    import numpy as np

    if kind not in ("add", "mul") or bits not in (16, 32):
        return False
    if bfloat:
        import ml_dtypes

        t, q, u = ml_dtypes.bfloat16, (0x7FC1, 0xFFC2), np.uint16
    elif bits == 32:
        t, q, u = np.float32, (0x7FC00001, 0xFFC00002), np.uint32
    else:
        t, q, u = np.float16, (0x7E01, 0xFE02), np.uint16
    a, b = (np.full(max(inner, 1), v, dtype=u).view(t) for v in q)
    scalar, in_place = (operator.mul, operator.imul) if kind == "mul" else (operator.add, operator.iadd)
    with np.errstate(invalid="ignore"):  # the reference's ``*``/``+`` on scalars, ``*=``/``+=`` on its slices
        r = scalar(a[0], b[0]) if inner == 0 else in_place(a.copy(), b)[0]
    sign = 1 << (bits - 1)
    return int(np.asarray(r).view(u)) & sign == q[0] & sign


def _default_nan() -> int:
    import numpy as np

    with np.errstate(invalid="ignore"):
        nan = np.float32(np.inf) - np.float32(np.inf)
    return int(np.array(nan, dtype="<f4").view("<u4"))


def apply_head(reduce: Reduce, bits: int) -> dict[str, int]:
    """The kernels' Params ``default_nan`` and ``nan_first`` for ``reduce`` on elements of ``bits``."""
    return {"default_nan": _default_nan(), "nan_first": int(
        reduce.cls in (2, 4) and nan_first(reduce.kind, bits, reduce.inner, reduce.cls == 4))}


def rounds(gpu: Gpu, bufs: Buffers, out: Any, upd: Any, targets: Any, data: Data, n: int,
           reduce: Reduce, op: str, max_dim: int, band: tuple[int, int] | None = None) -> None:
    """Apply the updates, round after round, until none is pending: batches
    of 1, 2, 4 .. 64 rounds, each over the updates the last one left (gathered
    by the compact pass), a readback of what is left after each.
    ``band`` (first data element, elements): ``out`` holds only that band of
    the data, and only the updates whose targets lie in it are applied
    (the band pass marks the others done; ``scatter_banded``)."""
    # new buffers are zeroed: no element claimed, no update done
    claim = bufs.new("claims", 4 * (data.size if band is None else band[1]), U.STORAGE)
    done = bufs.new("done", 4 * (-(-n // 32)), U.STORAGE)
    status = bufs.result("status")
    none = reduce.kind == "none"
    # two lists, the pending ones and the next; none runs one batch and never reads a list: a stand-in next
    lists = [bufs.new("pending", 4 * n if k == 0 or not none else 4, U.STORAGE) for k in range(2)]
    wg = bufs.counts["rounds wg"] = int(answer(gpu, "rounds_wg"))  # the passes' and the apply's: one grid
    head = apply_head(reduce, data.bits)
    if band is not None:  # every update outside the band marked done, the others' targets rebased onto it
        band_targets = bufs.new("band targets", 4 * n, U.STORAGE)
        launch(bufs, Pass("band", wg), n, 1, max_dim, "band params",
               dict(count=n, direct=1, base=band[0], size=band[1], **head),
               [targets, claim, done, None, lists[0], status, band_targets])
        targets = band_targets
    passes = {name: compiled(gpu, Pass(name, wg)) for name in PASSES if name != "band"}
    small = bufs.new("round params", ROUND_PARAMS.size, U.UNIFORM | U.COPY_DST)  # the passes' and the apply's
    arith = arithmetic(reduce, data.bits)
    assert arith is not None, f"the op refuses reduction {reduce.kind} on {data.bits}-bit class {reduce.cls}"
    k_apply = compiled(gpu, Apply(arith, data.bits, wg))
    count, direct, current = n, 1, 0
    batch = 1
    while True:
        groups = -(-count // wg)
        gpu.queue.write_buffer(small, 0, ROUND_PARAMS.pack(count=count, groups_x=grid_x(groups, max_dim),
                                                           direct=direct, base=0, size=0, **head))
        reset_status(gpu, status, 0)
        ls, nxt = lists[current], lists[1 - current]
        bound = [targets, claim, done, small, ls, status, nxt]
        # a round: claim, apply, reset (none is one round: the apply kernel flags a second update); then compact
        one = [(passes["claim"], bound), (k_apply, [targets, claim, done, small, upd, out, status, ls])]
        steps = one * batch if none else [*one, (passes["reset"], bound)] * batch + [(passes["compact"], bound)]
        encoder = gpu.device.create_command_encoder()
        for kernel, resources in steps:
            kernel.dispatch(encoder, groups, max_dim, kernel.bind(resources))
        gpu.queue.submit([encoder.finish()])
        _, pending, left = struct.unpack("<3I", read_small(gpu, bufs, status, 12))
        if not pending:
            return
        if none:
            raise OpError(f"{op}: {DUPLICATES}")
        count, direct, current = left, 0, 1 - current
        batch = min(batch * 2, 64)


def band_elements(bits: int, cap: int) -> int:
    """Elements of a band: its data and its claims each within ``cap`` bytes, whole words."""
    return max(128, min(cap * 8 // bits, cap // 4) // 128 * 128)


class Fill:
    """A band of the data into a buffer, row-major and little-endian: read
    straight from the source when it is so already, else re-laid (and
    swapped) by the gather kernel from the data's windows."""

    def __init__(self, gpu: Gpu, bufs: Buffers, data: Data, max_dim: int, band: int) -> None:
        from .resident import DeviceBuffer

        self.gpu, self.data = gpu, data
        self.direct = not data.swap and data.row_major
        self.on_device = isinstance(data.source, DeviceBuffer)  # a graph's intermediate: copied on the device
        if self.on_device and self.direct:
            return
        if self.direct:
            self.staging = bufs.new("upload", min(indexed_buffers.UPLOAD_STEP, band * data.bits // 8),
                                    U.MAP_WRITE | U.COPY_SRC)
            return
        self.windows = indexed_buffers.plan_windows(gpu, bufs, data.source, data.size, data.bits,
                                                    binding_limit(gpu), data.nbytes, band * data.bits // 8,
                                                    stream=False)
        ident = Table.over(data.shape, data.strides or row_strides(data.shape), (0,) * len(data.shape))
        self.kernel = Gather(bufs, self.windows.first, bufs.new("norm", 16, U.STORAGE), ident, max_dim, None,
                             data.bits, data.swap)

    def __call__(self, out: Any, b0: int, bn: int) -> None:
        d = self.data
        if self.on_device and self.direct:
            from .resident import device_copy

            encoder = self.gpu.device.create_command_encoder()
            device_copy(encoder, d.source, b0 * d.bits // 8, out, 0, (bn * d.bits + 7) // 8)
            self.gpu.queue.submit([encoder.finish()])
            return
        if self.direct:
            nbytes = (bn * d.bits + 7) // 8
            indexed_buffers.write(self.gpu, out, indexed_buffers.Slice(d.source, b0 * d.bits // 8, nbytes),
                                  nbytes, self.staging)
            return
        for w, (buf, w0, wn) in enumerate(self.windows.each()):
            self.kernel.run(out, b0, bn, None if self.windows.single else (buf, w0, wn, w > 0))


def scatter_banded(gpu: Gpu, bufs: Buffers, data: Data, upd: Any, norm: Any, table: Table, reduce: Reduce,
                   op: str, max_dim: int, sink: Sink, cap: int) -> int:
    """``scatter_indexed``'s work, band by band (see the module), the
    updates already in ``upd`` (None: there are none); returns the bytes written."""
    n = table.size
    band = band_elements(data.bits, cap)
    bands = [(b0, min(band, data.size - b0)) for b0 in range(0, data.size, band)]
    out = bufs.result("scatter band", (band * data.bits + 7) // 8)
    fill = Fill(gpu, bufs, data, max_dim, band)
    targets = None
    if n:
        targets = bufs.new("targets", 4 * n, U.STORAGE | U.COPY_SRC)
        Gather(bufs, upd, norm, table, max_dim).run(targets, 0, n, offsets=True)

    def band_rounds(b: tuple[int, int]) -> None:
        sub = bufs.child()  # a band's claims and lists, freed before the next band's
        try:
            rounds(gpu, sub, out, upd, targets, data, n, reduce, op, max_dim, band=b)
        finally:
            sub.release()

    if n and reduce.kind == "none":  # two updates of one element: refused before any band is written
        for b in bands:
            band_rounds(b)
    written = 0
    for b0, bn in bands:
        fill(out, b0, bn)
        if n:
            band_rounds((b0, bn))
        written += to_sink(gpu, bufs, out, (bn * data.bits + 7) // 8, sink)
    return written


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
    slice_copy: bool = True,
    mapped: bool | None = None,
    fold: bool = True,
    binding_bytes: int | None = None,
) -> int:
    """Copy ``data`` and apply ``updates`` (their targets by ``table``, whose
    shape is the updates') in index order; stream the result into ``sink``;
    return the bytes written. reduction none with two updates on one element
    is an OpError, raised before anything reaches the sink. ``slice_copy``
    False: the rounds, never the slice and line kernels. ``mapped``: as
    gather_indexed's. ``fold`` (False: the separate check pass, for
    comparisons): those kernels read and check the raw int64 indices
    themselves (``_reads_raw``; a bad one: nothing reaches the sink). Data
    (or its claims, 4 bytes an element) past one binding (or
    ``binding_bytes``, which tests force small) goes a band at a time
    (``scatter_banded``)."""
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
            # the kernel is chosen before the check only where it could read the raw indices itself
            asked = fold and not banded and data.size > 0 and n > 0 and _reads_raw(gpu, index, check)
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
    """``data`` on the device, row-major and little-endian (uploaded as it is,
    or re-laid as a band of its whole: ``Fill``);
    ``output``: the buffer the result is read from."""
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
    """ScatterElements' line kernel (``_by_lines``): ``line`` updates a line,
    ``inner`` apart; ``dlen`` the data's axis length where the updates have
    the data's shape but for the axis (the lines read the indices
    themselves), else 0 (they read the targets, computed first)."""

    line: int
    inner: int
    dlen: int


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


def _reads_raw(gpu: Gpu, index: Index | None, check: Check | None) -> bool:
    """Whether a kernel that reads every index can read and check the raw
    ones itself (the whole-slice scatter's raw steps, the line kernel's mode
    2): int64 indices it ``reads_raw``, a wrap or non-negative check."""
    return (index is not None and check is not None and index.wide and check.mode in (WRAP, NONNEG)
            and reads_raw(gpu, index, check))


def _apply(gpu: Gpu, bufs: Buffers, out: Any, upd: Any, norm: Any, table: Table, data: Data, updates: Data,
           reduce: Reduce, op: str, max_dim: int, kernel: slices.Slices | _Lines | None,
           raw: tuple[Index, Check] | None) -> None:
    """The updates applied to ``out`` by ``kernel`` (``_kernel``), or in
    rounds. ``raw`` (index, check): ``norm`` holds the raw indices, which
    the kernel checks."""
    if isinstance(kernel, slices.Slices):
        _by_slices(gpu, bufs, out, upd, norm, kernel, data.nbytes // 4, updates.nbytes // 4, op, max_dim, raw)
        return
    if not _direct(kernel):  # each update's data element first (the gather kernel's offsets mode)
        targets = bufs.new("targets", 4 * updates.size, U.STORAGE | U.COPY_SRC)
        Gather(bufs, out, norm, table, max_dim).run(targets, 0, updates.size, offsets=True)
        norm = targets
    if kernel is None:
        rounds(gpu, bufs, out, upd, norm, data, updates.size, reduce, op, max_dim)
    else:
        _by_lines(gpu, bufs, out, upd, norm, updates.size, data.bits, reduce, kernel, max_dim, raw)


def _by_slices(gpu: Gpu, bufs: Buffers, out: Any, upd: Any, norm: Any, cut: slices.Slices, data_words: int,
               words: int, op: str, max_dim: int, raw: tuple[Index, Check] | None = None) -> None:
    """reduction none by whole slices: gpu/render/scatter_slices.py's claim, then its apply.
    ``raw`` (index, check): ``norm`` is the raw int64 index tensor, checked by the claim."""
    tuples = words // cut.width
    claims = bufs.new("slice claims", 4 * (data_words // cut.width), U.STORAGE)  # zeroed, as a new buffer is
    status = bufs.status(NO_BAD if raw else 0)
    axes = bufs.holding("axes", cut.blob)
    starts = bufs.new("slice starts", 4 * tuples if raw else 16, U.STORAGE)  # the raw claim's targets, for the raw apply
    big, cmode = (int(raw[0].big), raw[1].mode) if raw else (0, 0)
    for step, count in (("claim", tuples), ("apply", words)):
        kernel = Slices(step, bool(raw))
        launch(bufs, kernel, count, 1 if step == "claim" else kernel.schedule.words, max_dim, f"slice {step} params",
               dict(words=count, iswap=big, cmode=cmode, **cut.fields),
               [upd, out, None, axes, norm, status, claims, starts, norm if raw else axes])
        if step == "claim" and read_status(gpu, bufs, status, raw):
            raise OpError(f"{op}: {DUPLICATES}")


def _group(bits: int, line: _Lines) -> int | None:
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
    if not line.dlen:
        return None
    if line.inner == 1 and line.dlen % per == 0:
        return 1
    return per if line.inner % per == 0 else None


def _by_lines(gpu: Gpu, bufs: Buffers, out: Any, upd: Any, targets: Any, n: int, bits: int, reduce: Reduce,
              line: _Lines, max_dim: int, raw: tuple[Index, Check] | None = None) -> None:
    """The ``n`` updates applied a line (or ``_group``'s lines) an invocation
    (gpu/render/scatter.py's ``Lines``). ``targets``: the checked indices where
    ``line.dlen`` is set, else the updates' data elements; ``raw`` (index,
    check): the raw int64 indices, which the lines check."""
    status = bufs.status()
    group = _group(bits, line)
    wg = bufs.counts["lines wg"] = int(answer(gpu, "lines_wg"))
    kernel = Lines(arithmetic(reduce, bits) or "", bits, shared=group is None, wg=wg)
    invocations = n // line.line // (group or 1)
    launch(bufs, kernel, invocations, 1, max_dim, "line params", dict(
        count=invocations, mode=2 if raw else 1 if line.dlen else 0, line=line.line, inner=line.inner,
        dlen=line.dlen, iswap=int(raw[0].big) if raw else 0, cmode=raw[1].mode if raw else 0, group=group or 1,
        **apply_head(reduce, bits)), [targets, None, upd, out, status, targets])
    bufs.counts["shared lines" if kernel.shared else "word lines"] = 1  # tests look
    if raw:
        read_status(gpu, bufs, status, raw)
