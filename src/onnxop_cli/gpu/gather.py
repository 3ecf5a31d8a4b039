"""Stream a strided view of a tensor, row-major and little-endian, through
``shaders/gather.wgsl``.

    source --readinto--> upload --copy--> src (a window) --gather--> dst (a band)
           --copy--> readback --sink-->

Any size, in bounded memory: the output is cut into *bands*, contiguous runs
of the output that fit one storage binding, and each band is written whole in
the dst buffer before it goes to the sink, so the sink sees the output in
order (no spill file, no random-access output: a band is the unit of both).
A band is cut into at most 2 x rank *boxes* (a range of one axis times all the
axes after it, the way a row-major range decomposes); the source elements a
band reads lie in one range, and that range is uploaded in *windows* of at
most one binding. Each (window, box) pair is one dispatch, which writes the
box's elements whose source lies in the window. So:

- views that read the source roughly in order (Fortran order, big-endian,
  slices, broadcasts, tiles, transposes that keep the big axes in place)
  upload each source byte about once;
- a band whose source range exceeds a binding (a transpose of a tensor larger
  than one binding, whose every output row reads the whole source) uploads
  that range once per band: the work grows with (output / band) x (source /
  window), the price of reading the source only in contiguous runs.

Host memory is four buffers of at most one binding each (upload, src, dst,
readback), whatever the tensor's size; GPU memory the same.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ..tensor import ByteSource
from .device import Gpu
from .kernels import WORD, grid, round_up, shader_const

SHADER = "gather.wgsl"
BITS = (2, 4, 8, 16, 32, 64, 128)
DEFAULT_BAND = 64 << 20  # bytes of output per band (and of source per window), at most one binding
MAX_ELEMENTS = 1 << 31  # elements per band or window: the kernel indexes them with u32
PARAMS_BYTES = 64  # sizeof(Params) in gather.wgsl
ENV_POISON = "ONNXOP_POISON"  # as for the copy kernel: fill dst before each band

Sink = Callable[[memoryview], None]


@dataclass(frozen=True)
class View:
    """A strided view of a row-major source, counted in ELEMENTS: the output (row-major, shape
    `shape`) element at multi-index i is the source element `offset + sum(i[k] * strides[k])`.
    Strides may be 0 (broadcast) or negative (reversed slices)."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0

    @classmethod
    def row_major(cls, shape: tuple[int, ...]) -> View:
        """A row-major tensor read as it is (the identity view)."""
        strides, step = [], 1
        for d in reversed(shape):
            strides.append(step)
            step *= d
        return cls(tuple(shape), tuple(reversed(strides)))

    @classmethod
    def fortran(cls, shape: tuple[int, ...]) -> View:
        """A column-major tensor read in row-major order."""
        reversed_view = cls.row_major(tuple(reversed(shape)))
        return cls(tuple(shape), tuple(reversed(reversed_view.strides)))

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def span(self) -> tuple[int, int]:
        """The lowest and highest source element the view reads (size > 0)."""
        lo = hi = self.offset
        for d, s in zip(self.shape, self.strides):
            lo += min(0, (d - 1) * s)
            hi += max(0, (d - 1) * s)
        return lo, hi

    def simplified(self) -> View:
        """The same mapping on fewer axes: size-1 axes dropped, and neighbours
        merged where the outer stride is the inner one times the inner dim.
        Never empty: a single element is one axis of one."""
        axes = [(d, s) for d, s in zip(self.shape, self.strides) if d != 1]
        merged: list[tuple[int, int]] = []
        for d, s in reversed(axes):
            if merged and s == merged[-1][1] * merged[-1][0]:
                merged[-1] = (d * merged[-1][0], merged[-1][1])
            else:
                merged.append((d, s))
        merged.reverse()
        if not merged:
            merged = [(1, 1)]
        return View(tuple(d for d, _ in merged), tuple(s for _, s in merged), self.offset)


def binding_limit(gpu: Gpu) -> int:
    return int(gpu.limits.get("max-storage-buffer-binding-size", 128 << 20))


def gather_through_kernel(
    gpu: Gpu,
    source: ByteSource,
    sink: Sink,
    *,
    view: View,
    bits: int,
    swap: int = 0,
    binding_bytes: int | None = None,
    max_groups_per_dim: int | None = None,
    poison: int | None = None,
) -> int:
    """Stream the view's elements, row-major and little-endian, into `sink` (a callable taking
    memoryviews, called in output order) from `source` (a tensor.ByteSource holding the source
    elements row-major; `swap` is the byte-swap unit for big-endian input, 0 for none). `bits`
    is the element width: 2, 4 (packed as ONNX packs them, low bits first), 8, 16, 32, 64, 128.
    Returns the bytes written.

    ``binding_bytes`` caps bands and windows below the device's binding limit
    (tests force it small to run the multi-band and multi-window paths on
    small data); ``poison`` fills dst with that byte before every band, so a
    word the kernel failed to write cannot pass a comparison.
    """
    if bits not in BITS:
        raise ValueError(f"the gather kernel takes elements of {BITS} bits, not {bits}")
    if swap not in (0, 2, 4, 8) or (swap and (bits // 8) % swap) or (swap and bits < 16):
        raise ValueError(f"byte-swap unit {swap} does not divide a {bits}-bit element")
    if len(view.shape) != len(view.strides):
        raise ValueError(f"a view of shape {view.shape} needs {len(view.shape)} strides, not {view.strides}")
    count = view.size
    if count == 0:
        return 0
    available = source.nbytes * 8 // bits
    lo, hi = view.span()
    if lo < 0 or hi >= available:
        raise ValueError(f"the view reads source elements {lo}..{hi}, outside the source's {available}")
    v = view.simplified()
    total = (count * bits + 7) // 8

    cap = min(binding_bytes or DEFAULT_BAND, binding_limit(gpu))
    cap = min(max(WORD, cap - cap % WORD), MAX_ELEMENTS * bits // 8)
    band_bytes = min(cap, round_up(total, WORD))
    band_elems = band_bytes * 8 // bits
    align = max(1, 8 * WORD // bits)  # window starts: whole 16-byte words of the source
    window_elems = min(cap * 8 // bits, round_up(hi - lo + 1 + align, align))
    if poison is None and os.environ.get(ENV_POISON):
        poison = int(os.environ[ENV_POISON], 0) & 0xFF
    max_dim = max_groups_per_dim or gpu.limits.get("max-compute-workgroups-per-dimension", 65535)
    per_group = shader_const(SHADER, "WG") * shader_const(SHADER, "WORDS")
    stride_align = max(256, gpu.limits.get("min-uniform-buffer-offset-alignment", 256))
    records = 2 * len(v.shape)  # boxes per band, at most

    import wgpu

    U = wgpu.BufferUsage
    device, queue = gpu.device, gpu.queue
    buffers: list[Any] = []
    with gpu.errors("allocating gather buffers"):
        pipeline, layout = gpu.pipeline_with_layout(SHADER, _layout_entries())

        def buffer(label: str, size: int, usage: int) -> Any:
            buf = device.create_buffer(label=label, size=size, usage=usage)
            buffers.append(buf)
            return buf

        src_size = window_elems * bits // 8
        upload = buffer("upload", src_size, U.MAP_WRITE | U.COPY_SRC)
        src = buffer("src", src_size, U.STORAGE | U.COPY_DST)
        dst = buffer("dst", band_bytes, U.STORAGE | U.COPY_SRC | U.COPY_DST)
        readback = buffer("readback", band_bytes, U.MAP_READ | U.COPY_DST)
        params = buffer("params", stride_align * records, U.UNIFORM | U.COPY_DST)
        axes_bytes = b"".join(struct.pack("<IqI", d & 0xFFFFFFFF, s, 0) for d, s in zip(v.shape, v.strides))
        axes_buf = buffer("axes", round_up(len(axes_bytes), WORD), U.STORAGE | U.COPY_DST)
        queue.write_buffer(axes_buf, 0, axes_bytes)
        bind_group = device.create_bind_group(
            layout=layout,
            entries=[
                {"binding": 0, "resource": {"buffer": src, "offset": 0, "size": src_size}},
                {"binding": 1, "resource": {"buffer": dst, "offset": 0, "size": band_bytes}},
                {"binding": 2, "resource": {"buffer": params, "offset": 0, "size": PARAMS_BYTES}},
                {"binding": 3, "resource": {"buffer": axes_buf, "offset": 0, "size": axes_buf.size}},
            ],
        )
    poison_block = bytes([poison]) * band_bytes if poison is not None else None

    def dispatch_boxes(boxes: list[_Box], band: int, w_lo: int, w_elems: int) -> None:
        """Upload the window, then one dispatch per box that reads from it."""
        byte_lo = w_lo * bits // 8
        n = min(-(-(w_lo + w_elems) * bits // 8), source.nbytes) - byte_lo
        with gpu.errors("upload"):
            gpu.wait(upload.map_async(wgpu.MapMode.WRITE), "upload")
            mapped = upload._experimental_get_mapped_range(0, src_size)
        try:
            source.readinto(byte_lo, mapped[:n])
        finally:
            mapped.release()
            with gpu.errors("upload"):
                upload.unmap()
        with gpu.errors("gather dispatch"):
            encoder = device.create_command_encoder()
            encoder.copy_buffer_to_buffer(upload, 0, src, 0, round_up(n, 4))
            compute = encoder.begin_compute_pass()
            compute.set_pipeline(pipeline)
            for i, box in enumerate(boxes):
                first, words = box.words(bits)
                gx, gy = grid(-(-words // per_group), max_dim)
                keep = int(box.lo < w_lo or box.hi >= w_lo + w_elems)
                base = (box.origin - w_lo) & ((1 << 64) - 1)
                record = struct.pack(
                    "<14IQ", words, gx, first, box.e0, box.count, band, bits, swap,
                    len(v.shape), box.axis, box.extent, w_elems, keep, 0, base,
                )
                queue.write_buffer(params, i * stride_align, record)
                compute.set_bind_group(0, bind_group, [i * stride_align])
                compute.dispatch_workgroups(gx, gy, 1)
            compute.end()
            queue.submit([encoder.finish()])

    written = 0
    try:
        for start in range(0, count, band_elems):
            band = min(band_elems, count - start)
            nbytes = (band * bits + 7) // 8
            boxes = list(_boxes(v, start, start + band))
            b_lo = min(b.lo for b in boxes)
            b_hi = max(b.hi for b in boxes)
            if poison_block is not None:
                queue.write_buffer(dst, 0, poison_block)
            for w_lo in range(b_lo - b_lo % align, b_hi + 1, window_elems):
                w_elems = min(window_elems, available - w_lo)
                # a box's dispatch needs its own params record until the
                # submit: each window is one submit of at most `records` boxes
                touching = [b for b in boxes if b.lo < w_lo + w_elems and b.hi >= w_lo]
                if touching:
                    dispatch_boxes(touching, band, w_lo, w_elems)
            n4 = round_up(nbytes, 4)
            with gpu.errors("readback"):
                encoder = device.create_command_encoder()
                encoder.copy_buffer_to_buffer(dst, 0, readback, 0, n4)
                queue.submit([encoder.finish()])
                gpu.wait(readback.map_async(wgpu.MapMode.READ, 0, n4), "readback")
            try:
                sink(readback.read_mapped(0, n4, copy=False)[:nbytes])
            finally:
                with gpu.errors("readback"):
                    readback.unmap()
            written += nbytes
    finally:
        for buf in buffers:
            try:
                buf.destroy()
            except Exception:  # noqa: BLE001 - best effort cleanup; the real error is raised
                pass
    return written


@dataclass(frozen=True)
class _Box:
    """Output elements [start + e0, start + e0 + count) of a band: axis ``axis``
    from some index for ``extent`` steps, all of each later axis. ``origin`` is
    the source element of its first element; ``lo``..``hi`` its source range."""

    e0: int
    count: int
    axis: int
    extent: int
    origin: int
    lo: int
    hi: int

    def words(self, bits: int) -> tuple[int, int]:
        """(first dst word, words) the box's dispatch writes."""
        if bits >= 32:
            per = bits // 32
            return self.e0 * per, self.count * per
        per = 32 // bits
        first = self.e0 // per
        return first, (self.e0 + self.count - 1) // per - first + 1


def _boxes(v: View, start: int, end: int) -> Iterator[_Box]:
    """Output elements [start, end) as boxes: at each step the outermost axis
    whose whole inner block starts here and still fits, as far along it as fits."""
    rank = len(v.shape)
    inner = [1] * rank
    for k in range(rank - 2, -1, -1):
        inner[k] = inner[k + 1] * v.shape[k + 1]
    e = start
    while e < end:
        a = next(k for k in range(rank) if e % inner[k] == 0 and end - e >= inner[k])
        index = [(e // inner[k]) % v.shape[k] for k in range(rank)]
        extent = min(v.shape[a] - index[a], (end - e) // inner[a])
        origin = v.offset + sum(i * s for i, s in zip(index, v.strides))
        lo = hi = origin
        for k in range(a, rank):
            reach = ((extent if k == a else v.shape[k]) - 1) * v.strides[k]
            lo, hi = lo + min(0, reach), hi + max(0, reach)
        yield _Box(e - start, extent * inner[a], a, extent, origin, lo, hi)
        e += extent * inner[a]


def _layout_entries() -> list[dict]:
    import wgpu

    stage = wgpu.ShaderStage.COMPUTE
    storage = {"type": "storage"}
    return [
        {"binding": 0, "visibility": stage, "buffer": {"type": "read-only-storage"}},
        {"binding": 1, "visibility": stage, "buffer": storage},
        {"binding": 2, "visibility": stage, "buffer": {"type": "uniform", "has_dynamic_offset": True}},
        {"binding": 3, "visibility": stage, "buffer": {"type": "read-only-storage"}},
    ]
