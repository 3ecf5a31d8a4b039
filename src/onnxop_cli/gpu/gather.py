"""Stream a strided view of a tensor, row-major and little-endian, through the strided gather
(gpu/render/strided.py):

    source --readinto--> upload --copy--> src --gather--> dst (a band) --copy--> readback --sink-->

Any size, in bounded memory: the output goes in bands of at most one binding, each written whole before the
sink sees it, in order; what a band reads is uploaded in pieces of at most one binding (a window of the
source, or runs of it packed), as gpu/tiling.py plans. Four buffers of at most one binding (upload, src,
dst, readback), or two mapped ones (src, dst) on adapters that map storage buffers. A source read only
front to back (stdin, a compressed .npz member) that the plan reads out of order is first spooled to an
unlinked temporary file.
"""

from __future__ import annotations

import os
from typing import Any

from ..core.sources import ByteSource, random_access, spool_source
from ..core.region import Access
from .bands import Band, Sink, Window, fill, stream
from .choose import answer
from .device import Gpu
from .buffers import WORD, BufferUsage, Owned, binding_limit, can_map, dispatch_limit, env_poison, round_up
from .resident import DeviceBuffer, DeviceSink, Traffic
from .program import grid_x, rendered
from .render.strided import GATHER, KERNELS
from .render.view import AXIS, KINDS
from .tiling import Plan, Upload, in_order

__all__ = ["Access", "gather_resident", "gather_through_kernel"]


# (src, dst, Params at a dynamic offset, axes), rendered when first compiled, not at import (reading its parts
# from the package's files costs every start-up a few milliseconds); the transpose kernels (VARIANTS: the
# blocked ones) bind this layout too
GENERAL = rendered(KERNELS["generic"], KINDS)
VARIANTS = {name: rendered(kernel, KINDS) for name, kernel in KERNELS.items() if name != "generic"}
BITS = (2, 4, 8, 16, 32, 64, 128)
DEFAULT_BAND = 64 << 20  # bytes of output per band (and of source per upload), at most one binding
# With mapped buffers (buffers.can_map) there are two buffers, not four: bands and windows of twice the size
# hold the same memory, and halve the bands of a transpose larger than a binding, whose every band reads one
# short run per element of its other axes (3-D 2,1,0: half the read calls; 0.79x the CPU time at 400 MiB on
# Mesa 25, docs/performance.md).
MAPPED_BAND = 2 * DEFAULT_BAND
MAX_ELEMENTS = 1 << 31  # elements per band or upload: the kernel indexes them with u32
ENV_GATHER = "ONNXOP_GATHER"  # a VARIANTS name or "generic": force the transpose kernel (tests, benchmarks)


def gather_through_kernel(
    gpu: Gpu,
    source: ByteSource | DeviceBuffer,
    sink: Sink,
    *,
    view: Access,
    bits: int,
    swap: int = 0,
    binding_bytes: int | None = None,
    max_groups_per_dim: int | None = None,
    poison: int | None = None,
    traffic: Traffic | None = None,
) -> int:
    """Stream the view's elements, row-major and little-endian, into `sink` (a callable taking
    memoryviews, called in output order, or a graph's DeviceSink) from `source` (a tensor.ByteSource holding
    the source elements row-major, or a graph's DeviceBuffer; `swap` is the byte-swap unit for big-endian
    input, 0 for none). `bits` is the element width: 2, 4 (packed as ONNX packs them, low bits first), 8, 16,
    32, 64, 128. ``binding_bytes`` caps bands and windows below the device's binding limit (tests: the
    multi-band and multi-window paths on small data); ``poison`` fills dst with that byte before every band,
    so a word the kernel failed to write cannot pass a comparison; ``traffic`` counts the bytes that cross.
    A host source read out of order is spooled first. Returns the bytes written."""
    on_device = isinstance(source, DeviceBuffer)
    if binding_bytes is None and traffic is None and can_map(gpu):  # a graph's (traffic counted): DEFAULT_BAND
        binding_bytes = MAPPED_BAND
    plan, band_bytes, window_bytes = make_plan(gpu, source.nbytes, view, bits, swap, binding_bytes, not on_device)
    if plan is None:
        return 0
    poison = env_poison() if poison is None else poison
    spool = None if on_device or random_access(source) or in_order(plan) else spool_source(source)
    try:
        with gpu.lock:  # one call at a time on the device's pipelines and queue (device.py)
            run = Run(gpu, plan, spool or source, band_bytes, window_bytes, swap, max_groups_per_dim, sink, traffic)
            try:
                return run.stream(sink, poison)
            finally:
                gpu.cache["gather-last"] = {"blocked": run.blocked, "dispatches": run.dispatches, "mapped": run.mapped}
                run.release()
    finally:
        if spool is not None:
            spool.close()


def gather_resident(gpu: Gpu, source: ByteSource | DeviceBuffer, view: Access, bits: int, *, swap: int = 0,
                    traffic: Traffic | None = None) -> DeviceBuffer:
    """The view's elements of ``source``, row-major, in a new device buffer (the caller releases it)."""
    out, traffic = DeviceBuffer(gpu, (view.size * bits + 7) // 8), traffic or Traffic()
    try:
        gather_through_kernel(gpu, source, DeviceSink(out, traffic), view=view, bits=bits, swap=swap, traffic=traffic)
    except BaseException:
        out.release()
        raise
    return out


def make_plan(
    gpu: Gpu, source_nbytes: int, view: Access, bits: int, swap: int = 0, binding_bytes: int | None = None,
    pack: bool = True,
) -> tuple[Plan | None, int, int]:
    """(plan, band bytes, window bytes) of a gather of ``view`` from a source of ``source_nbytes`` bytes;
    the plan is None for an empty view. Refuses a view that reads outside the source. ``pack``: Plan.pack."""
    check_width(bits, swap, "the gather kernel takes")
    if len(view.shape) != len(view.strides):
        raise ValueError(f"a view of shape {view.shape} needs {len(view.shape)} strides, not {view.strides}")
    count = view.size
    if count == 0:
        return None, 0, 0
    available = source_nbytes * 8 // bits
    lo, hi = view.span()
    if lo < 0 or hi >= available:
        raise ValueError(f"the view reads source elements {lo}..{hi}, outside the source's {available}")
    v = view.simplified()
    total = (count * bits + 7) // 8

    cap = min(binding_bytes or DEFAULT_BAND, binding_limit(gpu))
    cap = min(max(WORD, cap - cap % WORD), MAX_ELEMENTS * bits // 8)
    align = max(1, 8 * WORD // bits)  # windows start at whole 16-byte words of the source
    window = min(cap * 8 // bits, round_up(hi - lo + 1 + align, align))
    band_bytes = min(cap, round_up(total, WORD))
    plan = Plan(v, bits, _band_elements(v, bits, band_bytes, count), window, align, source_nbytes, pack)
    return plan, band_bytes, window * bits // 8


def check_width(bits: int, swap: int, kernels: str) -> None:
    """ValueError for an element width or byte-swap unit (0: none) that ``kernels`` (the message's
    subject and verb) do not take."""
    if bits not in BITS:
        raise ValueError(f"{kernels} elements of {BITS} bits, not {bits}")
    if swap not in (0, 2, 4, 8) or (swap and (bits < 16 or (bits // 8) % swap)):
        raise ValueError(f"byte-swap unit {swap} does not divide a {bits}-bit element")


def _band_elements(v: Access, bits: int, band_bytes: int, count: int) -> int:
    """Elements per band: what ``band_bytes`` holds, cut to whole groups of 4 indices of the outermost axis
    where that leaves most of it, so a large transpose's boxes and packed runs come in whole 16-byte words
    for the blocked kernel (gpu/render/transpose.py)."""
    band = band_bytes * 8 // bits
    if bits >= 32 and len(v.shape) >= 2 and band < count:
        step = 4 * (count // v.shape[0])
        if band >= 8 * step:
            band -= band % step
    return band


class Run(Owned):
    """The buffers of one gather and the loop that fills and drains them (gpu/bands.py's ends). Either side
    may be on the device: a ``source`` that is a graph's DeviceBuffer fills src by buffer-to-buffer copies, a
    DeviceSink ``sink`` takes each band by one; ``traffic`` counts the bytes that do cross."""

    def __init__(self, gpu: Gpu, plan: Plan, source: Any, band_bytes: int, src_bytes: int,
                 swap: int, max_groups_per_dim: int | None, sink: Any = None, traffic: Any = None) -> None:
        self.gpu, self.plan, self.source, self.swap, self.traffic = gpu, plan, source, swap, traffic
        self.band_bytes, self.src_bytes = band_bytes, round_up(src_bytes, WORD)
        self.max_dim = dispatch_limit(gpu, max_groups_per_dim)
        self.per_group = KERNELS["generic"].schedule.per_group
        self.stride = max(256, gpu.limits.get("min-uniform-buffer-offset-alignment", 256))
        self.rank = len(plan.view.shape)
        records = 2 * self.rank  # boxes per upload, at most
        U = BufferUsage
        self.buffers: list[Any] = []
        self.blocked = self.dispatches = 0  # the blocked kernels' dispatches, and all (tests look)
        # Mapped (buffers.can_map), the source is read straight into src and the band straight from dst, as
        # copy.py's mapped slots are: two copies of every byte fewer. Otherwise staged; a source or output on
        # the device needs no staging buffer on that side, and its bytes do not cross (``traffic``).
        self.host_in, self.host_out = not isinstance(source, DeviceBuffer), not isinstance(sink, DeviceSink)
        self.mapped = can_map(gpu) and self.host_in and self.host_out
        with gpu.errors("allocating gather buffers"):
            self.kernel = GENERAL.on(gpu)
            # the transpose kernels that may take some dispatches, in the order tried (gpu/render/transpose.py),
            # on the same layout, so one bind group serves every kernel: the largest of their Params
            names = variants(plan, gpu)
            self.variants = [(name, VARIANTS[name].on(gpu)) for name in names]
            params_bytes = max(KERNELS[k].PARAMS.size for k in ("generic", *names))
            self.window = Window(self, "src", self.src_bytes, self.mapped, Window.OWN if self.host_in else None)
            self.out = Band(self, band_bytes, self.mapped, staged=self.host_out)
            self.upload, self.src, self.dst = self.window.upload, self.window.buffer, self.out.dst
            self.readback = None if self.mapped else self.out.out
            self.params = self._buffer("params", self.stride * records, U.UNIFORM | U.COPY_DST)
            self.axes = self._buffer("axes", 16 * self.rank * records, U.STORAGE | U.COPY_DST)
            self.bind_group = self.kernel.bind([
                (self.src, 0, self.src_bytes), (self.dst, 0, band_bytes), (self.params, 0, params_bytes), self.axes,
            ])

    def stream(self, sink: Sink, poison: int | None) -> int:
        """The plan's bands through ``bands.stream``: each band's uploads, then its bytes to ``sink``."""
        plan = self.plan

        def make(parts: list) -> None:
            ((_, e0, n),) = parts
            for upload in plan.band_uploads(e0, n):
                self.dispatch(upload, n)

        return stream([self.out], plan.view.size, plan.band, plan.bits, make, lambda _, n: self.drain(sink, n), poison)

    def drain(self, sink: Sink, nbytes: int) -> None:
        """Hand the band's ``nbytes`` to the sink (a DeviceSink: on the device)."""
        if self.traffic is not None and self.host_out:
            self.traffic.read_back += nbytes
        self.out.drain(sink, nbytes)

    def dispatch(self, upload: Upload, band: int) -> None:
        """Fill src with the upload's runs, then one dispatch per box, through the transpose kernel where it
        takes the box (gpu/render/transpose.py)."""
        gpu = self.gpu
        with gpu.errors("upload"):
            encoder = gpu.device.create_command_encoder()
        if self.traffic is not None and self.host_in:
            self.traffic.uploaded += sum(n for _, _, n in upload.runs)
        fill(gpu, self.src, self.source, upload.runs, self.window.via, encoder)
        with gpu.errors("gather dispatch"):
            self.record(encoder, upload, band)
            gpu.queue.submit([encoder.finish()])

    def record(self, encoder: Any, upload: Upload, band: int) -> None:
        """Encode the upload's dispatches, reading src as filled (benchmarks/transpose_kernels.py times it alone)."""
        gpu, plan = self.gpu, self.plan
        compute = encoder.begin_compute_pass()
        axes = bytearray()
        for i, d in enumerate(upload.dispatches):
            box = d.box
            for name, kernel in self.variants:
                found = KERNELS[name].record(d, plan.view.shape, plan.bits, self.swap, self.rank, i * self.rank,
                                             self.max_dim)
                if found is not None:
                    record, groups = found
                    self.blocked += 1
                    break
            else:
                first, words = box.words(plan.bits)
                groups = -(-words // self.per_group)
                record = GATHER.pack(
                    words=words, groups_x=grid_x(groups, self.max_dim), first_word=first, e0=box.e0,
                    count=box.count, band=band, bits=plan.bits, swap=self.swap, rank=self.rank, axis0=box.axis, dim0=box.extent,
                    window=upload.elements, keep=int(d.keep), at=i * self.rank, base=d.base & ((1 << 64) - 1),
                )
                kernel = self.kernel
            self.dispatches += 1
            gpu.queue.write_buffer(self.params, i * self.stride, record)
            strides = (0,) * box.axis + d.strides
            axes += AXIS.layout.pack_rows((
                {"dim": n & 0xFFFFFFFF, "stride_lo": s & 0xFFFFFFFF, "stride_hi": (s >> 32) & 0xFFFFFFFF}
                for n, s in zip(plan.view.shape, strides)))
            kernel.record(compute, groups, self.max_dim, self.bind_group, [i * self.stride])
        compute.end()
        gpu.queue.write_buffer(self.axes, 0, bytes(axes))


def variants(plan: Plan, gpu: Gpu) -> list[str]:
    """The names of the transpose kernels (VARIANTS) that may take some of the plan's dispatches, in the
    order Run.record tries them; a dispatch none of them takes goes to the generic gather. Which kernel is
    choose.py's ``transpose`` question, measured per adapter (on llvmpipe the blocked one, its 16-byte
    accesses a quarter of the generic gather's: docs/performance-adapters.md). ``$ONNXOP_GATHER`` (a
    VARIANTS name or ``generic``) forces one (tests, benchmarks), as ``$ONNXOP_SCHEDULE=transpose=...`` does."""
    forced = os.environ.get(ENV_GATHER, "").strip().lower()
    if plan.bits < 32 or forced == "generic":
        return []
    if forced in VARIANTS:
        return [forced]
    v = plan.view  # the kernels need an axis besides the last one read at unit stride: else no question
    if not any(abs(s) == 1 and n > 1 for n, s in zip(v.shape[:-1], v.strides[:-1])):
        return []
    name = answer(gpu, "transpose")
    return [name] if name in VARIANTS else []

