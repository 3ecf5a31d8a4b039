"""One run of the general pieces kernel (gpu/render/pieces.py), or of a
kernel binding its layout (Where's select, OneHot): its
buffers and bind group, the uploads of each group of parts' windows, the
dispatches (the general kernel, or gpu/runs.py's for whole-word runs) and
the readback of each band. gpu/pieces.py plans the bands and parts;
gpu/elementwise.py's ``run_select`` and gpu/one_hot.py drive one kernel
over the same buffers (``dispatch_one``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from ..core.pieces import Piece, ranges
from ..core.region import Load
from . import runs
from .buffers import WORD, BufferUsage, Owned, read_through, round_up, write_mapped
from .device import Gpu
from .program import compiled, grid_x
from .render.frame import Frame
from .render.piece_rows import ROWS_PARAMS
from .render.pieces import AXIS, GENERAL, OTHER, PARAMS

M = 0xFFFFFFFF  # strides as two's complement u32 words
SLOTS = 16  # axes entries per piece (ranks up to 16); a select piece's other strides follow them
BATCH = 128  # dispatches per submission
# (src, mask, dst, params at a dynamic offset, axes, other): every kernel of a run (runs.py's, the select, OneHot's)
KINDS = ("read-only-storage", "read-only-storage", "storage", "uniform+offset", "read-only-storage",
         "read-only-storage")

Sink = Callable[[memoryview], None]


@dataclass
class Source:
    """An input's bytes (a sources.ByteSource) with its big-endian swap unit."""

    data: Any
    swap: int = 0


class Run(Owned):
    def __init__(self, gpu: Gpu, band_bytes: int, window_bytes: int, max_groups_per_dim: Optional[int],
                 masked: bool = True, selects: bool = True, *, kernel: Frame = GENERAL,
                 sizes: Optional[tuple[int, int, int]] = None, shared_upload: int = 0,
                 mapped: bool = False, by_runs: bool = False) -> None:
        """Buffers and a bind group for one run of ``kernel`` (a rendered kernel of this layout).
        ``sizes``: the src, mask and other windows' bytes (else ``window_bytes`` each); ``shared_upload``:
        the bytes of one staging buffer for the three (each upload submitted before the next), else one
        each; ``mapped`` (``can_map`` adapters, host sources and sinks): the windows and dst mapped
        themselves, no staging; ``by_runs``: parts gpu/runs.py takes run its kernels. ``taken`` counts the
        parts each kernel ran (tests check the path)."""
        self.gpu, self.cap, self.masked = gpu, window_bytes, masked
        self.taken = {"runs": 0, "general": 0, "mapped": mapped}
        self.max_dim = max_groups_per_dim or gpu.limits.get("max-compute-workgroups-per-dimension", 65535)
        self.wg = GENERAL.schedule.wg * GENERAL.schedule.each  # elements per workgroup
        self.stride = max(256, gpu.limits.get("min-uniform-buffer-offset-alignment", 256))
        # no mask (all but Where), no select piece: a word, bound but never read
        src_bytes, mask_bytes, other_bytes = sizes or (
            window_bytes, window_bytes if masked else WORD, window_bytes if selects else WORD)
        U = BufferUsage
        self.buffers: list[Any] = []
        with gpu.errors("allocating pieces buffers"):
            self.kernel = compiled(gpu, kernel, KINDS)
            self.runs = runs.kernels(gpu, KINDS) if by_runs else None
            window_usage = U.STORAGE | (U.MAP_WRITE if mapped else U.COPY_DST)
            up = U.MAP_WRITE | U.COPY_SRC
            shared = self._buffer("upload", shared_upload, up) if shared_upload and not mapped else None
            self.upload, self.upload_mask, self.upload_other = (
                None if mapped else shared if shared is not None else self._buffer(label, size, up)
                for label, size in (("upload", src_bytes), ("upload-mask", mask_bytes), ("upload-other", other_bytes)))
            self.src, self.mask, self.other = (self._buffer(name, size, window_usage) for name, size in (
                ("src", src_bytes), ("mask", mask_bytes), ("other", other_bytes)))
            if mapped:
                self.dst = self._buffer("dst", band_bytes, U.STORAGE | U.MAP_READ | U.COPY_DST)
                self.readback = self.dst
                # wgpu zero-fills, when a buffer is mapped, the bytes it never saw written; a kernel
                # write it failed to track would read back as zeros: clearing dst once marks it all
                encoder = gpu.device.create_command_encoder()
                encoder.clear_buffer(self.dst, 0, band_bytes)
                gpu.queue.submit([encoder.finish()])
            else:
                self.dst = self._buffer("dst", band_bytes, U.STORAGE | U.COPY_SRC | U.COPY_DST)
                self.readback = self._buffer("readback", band_bytes, U.MAP_READ | U.COPY_DST)
            # a part by runs takes two records (its two dispatches)
            self.params = self._buffer("params", self.stride * 2 * BATCH, U.UNIFORM | U.COPY_DST)
            # one binding for every kernel of this layout: the largest of their Params
            params_bytes = max(kernel.PARAMS.size, PARAMS.size, ROWS_PARAMS.size)
            self.axes_bytes = 16 * 2 * SLOTS * BATCH
            self.axes = self._buffer("axes", self.axes_bytes, U.STORAGE | U.COPY_DST)
            self.bind_group = self.kernel.bind([
                (self.src, 0, src_bytes), (self.mask, 0, mask_bytes), (self.dst, 0, band_bytes),
                (self.params, 0, params_bytes), (self.axes, 0, self.axes_bytes), (self.other, 0, other_bytes),
            ])

    def window_elements(self, bits: int) -> int:
        # a window starts up to one word before the first element it needs
        return (self.cap - 2 * WORD) * 8 // (max(bits, 8) if self.masked else bits)  # the mask is 8-bit

    def band(self, sources: Sequence[Optional[Source]], parts: list[Piece], bits: int, n4: int, poison) -> None:
        gpu = self.gpu
        with gpu.errors("pieces band"):
            encoder = gpu.device.create_command_encoder()
            if poison is not None:
                gpu.queue.write_buffer(self.dst, 0, bytes([poison]) * n4)
            else:
                encoder.clear_buffer(self.dst, 0, n4)
            gpu.queue.submit([encoder.finish()])
        # consecutive parts from one source share an upload while its window fits
        group: list[Piece] = []
        window: Optional[tuple[int, int, int, int, int, int]] = None  # src lo, hi, mask lo, hi, other lo, hi
        for part in parts:
            w = ranges(part)
            merged = _merge(window, w) if group and _same_inputs(group[0], part) else None
            limit = self.window_elements(bits)
            if merged is not None and _fits(merged, limit) and len(group) < BATCH:
                group.append(part)
                window = merged
                continue
            if group:
                self._dispatch(sources, group, window, bits)
            group, window = [part], w
        if group:
            self._dispatch(sources, group, window, bits)

    def upload_window(self, buffer_up: Any, buffer: Any, source: Source, lo: int, hi: int, bits: int,
                      encoder: Any) -> int:
        """Upload source elements [lo, hi] from the word that holds ``lo``
        into ``buffer`` (through ``buffer_up``, or straight into ``buffer``
        mapped when ``buffer_up`` is None); returns the element the window
        starts at."""
        per_word = 32 // bits if bits < 32 else 1
        first = lo - lo % max(per_word, 1) if bits < 32 else lo
        start = first * bits // 8
        end = min(-(-(hi + 1) * bits // 8), source.data.nbytes)
        n = end - start
        gpu = self.gpu
        from .resident import DeviceBuffer, device_copy

        if isinstance(source.data, DeviceBuffer):  # a graph's intermediate: copied on the device
            device_copy(encoder, source.data, start, buffer, 0, n)
            return first
        write_mapped(gpu, buffer if buffer_up is None else buffer_up, source.data, start, n)
        if buffer_up is not None:
            encoder.copy_buffer_to_buffer(buffer_up, 0, buffer, 0, round_up(n, 4))
        return first

    def _dispatch(self, sources: Sequence[Optional[Source]], group: list[Piece], window, bits: int) -> None:
        gpu, head = self.gpu, group[0]
        with gpu.errors("pieces dispatch"):
            encoder = gpu.device.create_command_encoder()
            first, swap = [0, 0, 0], [0, 0, 0]  # the src, mask and other windows' first elements, swap units
            for k, (load, up, buf, width) in enumerate(((head.src, self.upload, self.src, bits),
                                                         (head.mask, self.upload_mask, self.mask, 8),
                                                         (head.other, self.upload_other, self.other, bits))):
                if load is not None:
                    source = sources[load.input]
                    assert source is not None
                    swap[k] = source.swap
                    first[k] = self.upload_window(up, buf, source, window[2 * k], window[2 * k + 1], width, encoder)
            compute = encoder.begin_compute_pass()
            axes = bytearray()
            slot = 0
            for i, p in enumerate(group):
                at = i * 2 * SLOTS
                if self.runs is not None and runs.eligible(p, bits, swap[0], SLOTS, lambda: runs.short_rows(gpu)):
                    records, entries, groups = runs.encode(p, bits, first[0], at, self.max_dim)
                    kernels, path = self.runs, "runs"
                else:
                    records, entries, groups = _general(p, bits, first, swap, at, self.wg, self.max_dim)
                    kernels, path = (self.kernel,), "general"
                axes += entries + bytes(16 * 2 * SLOTS - len(entries))
                for kernel, record, n in zip(kernels, records, groups):
                    gpu.queue.write_buffer(self.params, slot * self.stride, record)
                    kernel.record(compute, n, self.max_dim, self.bind_group, [slot * self.stride])
                    slot += 1
                self.taken[path] += 1
            compute.end()
            gpu.queue.write_buffer(self.axes, 0, bytes(axes))
            gpu.queue.submit([encoder.finish()])

    def dispatch_one(self, words: int, per_group: int, record: Callable[[int], bytes], encoder: Any = None) -> None:
        """The bound kernel over ``words`` output words at ``per_group`` a
        workgroup, one dispatch, its params ``record(gx)``; ``encoder``: one
        the uploads were recorded on (submitted with the dispatch)."""
        groups = -(-words // per_group)
        self.gpu.queue.write_buffer(self.params, 0, record(grid_x(groups, self.max_dim)))
        encoder = encoder or self.gpu.device.create_command_encoder()
        self.kernel.dispatch(encoder, groups, self.max_dim, self.bind_group, [0])
        self.gpu.queue.submit([encoder.finish()])

    def drain(self, sink: Sink, nbytes: int) -> None:
        from .resident import DeviceSink

        if isinstance(sink, DeviceSink):  # a graph's intermediate: stays on the device
            sink.take(self.dst, nbytes)
            return
        read_through(self.gpu, self.dst, self.readback, nbytes, sink)  # mapped: dst is read where it lies


def _merge(a, b):
    return b if a is None else tuple((min, max)[k % 2](x, y) for k, (x, y) in enumerate(zip(a, b)))


def _fits(w, limit: int) -> bool:
    return all(w[k + 1] - w[k] + 1 <= limit for k in (0, 2, 4))


def _same_inputs(a: Piece, b: Piece) -> bool:
    return all((x and x.input) == (y and y.input) for x, y in ((a.src, b.src), (a.mask, b.mask), (a.other, b.other)))


def _general(p: Piece, bits: int, first: list[int], swap: list[int], at: int, per_group: int,
             max_dim: int) -> tuple[tuple[bytes], bytes, tuple[int]]:
    """(params record, axes entries, workgroups) of part ``p`` on the general kernel."""
    fill = (p.fill + bytes(16))[:16]
    tri = p.tri or (0, M, M, True)
    # |col - row| < 2**31 in one dispatch: a k beyond that keeps all or nothing, as its clamp does
    k = min(max(tri[0], -(2**31)), 2**31 - 1)
    pred = 1 if p.mask is not None else (0 if p.tri is None else (2 if tri[3] else 3))
    groups = -(-p.size // per_group)
    record = PARAMS.pack(
        count=p.size, groups_x=grid_x(groups, max_dim), rank=len(p.shape), at=at, bits=bits, swap=swap[0],
        mode=0 if p.src is not None else 1, pred=pred, otherwise=1 if p.otherwise_fill else 0,
        src_base=_base(p.src, first[0]), dst_base=p.dst_offset & M, mask_base=_base(p.mask, first[1]), tri_k=k & M,
        tri_row=tri[1] & M, tri_col=tri[2] & M, fill=[int.from_bytes(fill[j:j + 4], "little") for j in (0, 4, 8, 12)],
        has_other=1 if p.other is not None else 0, other_base=_base(p.other, first[2]), other_swap=swap[2])
    zeros = (0,) * len(p.shape)
    strides = [x.at.strides if x is not None else zeros for x in (p.src, p.mask)]
    entries = AXIS.layout.pack_rows({"dim": d, "src": s & M, "dst": t & M, "mask": m & M}
                                    for d, s, t, m in zip(p.shape, strides[0], p.dst_strides, strides[1]))
    others = OTHER.layout.pack_rows({"stride": s & M} for s in (p.other.at.strides if p.other is not None else ()))
    return (record,), entries + bytes(16 * SLOTS - len(entries)) + others, (groups,)


def _base(x: Optional[Load], first: int) -> int:
    """Where a load starts in its uploaded window (0 where the piece has none of it)."""
    return (x.at.offset - first) & 0xFFFFFFFF if x is not None else 0
