"""Run an output's pieces (core/pieces.py, planned by ops/family.py) through ``shaders/pieces.wgsl``.

    for each band of the output (at most one binding):
        clear dst; for each piece (cut to the band, and to windows of its
        sources that fit one binding): upload the windows, one dispatch
        readback dst --sink-->

The sink sees the output in order, band by band, as with the gather kernel
(gpu/gather.py); host and GPU memory are a few buffers of at most one binding
whatever the sizes. A piece's source is any input (so Concat of 300 inputs
binds two buffers, not 300), and the window uploaded is only the part the
piece reads. Cutting is pure index arithmetic (``cut``, ``fit``). A part
whose innermost axis is contiguous in its source and in dst runs
``shaders/pieces_runs.wgsl`` (gpu/runs.py: whole words) in the same pass.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Optional, Sequence

from ..core.pieces import Piece, forwards
from .device import Gpu
from . import runs
from .buffers import WORD, BufferUsage, MapMode, ShaderStage, can_map, env_poison, grid, round_up
from .kernels import shader_const

SHADER = "pieces.wgsl"
DEFAULT_BAND = 64 << 20  # bytes of a window at most (and of a band, below BAND)
# Bands of at most 16 MiB, as gpu/where.py's: Pad's 64 MiB float32 output (one band of 64 MiB against
# four) ran at 2.0-2.3x the gather kernel's GB/s against 4.4-4.7x, Concat's 2.6-2.8x against 2.6-3.4x
# (Mesa 22.3, load 3.6-3.8, benchmarks/family_ops.py kernel, 2026-12-01)
BAND = 16 << 20
PARAMS_BYTES = 96  # sizeof(Params) in pieces.wgsl
SLOTS = 16  # axes entries per piece (ranks up to 16); a select piece's other strides follow them
BATCH = 128  # dispatches per submission

Sink = Callable[[memoryview], None]


# ------------------------------------------------------------ cutting (pure)


def span(shape: Sequence[int], strides: Sequence[int], offset: int) -> tuple[int, int]:
    lo = hi = offset
    for d, s in zip(shape, strides):
        lo += min(0, (d - 1) * s)
        hi += max(0, (d - 1) * s)
    return lo, hi


def _sub(p: Piece, start: int, stop: int) -> Piece:
    """``p`` restricted to [start, stop) along its first axis."""
    tri = p.tri
    if tri is not None:  # k counts from the piece's origin: fold the new origin in
        k, r, c, upper = tri
        tri = (k + (start if r == 0 else 0) - (start if c == 0 else 0), r, c, upper)
    return replace(
        p, shape=(stop - start,) + p.shape[1:],
        dst_offset=p.dst_offset + start * p.dst_strides[0],
        src_offset=p.src_offset + (start * p.src_strides[0] if p.src is not None else 0),
        mask_offset=p.mask_offset + (start * p.mask_strides[0] if p.mask is not None else 0),
        other_offset=p.other_offset + (start * p.other_strides[0] if p.other is not None else 0),
        tri=tri,
    )


def _drop_first(p: Piece) -> Piece:
    """A piece whose first axis has one index, without that axis (a triangle
    row or column on it is then constant, already folded into k)."""
    tri = p.tri
    if tri is not None:
        k, r, c, upper = tri
        tri = (k, -1 if r <= 0 else r - 1, -1 if c <= 0 else c - 1, upper)
    return replace(
        p, shape=p.shape[1:], dst_strides=p.dst_strides[1:],
        src_strides=p.src_strides[1:] if p.src is not None else (),
        mask_strides=p.mask_strides[1:] if p.mask is not None else (),
        other_strides=p.other_strides[1:] if p.other is not None else (),
        tri=tri,
    )


def cut(p: Piece, start: int, stop: int) -> Iterator[Piece]:
    """The parts of ``p`` whose output elements lie in [start, stop), offsets
    made band-relative. A part that straddles an edge is cut along its first
    axis: the rows wholly inside are one part, a straddling row is cut again.
    A piece with an axis that writes leftwards (Pad's reflect and wrap repeat
    runs right to left) is turned forwards first (core/pieces.forwards), so
    its rows walk the output forwards: such a piece straddling a band edge
    (outputs past one band, 64 MiB) failed here with an internal error."""
    if p.size == 0:
        return
    lo, hi = span(p.shape, p.dst_strides, p.dst_offset)
    if hi < start or lo >= stop:
        return
    if lo >= start and hi < stop:
        yield replace(p, dst_offset=p.dst_offset - start)
        return
    if any(ds < 0 and d > 1 for d, ds in zip(p.shape, p.dst_strides)):
        turned = forwards(p)
        if turned is not None:
            yield from cut(turned, start, stop)
            return
    d0, s0 = p.shape[0], p.dst_strides[0]
    assert d0 == 1 or s0 > 0, "a piece's first axis walks the output forwards"
    rlo, rhi = span(p.shape[1:], p.dst_strides[1:], p.dst_offset)
    i = 0
    while i < d0:
        row_lo, row_hi = rlo + i * s0, rhi + i * s0
        if row_lo >= stop:
            return
        if row_hi < start:
            i = max(i + 1, -(-(start - rhi) // s0))
            continue
        if row_lo >= start and row_hi < stop:
            j = min(d0 - 1, (stop - 1 - rhi) // s0)
            part = _sub(p, i, j + 1)
            yield replace(part, dst_offset=part.dst_offset - start)
            i = j + 1
            continue
        yield from cut(_drop_first(_sub(p, i, i + 1)), start, stop)
        i += 1


def fit(p: Piece, window: int) -> Iterator[Piece]:
    """``p`` cut along its first axis until the source and mask ranges it
    reads each fit ``window`` elements."""
    def reach(q: Piece) -> int:
        n = 0
        if q.src is not None:
            lo, hi = span(q.shape, q.src_strides, q.src_offset)
            n = max(n, hi - lo + 1)
        if q.mask is not None:
            lo, hi = span(q.shape, q.mask_strides, q.mask_offset)
            n = max(n, hi - lo + 1)
        if q.other is not None:
            lo, hi = span(q.shape, q.other_strides, q.other_offset)
            n = max(n, hi - lo + 1)
        return n

    if reach(p) <= window or not p.shape:
        yield p
        return
    if p.shape[0] == 1:
        yield from fit(_drop_first(p), window)
        return
    half = p.shape[0] // 2
    yield from fit(_sub(p, 0, half), window)
    yield from fit(_sub(p, half, p.shape[0]), window)


# ------------------------------------------------------------ running


@dataclass
class Source:
    """An input's bytes (a sources.ByteSource) with its big-endian swap unit."""

    data: Any
    swap: int = 0


def run_pieces(
    gpu: Gpu,
    sources: Sequence[Optional[Source]],
    sink: Sink,
    *,
    pieces: Sequence[Piece],
    count: int,
    bits: int,
    binding_bytes: Optional[int] = None,
    max_groups_per_dim: Optional[int] = None,
    poison: Optional[int] = None,
) -> int:
    """Stream the ``count`` output elements (``bits`` wide) that ``pieces``
    tile into ``sink``, in order; returns the bytes written."""
    if count == 0:
        return 0
    from .gather import binding_limit

    cap = min(binding_bytes or DEFAULT_BAND, binding_limit(gpu))
    cap = max(WORD, cap - cap % WORD)
    band_bytes = min(cap, BAND, round_up((count * bits + 7) // 8, WORD))
    band = band_bytes * 8 // bits
    # each band's parts (the pieces cut to it); windows as large as the largest part reads (plus a
    # word each side), at most one binding: a window sized for a whole piece (Pad's 64 MiB source,
    # read a 16 MiB band at a time) cost its first touch (Mesa 25: 0.16 s against 0.06 s)
    bands = [(start, min(band, count - start)) for start in range(0, count, band)]
    pieces = [runs.flatten(p) for p in pieces]  # a fill of the whole output: one long row
    cuts = [[c for p in pieces for c in cut(p, start, start + n)] for start, n in bands]
    reach = max([_extent(c, bits) for parts in cuts for c in parts] + [0])
    window_bytes = min(cap, round_up(reach + 2 * WORD, 16))  # whole vec4s for gpu/runs.py
    if poison is None:
        poison = env_poison()
    masked = any(p.mask is not None for p in pieces)
    selects = any(p.other is not None for p in pieces)
    from .resident import DeviceBuffer, DeviceSink

    # CPU adapters: the windows and dst mapped themselves, no staging copies (as gpu/where.py)
    mapped = can_map(gpu) and not isinstance(sink, DeviceSink) and not any(
        s is not None and isinstance(s.data, DeviceBuffer) for s in sources)
    run = _Run(gpu, band_bytes, window_bytes, max_groups_per_dim, masked, selects, mapped=mapped,
               by_runs=runs.usable(band_bytes, window_bytes))
    written = 0
    try:
        for (start, n), band_cuts in zip(bands, cuts):
            nbytes = (n * bits + 7) // 8
            parts = [q for c in band_cuts for q in fit(c, run.window_elements(bits))]
            run.band(sources, parts, bits, round_up(nbytes, 4), poison)
            run.drain(sink, nbytes)
            written += nbytes
    finally:
        run.release()
    return written


def _extent(p: Piece, bits: int) -> int:
    """Bytes of the source (or mask) range a piece reads."""
    n = 0
    if p.size and p.src is not None:
        lo, hi = span(p.shape, p.src_strides, p.src_offset)
        n = (hi - lo + 1) * bits // 8 + 1
    if p.size and p.mask is not None:
        lo, hi = span(p.shape, p.mask_strides, p.mask_offset)
        n = max(n, hi - lo + 1)
    if p.size and p.other is not None:
        lo, hi = span(p.shape, p.other_strides, p.other_offset)
        n = max(n, (hi - lo + 1) * bits // 8 + 1)
    return n


def one_kernel_bands(gpu: Gpu, binding_bytes: Optional[int], count: int, bits: int, most: int) -> tuple[int, int]:
    """(window cap, band bytes) of a run of one kernel over ``count``
    elements of ``bits`` (gpu/where.py, gpu/one_hot.py): windows of at most
    one binding (``binding_bytes`` forces smaller), bands of at most ``most``
    bytes and no more than the output, whole words each."""
    from .gather import binding_limit

    cap = min(binding_bytes or DEFAULT_BAND, binding_limit(gpu))
    cap = max(WORD, cap - cap % WORD)
    return cap, min(cap, most, round_up((count * bits + 7) // 8, WORD))


class _Run:
    def __init__(self, gpu: Gpu, band_bytes: int, window_bytes: int, max_groups_per_dim: Optional[int],
                 masked: bool = True, selects: bool = True, *, shader: str = SHADER, entry: str = "main",
                 sizes: Optional[tuple[int, int, int]] = None, shared_upload: int = 0,
                 mapped: bool = False, by_runs: bool = False) -> None:
        """Buffers and a bind group for one run. ``shader``, ``entry``: the
        kernel bound to them (shaders/where.wgsl binds the same layout);
        ``sizes``: the src, mask and other windows' bytes (else
        ``window_bytes`` each); ``shared_upload``: the bytes of one staging
        buffer for the three (each upload then submitted before the next is
        written), else one each; ``mapped`` (adapters that ``can_map``, host
        sources and sinks only): the windows and dst are mapped themselves,
        no staging buffers and no copies (gpu/copy.py's mapped mode);
        ``by_runs``: parts that gpu/runs.py takes run its kernel. ``taken``
        counts the parts each kernel ran (tests check the path)."""
        self.gpu, self.cap, self.masked = gpu, window_bytes, masked
        self.taken = {"runs": 0, "general": 0, "mapped": mapped}
        self.max_dim = max_groups_per_dim or gpu.limits.get("max-compute-workgroups-per-dimension", 65535)
        self.wg = shader_const(SHADER, "WG") * shader_const(SHADER, "ELEMS")  # elements per workgroup
        self.stride = max(256, gpu.limits.get("min-uniform-buffer-offset-alignment", 256))
        # no mask (all but Where), no select piece: a word, bound but never read
        src_bytes, mask_bytes, other_bytes = sizes or (
            window_bytes, window_bytes if masked else WORD, window_bytes if selects else WORD)
        U = BufferUsage
        self.buffers: list[Any] = []
        with gpu.errors("allocating pieces buffers"):
            self.pipeline, layout = gpu.pipeline_with_layout(shader, _layout_entries(), entry)
            self.runs = runs.pipelines(gpu, _layout_entries()) if by_runs else None
            window_usage = U.STORAGE | (U.MAP_WRITE if mapped else U.COPY_DST)
            if mapped:
                self.upload = self.upload_mask = self.upload_other = None
            elif shared_upload:
                self.upload = self._buffer("upload", shared_upload, U.MAP_WRITE | U.COPY_SRC)
                self.upload_mask = self.upload_other = self.upload
            else:
                self.upload = self._buffer("upload", src_bytes, U.MAP_WRITE | U.COPY_SRC)
                self.upload_mask = self._buffer("upload-mask", mask_bytes, U.MAP_WRITE | U.COPY_SRC)
                self.upload_other = self._buffer("upload-other", other_bytes, U.MAP_WRITE | U.COPY_SRC)
            self.src = self._buffer("src", src_bytes, window_usage)
            self.mask = self._buffer("mask", mask_bytes, window_usage)
            self.other = self._buffer("other", other_bytes, window_usage)
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
            self.axes_bytes = 16 * 2 * SLOTS * BATCH
            self.axes = self._buffer("axes", self.axes_bytes, U.STORAGE | U.COPY_DST)
            self.bind_group = gpu.device.create_bind_group(
                layout=layout,
                entries=[
                    {"binding": 0, "resource": {"buffer": self.src, "offset": 0, "size": src_bytes}},
                    {"binding": 1, "resource": {"buffer": self.mask, "offset": 0, "size": mask_bytes}},
                    {"binding": 2, "resource": {"buffer": self.dst, "offset": 0, "size": band_bytes}},
                    {"binding": 3, "resource": {"buffer": self.params, "offset": 0, "size": PARAMS_BYTES}},
                    {"binding": 4, "resource": {"buffer": self.axes, "offset": 0, "size": self.axes_bytes}},
                    {"binding": 5, "resource": {"buffer": self.other, "offset": 0, "size": other_bytes}},
                ],
            )

    def window_elements(self, bits: int) -> int:
        # a window starts up to one word before the first element it needs
        return (self.cap - 2 * WORD) * 8 // (max(bits, 8) if self.masked else bits)  # the mask is 8-bit

    def _buffer(self, label: str, size: int, usage: int) -> Any:
        buf = self.gpu.device.create_buffer(label=label, size=size, usage=usage)
        self.buffers.append(buf)
        return buf

    def release(self) -> None:
        for buf in self.buffers:
            try:
                buf.destroy()
            except Exception:  # noqa: BLE001 - best effort; the real error is raised
                pass

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
            w = _reach(part)
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

    def _upload(self, buffer_up: Any, buffer: Any, source: Source, lo: int, hi: int, bits: int, encoder: Any) -> int:
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
        into = buffer if buffer_up is None else buffer_up
        with gpu.errors("upload"):
            gpu.wait(into.map_async(MapMode.WRITE, 0, round_up(n, 4)), "upload")
            mapped = into._experimental_get_mapped_range(0, round_up(n, 4))
        try:
            source.data.readinto(start, mapped[:n])
        finally:
            mapped.release()
            with gpu.errors("upload"):
                into.unmap()
        if buffer_up is not None:
            encoder.copy_buffer_to_buffer(buffer_up, 0, buffer, 0, round_up(n, 4))
        return first

    def _dispatch(self, sources: Sequence[Optional[Source]], group: list[Piece], window, bits: int) -> None:
        gpu = self.gpu
        head = group[0]
        with gpu.errors("pieces dispatch"):
            encoder = gpu.device.create_command_encoder()
            src_first = mask_first = other_first = 0
            swap = other_swap = 0
            if head.src is not None:
                source = sources[head.src]
                assert source is not None
                swap = source.swap
                src_first = self._upload(self.upload, self.src, source, window[0], window[1], bits, encoder)
            if head.mask is not None:
                source = sources[head.mask]
                assert source is not None
                mask_first = self._upload(self.upload_mask, self.mask, source, window[2], window[3], 8, encoder)
            if head.other is not None:
                source = sources[head.other]
                assert source is not None
                other_swap = source.swap
                other_first = self._upload(self.upload_other, self.other, source, window[4], window[5], bits, encoder)
            compute = encoder.begin_compute_pass()
            axes = bytearray()
            slot = 0
            general = None  # the pipeline set last was the general kernel's
            for i, p in enumerate(group):
                rank = len(p.shape)
                if self.runs is not None and runs.eligible(p, bits, swap, SLOTS):
                    records, entries, grids = runs.encode(p, bits, src_first, i * 2 * SLOTS, self.max_dim)
                    gpu.queue.write_buffer(self.params, slot * self.stride, records[:runs.RECORD])
                    gpu.queue.write_buffer(self.params, (slot + 1) * self.stride, records[runs.RECORD:])
                    axes += entries + bytes(16 * 2 * SLOTS - len(entries))
                    runs.dispatch(compute, self.runs, self.bind_group, (slot * self.stride, (slot + 1) * self.stride),
                                  grids)
                    slot += 2
                    general = False
                    self.taken["runs"] += 1
                    continue
                if not general:
                    compute.set_pipeline(self.pipeline)
                    general = True
                self.taken["general"] += 1
                fill = (p.fill + bytes(16))[:16]
                tri = p.tri or (0, 0xFFFFFFFF, 0xFFFFFFFF, True)
                # |col - row| < 2**31 in one dispatch: a k beyond that keeps all or nothing, as its clamp does
                tri = (min(max(tri[0], -(2**31)), 2**31 - 1), *tri[1:])
                pred = 1 if p.mask is not None else (0 if p.tri is None else (2 if tri[3] else 3))
                groups = -(-p.size // self.wg)
                gx, gy = grid(groups, self.max_dim)
                at = i * 2 * SLOTS
                record = struct.pack(
                    "<16I4I4I",
                    p.size, gx, rank, at, bits, swap if p.src is not None else 0,
                    0 if p.src is not None else 1, pred, 1 if p.otherwise_fill else 0,
                    (p.src_offset - src_first) & 0xFFFFFFFF, p.dst_offset & 0xFFFFFFFF,
                    (p.mask_offset - mask_first) & 0xFFFFFFFF, tri[0] & 0xFFFFFFFF,
                    tri[1] & 0xFFFFFFFF, tri[2] & 0xFFFFFFFF, 0,
                    *struct.unpack("<4I", fill),
                    1 if p.other is not None else 0, (p.other_offset - other_first) & 0xFFFFFFFF,
                    other_swap if p.other is not None else 0, 0,
                )
                gpu.queue.write_buffer(self.params, slot * self.stride, record)
                ss = p.src_strides if p.src is not None else (0,) * rank
                ms = p.mask_strides if p.mask is not None else (0,) * rank
                entries = b"".join(
                    struct.pack("<4I", d, s & 0xFFFFFFFF, t & 0xFFFFFFFF, m & 0xFFFFFFFF)
                    for d, s, t, m in zip(p.shape, ss, p.dst_strides, ms)
                )
                os_ = p.other_strides if p.other is not None else ()
                others = b"".join(struct.pack("<4I", s & 0xFFFFFFFF, 0, 0, 0) for s in os_)
                axes += entries + bytes(16 * SLOTS - len(entries)) + others + bytes(16 * SLOTS - len(others))
                compute.set_bind_group(0, self.bind_group, [slot * self.stride])
                compute.dispatch_workgroups(gx, gy, 1)
                slot += 1
            compute.end()
            gpu.queue.write_buffer(self.axes, 0, bytes(axes))
            gpu.queue.submit([encoder.finish()])

    def dispatch_one(self, words: int, per_group: int, record: Callable[[int], bytes], encoder: Any = None) -> None:
        """The bound kernel over ``words`` output words at ``per_group`` a
        workgroup, one dispatch, its params ``record(gx)``; ``encoder``: one
        the uploads were recorded on (submitted with the dispatch)."""
        gx, gy = grid(-(-words // per_group), self.max_dim)
        self.gpu.queue.write_buffer(self.params, 0, record(gx))
        encoder = encoder or self.gpu.device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(self.pipeline)
        compute.set_bind_group(0, self.bind_group, [0])
        compute.dispatch_workgroups(gx, gy, 1)
        compute.end()
        self.gpu.queue.submit([encoder.finish()])

    def drain(self, sink: Sink, nbytes: int) -> None:
        gpu = self.gpu
        n4 = round_up(nbytes, 4)
        from .resident import DeviceSink

        if isinstance(sink, DeviceSink):  # a graph's intermediate: stays on the device
            sink.take(self.dst, nbytes)
            return
        with gpu.errors("readback"):
            if self.readback is not self.dst:  # mapped: dst is read where it lies
                encoder = gpu.device.create_command_encoder()
                encoder.copy_buffer_to_buffer(self.dst, 0, self.readback, 0, n4)
                gpu.queue.submit([encoder.finish()])
            gpu.wait(self.readback.map_async(MapMode.READ, 0, n4), "readback")
        try:
            sink(self.readback.read_mapped(0, n4, copy=False)[:nbytes])
        finally:
            with gpu.errors("readback"):
                self.readback.unmap()


def _reach(p: Piece) -> tuple[int, int, int, int, int, int]:
    s = span(p.shape, p.src_strides, p.src_offset) if p.src is not None else (0, 0)
    m = span(p.shape, p.mask_strides, p.mask_offset) if p.mask is not None else (0, 0)
    o = span(p.shape, p.other_strides, p.other_offset) if p.other is not None else (0, 0)
    return (*s, *m, *o)


def _merge(a, b):
    if a is None:
        return b
    return (min(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), max(a[3], b[3]), min(a[4], b[4]), max(a[5], b[5]))


def _fits(w, limit: int) -> bool:
    return all(w[k + 1] - w[k] + 1 <= limit for k in (0, 2, 4))


def _same_inputs(a: Piece, b: Piece) -> bool:
    return a.src == b.src and a.mask == b.mask and a.other == b.other


def _layout_entries() -> list[dict]:
    stage = ShaderStage.COMPUTE
    return [
        {"binding": 0, "visibility": stage, "buffer": {"type": "read-only-storage"}},
        {"binding": 1, "visibility": stage, "buffer": {"type": "read-only-storage"}},
        {"binding": 2, "visibility": stage, "buffer": {"type": "storage"}},
        {"binding": 3, "visibility": stage, "buffer": {"type": "uniform", "has_dynamic_offset": True}},
        {"binding": 4, "visibility": stage, "buffer": {"type": "read-only-storage"}},
        {"binding": 5, "visibility": stage, "buffer": {"type": "read-only-storage"}},
    ]
