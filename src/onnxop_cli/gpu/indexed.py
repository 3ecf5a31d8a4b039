"""Indexed gathers and scatters on the device: the index tensor is read, checked and wrapped there (the
check and the indexed gather, gpu/render/indexed.py), never through numpy; the output is read back only
when every index was in range.

    data ──upload──▶ src ─┐
    indices ──upload──▶ raw ──check──▶ norm (u32, wrapped) + first bad position
                          └─indexed gather─▶ dst (a band) ──readback──▶ sink

What each op reads is one ``Table`` (gpu/index_table.py), built by ops/ from the ONNX shapes; this module
only moves bytes. Scatters (gpu/scatter.py) use the same check, and the gather to re-lay their data and
compute their targets. A gather whose output is one band skips the check pass: its kernel reads the raw
indices and checks each as it uses it, and the band is read back only if none was bad. Which kernel runs a
table: gpu/indexed_variants.py.

Limits, checked here with one-line errors: the index tensor (as u32) and, for a scatter, the updates
and their targets each fit in one storage binding; an output has fewer than 2^32 elements. The data may
be larger than a binding (a gather's in windows, gpu/indexed_buffers.py; a scatter's a band at a time,
gpu/scatter_claims.py), and so may a gather's output (in bands).
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from typing import Any

from ..errors import OpError
from ..core.sources import ByteSource
from .buffers import binding_limit, dispatch_limit
from .device import Gpu
from .engines.base import BufferUsage as U
from .gather import check_width
from . import indexed_variants as iv
from .indexed_buffers import Buffers, Slice, launch, read_small, to_sink  # noqa: F401 - also imported from here
from .indexed_buffers import plan_windows, whole
from .bands import Band, Sink, stream
from .resident import DeviceSink
from .index_table import NONNEG, RANGE, WRAP, Check, Index, Shaped, Table, is_row_major, row_strides  # noqa: F401 - also imported from here
from .indexed_variants import Gather, variant  # noqa: F401 - also imported from here
from .render.indexed import NO_BAD
from .render.indexed import Check as CheckKernel

LAST = "indexed-last"  # gpu.cache key: the last call's transfer counts (indexed_buffers.KEYS)


@dataclass(frozen=True)
class Data(Shaped):
    """A tensor's bytes: row-major elements of ``bits``; ``swap`` the byte-swap unit of a big-endian source
    (0: little-endian)."""

    source: ByteSource
    shape: tuple[int, ...]
    bits: int
    swap: int = 0
    strides: tuple[int, ...] | None = None  # element strides of the storage; None: row-major

    @property
    def row_major(self) -> bool:
        return self.strides is None or is_row_major(self.shape, self.strides)

    @property
    def nbytes(self) -> int:
        return (self.size * self.bits + 7) // 8


class BadIndex(OpError):
    """An index out of its range, found on the device."""

    def __init__(self, message: str, position: tuple[int, ...], value: int) -> None:
        super().__init__(message)
        self.position, self.value = position, value


def fits(gpu: Gpu, nbytes: int, what: str, op: str) -> None:
    limit = binding_limit(gpu)
    if nbytes > limit:
        raise OpError(f"{op}: {what} takes {nbytes} bytes on the device, more than one storage binding ({limit})")


# ------------------------------------------------------------------ indices


def check_indices(gpu: Gpu, bufs: Buffers, index: Index, check: Check, max_dim: int) -> Any:
    """Upload ``index``, check and wrap it on the device: the buffer of u32 offsets, or BadIndex naming the
    first index out of range."""
    count, width = index.size, index.width
    if count >= NO_BAD:
        raise OpError(f"{check.op}: {check.name} has {count} elements; the device indexes at most {NO_BAD - 1}")
    if index.source.nbytes < count * width:
        raise OpError(f"{check.op}: {check.name} holds {index.source.nbytes} bytes, not {count * width}")
    fits(gpu, count * 4, check.name, check.op)
    if any(d >= 1 << 32 for d in check.bounds):
        raise OpError(f"{check.op}: an axis of {max(check.bounds)} elements is more than the device indexes")
    norm = bufs.new("norm", count * 4, U.STORAGE | U.COPY_DST)
    if count == 0:
        return norm
    status = bufs.status()
    bounds = bufs.holding("bounds", struct.pack(f"<{len(check.bounds)}I", *check.bounds))
    render = CheckKernel()
    wg = render.schedule.wg
    chunk = max(wg, (binding_limit(gpu) // width) // wg * wg)
    for first in range(0, count, chunk):
        n = min(chunk, count - first)
        raw = bufs.child()
        try:
            piece = Slice(index.source, first * width, n * width)
            buf = raw.upload("indices", piece, n * width)
            launch(raw, render, n, 1, max_dim, "index params", dict(
                count=n, wide=int(index.wide), period=len(check.bounds), mode=check.mode, first=first,
                swap=int(index.big), inner=max(1, check.inner)), [buf, norm, status, None, bounds])
        finally:
            raw.release()
    bufs.counts["check passes"] += 1
    read_status(gpu, bufs, status, (index, check))
    return norm


def read_status(gpu: Gpu, bufs: Buffers, status: Any, raw: tuple[Index, Check] | None) -> int:
    """status[1] (what a kernel counted there, the scatter's claims); BadIndex first where the raw indices
    ``raw`` (Index, Check) were checked and the check left the smallest bad position in status[0]."""
    bad, second = struct.unpack("<2I", read_small(gpu, bufs, status, 8))
    if raw and bad != NO_BAD:
        raise bad_index(raw[0], raw[1], bad)
    return second


def reads_raw(gpu: Gpu, index: Index, check: Check) -> bool:
    """Whether a kernel can read and check ``index``'s raw indices itself: some, all there, within one
    binding, each axis under 2^32 elements."""
    nbytes = index.size * index.width
    return (0 < index.size < NO_BAD and nbytes <= binding_limit(gpu) and index.source.nbytes >= nbytes
            and all(d < 1 << 32 for d in check.bounds))


def _can_fuse(gpu: Gpu, index: Index, check: Check, table: Table, band: int, fuse: bool) -> bool:
    """Whether the gather kernel can check the indices as it reads them: an output of one band (so all are
    read before any byte is read back) that is not empty (so every index is read: an index no element reads
    is checked by the check pass), the raw indices ``reads_raw``. Not a separable table's: its few indices
    are each read by many elements, and one check pass then plain reads cost less than a check at every
    read (Resize 1x3x512x512 float32 x2 and x4 on lavapipe and llvmpipe: 0.16 and 0.52-0.61 CPU s a call,
    where checked as read 0.20 and 0.78-0.80)."""
    looks = (table.mode == 0 and table.lookups and not table.separable) or table.mode == 1
    return bool(fuse and looks and 0 < table.size <= band and reads_raw(gpu, index, check))


def check_only(gpu: Gpu, index: Index, check: Check, max_groups_per_dim: int | None = None) -> None:
    """Check ``index`` on the device (BadIndex if one is out of range), keeping nothing."""
    max_dim = dispatch_limit(gpu, max_groups_per_dim)
    bufs = Buffers(gpu, mapped=True)
    try:
        with gpu.errors(f"{check.op} index check"):
            check_indices(gpu, bufs, index, check, max_dim)
    finally:
        bufs.release()


def bad_index(index: Index, check: Check, position: int) -> BadIndex:
    """The message for the index at flat ``position`` (its one value read from the host's source)."""
    import numpy as np

    raw = bytearray(index.width)
    index.source.readinto(position * index.width, memoryview(raw))
    value = struct.unpack((">" if index.big else "<") + ("q" if index.wide else "i"), raw)[0]
    where = tuple(int(i) for i in np.unravel_index(position, index.shape, order="F" if index.fortran else "C"))
    d = check.bounds[check.bound_of(position)]
    about = f" for {check.what(check.bound_of(position))}" if check.what else ""
    text = ", ".join(map(str, where))
    return BadIndex(f"{check.op}: {check.name}[{text}] = {value} is out of range {valid_range(check.mode, d)}{about}",
                    where, value)


def valid_range(mode: int, d: int) -> str:
    """The indices an axis of size ``d`` takes under check ``mode``, as the messages say it."""
    return f"[{-d}, {d - 1}]" if mode == WRAP else (f"[0, {d}]" if mode == RANGE else f"[0, {d - 1}]")


# ------------------------------------------------------------------ gather


def check_data(data: Data, op: str) -> None:
    """ValueError for an element width or swap unit the kernels do not take; OpError for data shorter than
    its shape or of 2^32 elements or more (it may be larger than a binding: it goes in windows)."""
    check_width(data.bits, data.swap, "the indexed kernels take")
    if data.source.nbytes < data.nbytes:
        raise OpError(f"{op}: the data holds {data.source.nbytes} bytes, not {data.nbytes}")
    if data.size >= 1 << 32:
        raise OpError(f"{op}: the data has {data.size} elements; the device indexes at most 2^32 - 1")


def gather_indexed(
    gpu: Gpu,
    data: Data,
    index: Index | None,
    check: Check | None,
    table: Table,
    sink: Sink,
    *,
    binding_bytes: int | None = None,
    window_bytes: int | None = None,
    max_groups_per_dim: int | None = None,
    poison: int | None = None,
    fuse: bool = True,
    slice_copy: bool = True,
    mapped: bool | None = None,
    stream_bytes: int | None = None,
) -> int:
    """Stream the table's output (row-major, little-endian, elements of ``data.bits``) into ``sink`` in
    bands of at most one binding (``binding_bytes``: smaller); BadIndex before any byte reaches the sink.
    The source goes in windows of at most one binding (``window_bytes``: smaller), resident or streamed
    (gpu/indexed_buffers.py; ``stream_bytes`` forces passes of that many bytes). ``slice_copy`` False keeps
    a table off the whole-slice kernel (gpu/render/slices.py). ``mapped`` (None: where the adapter ``can_map``;
    False: staged, for comparisons): gpu/indexed_buffers.py; the transfer counts are left in
    ``gpu.cache[LAST]``. Returns the bytes written."""
    op = check.op if check else "gather"
    check_data(data, op)
    count = table.size
    if count >= 1 << 32:
        raise OpError(f"{op}: the output has {count} elements; the device indexes at most 2^32 - 1")
    max_dim = dispatch_limit(gpu, max_groups_per_dim)
    bufs = Buffers(gpu, mapped=mapped is None or mapped)
    gpu.cache[LAST] = bufs.counts
    try:
        with gpu.errors(f"{op} on the device"):
            cap = min(binding_bytes or (64 << 20), binding_limit(gpu))
            band = max(128, (cap * 8 // data.bits) // 128 * 128)  # whole words, whatever the width
            window_cap = min(window_bytes or binding_limit(gpu), binding_limit(gpu))
            can_fuse = index is not None and _can_fuse(gpu, index, check, table, band, fuse)
            plain = index is not None and slice_copy and not data.swap  # what the variant kernels read
            if index is not None and not can_fuse:
                norm = check_indices(gpu, bufs, index, check, max_dim)
            else:
                norm = bufs.new("norm", 16, U.STORAGE)
            if count == 0:
                return 0
            windows = plan_windows(
                gpu, bufs, data.source, data.size, data.bits, window_cap, (count * data.bits + 7) // 8,
                band * data.bits // 8, stream_bytes)
            one = iv.plan(gpu, table, data.bits, check, index, can_fuse, windows.single) if plain else None
            fused = checked = None
            if can_fuse:  # the raw indices (unless the pairs kernel uploads them itself, in bands), a status word
                own = one is not None and one.uploads_own(index.size // 2)
                fused = (None if own else bufs.upload("indices", index.source, index.size * index.width),
                         bufs.status(), index, check)
                checked = functools.partial(read_status, gpu, bufs, fused[1], (index, check))
            fill = (iv.fill_one(bufs, one, windows.first, fused, norm, data.bits, max_dim) if one is not None
                    else Gather(bufs, windows.first, norm, table, max_dim, fused, data.bits, data.swap).run)
            # a pass's bands (gpu/indexed_buffers.py's rule), each read back through a readback made at its drain
            outs = [Band(bufs, whole(min(band, count) * data.bits // 8 + 16), bufs.mapped and not isinstance(
                sink, DeviceSink), staged=False) for _ in range(min(windows.pass_bands, -(-count // band)))]
            return stream(outs, count, band, data.bits,
                          lambda parts: windows.run_each(fill, [(out.dst, e0, n) for out, e0, n in parts]),
                          lambda out, n: to_sink(gpu, bufs, out.dst, n, sink), poison, checked)
    finally:
        bufs.release()
