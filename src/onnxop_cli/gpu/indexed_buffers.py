"""The buffers of one indexed gather or scatter (gpu/indexed.py, gpu/scatter.py): made, filled from host
sources, handed to sinks, destroyed together; and a gather's source in windows, its output in bands
(``plan_windows``; gpu/bands.py's ``stream`` runs the bands). Bytes move staged, or mapped where the adapter ``can_map``, and a graph's
device buffers are copied on the device, as gpu/bands.py's ends move them; ``counts`` says which way each
transfer went (tests assert it: a silent fallback to staging fails them); gpu/indexed.py leaves a call's
counts in ``gpu.cache["indexed-last"]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ..core.sources import ByteSource
from .buffers import WORD, Owned, can_map, read_bytes, reset_status, round_up
from .bands import UPLOAD_STEP, Sink, Window, drain, fill
from .choose import answer
from .device import Gpu
from .engines.base import BufferUsage as U
from .program import compiled, grid_x
from .render.indexed import NO_BAD
from .resident import DeviceBuffer, DeviceSink

KEYS = ("mapped uploads", "staged uploads", "device uploads", "mapped reads", "staged reads", "device reads",
        "check passes", "folded checks")  # index check passes; scatters whose kernel checked the raw indices


class Slice:
    """A byte range of a source."""

    def __init__(self, source: ByteSource, offset: int, nbytes: int) -> None:
        self.source, self.offset, self.nbytes = source, offset, nbytes

    def readinto(self, offset: int, out: memoryview) -> None:
        self.source.readinto(self.offset + offset, out)


def whole(size: int) -> int:
    """A buffer's bytes for ``size``: whole words, at least one."""
    return max(WORD, round_up(size, WORD))


class Buffers(Owned):
    """The buffers of one indexed operation, in whole words. ``mapped``: host transfers through the kernel's
    own buffers mapped (only where the adapter ``can_map``); ``counts`` (shared with ``child()``) how each went."""

    def __init__(self, gpu: Gpu, mapped: bool = False, counts: dict[str, int] | None = None) -> None:
        self.gpu, self.buffers = gpu, []
        self.mapped = bool(mapped) and can_map(gpu)
        # buffers the host reads where they lie (by id, each held so its id is never another's)
        self.readable: dict[int, Any] = {}
        self.counts = counts if counts is not None else dict.fromkeys(KEYS, 0)

    def child(self) -> Buffers:
        """Buffers freed apart (a chunk's), moving bytes this one's way, counted with it."""
        return Buffers(self.gpu, self.mapped, self.counts)

    def new(self, label: str, size: int, usage: int) -> Any:
        return self._buffer(label, whole(size), usage)

    def _buffer(self, label: str, size: int, usage: int) -> Any:
        buf = super()._buffer(label, size, usage)
        if usage & U.MAP_READ and usage & U.STORAGE:  # a kernel's buffer (not a readback's): read where it lies
            self.readable[id(buf)] = buf
        return buf

    def holding(self, label: str, data: bytes, usage: int = U.STORAGE) -> Any:
        """A buffer holding ``data``: a kernel's table rows or bounds (storage), or its Params (uniform)."""
        buf = self.new(label, len(data), usage | U.COPY_DST)
        self.gpu.queue.write_buffer(buf, 0, data)
        return buf

    def result(self, label: str, size: int = 16) -> Any:
        """A kernel's output buffer, or a status word (the host rewrites it with write_buffer): read where
        it lies when mapped."""
        return self.new(label, size, U.STORAGE | U.COPY_SRC | U.COPY_DST | (U.MAP_READ if self.mapped else 0))

    def status(self, first: int = NO_BAD) -> Any:
        """A status word reset to ``first``, by default "no bad index" (checking kernels lower it by atomicMin)."""
        status = self.result("status")
        reset_status(self.gpu, status, first)
        return status

    def upload(self, label: str, source: ByteSource, nbytes: int, readable: bool = False) -> Any:
        """A storage buffer holding ``source``'s first ``nbytes`` (zero-padded to whole words); ``readable``:
        also read back when mapped (a scatter's output is its uploaded data)."""
        kind = U.STORAGE | U.COPY_DST | U.COPY_SRC
        if self.mapped and _on_device(source) is None:
            kind |= U.MAP_WRITE | (U.MAP_READ if readable else 0)
        buf = self.new(label, nbytes, kind)
        self.refill(buf, source, nbytes)
        return buf

    def refill(self, buf: Any, source: ByteSource, nbytes: int) -> None:
        """Overwrite the first ``nbytes`` of ``buf`` (this object's ``upload`` of the source) with ``source``'s
        (``bands.fill``), after the work already submitted with it: a mapped buffer waits for that work in its
        map, a staged write and a copy on the device are ordered after it by the queue."""
        device = _on_device(source)
        way = "device" if device else "mapped" if self.mapped else "staged"
        base, at = device or (source, 0)
        fill(self.gpu, buf, base, [(at, 0, nbytes)], buf if way == "mapped" else None)
        self.counts[f"{way} uploads"] += 1

    def release(self) -> None:
        super().release()
        self.readable.clear()


def _on_device(source: ByteSource) -> tuple[DeviceBuffer, int] | None:
    """(DeviceBuffer, byte offset) where ``source`` is (a 4-aligned Slice of) a graph's intermediate, copied on
    the device; else None."""
    base, at = (source.source, source.offset) if isinstance(source, Slice) else (source, 0)
    return (base, at) if isinstance(base, DeviceBuffer) and at % 4 == 0 else None


def read_small(gpu: Gpu, bufs: Buffers, buf: Any, nbytes: int) -> bytes:
    """``buf``'s first ``nbytes`` (a few status words) as bytes: mapped where it lies if it was
    made readable (``Buffers.result``), else through a readback freed at once."""
    return read_bytes(gpu, buf, nbytes, readable=id(buf) in bufs.readable)


def to_sink(gpu: Gpu, bufs: Buffers, buf: Any, nbytes: int, sink: Sink) -> int:
    """Hand ``buf``'s first ``nbytes`` to ``sink`` (``bands.drain``: kept on the device for a graph's DeviceSink,
    else ``read_small``'s way), counted. Returns ``nbytes``."""
    readable = id(buf) in bufs.readable
    drain(gpu, buf, buf if readable else None, nbytes, sink)
    bufs.counts["device reads" if isinstance(sink, DeviceSink) else "mapped reads" if readable else "staged reads"] += 1
    return nbytes


def launch(bufs: Buffers, render: Any, units: int, per: int, max_dim: int, label: str, fields: dict,
           resources: list[Any]) -> None:
    """One dispatch of the rendered kernel ``render`` (gpu/render/) over ``units`` of work, ``per`` an
    invocation: its Params (``fields`` and the grid's ``groups_x``) in a uniform buffer of ``bufs``
    named ``label``, bound where ``resources`` holds None."""
    kernel = compiled(bufs.gpu, render)  # once: the device caches it by label
    groups = -(-units // (render.schedule.wg * per))
    params = bufs.holding(label, render.PARAMS.pack(groups_x=grid_x(groups, max_dim), **fields), U.UNIFORM)
    encoder = bufs.gpu.device.create_command_encoder()
    kernel.dispatch(encoder, groups, max_dim, kernel.bind([params if r is None else r for r in resources]))
    bufs.gpu.queue.submit([encoder.finish()])


# ------------------------------------------------------------------ windows
#
# A gather reads its source at places only the indices know, so every band may read any of it: the source is
# bound in windows of one binding each, either resident (the rule: uploaded once, before the first band; each
# band runs once per window) or streamed (passes of several bands; each pass uploads the windows in turn into
# one buffer and runs its bands against each): where the device's memory is the process's own (choose.py's
# ``gather_source``), a source of more than two windows no smaller than the output streams in passes of half
# of it (docs/indexed-operators.md#speed says why and what it costs). A graph's intermediate already on the
# device stays resident; ``stream_bytes`` (tests) forces passes of that many bytes on any adapter.


@dataclass
class Windows:
    """The source's windows as (first element, elements); ``buffers`` the resident windows' buffers, or
    (streamed) the one buffer each is uploaded into in turn; ``pass_bands`` the bands a pass makes."""

    gpu: Any
    source: ByteSource
    bits: int
    ranges: list[tuple[int, int]]
    buffers: list[Any]
    streamed: bool = False
    pass_bands: int = 1
    staging: Any = None  # streamed on an adapter whose storage buffers do not map: the upload buffer

    @property
    def single(self) -> bool:
        return len(self.ranges) == 1

    @property
    def first(self) -> Any:
        return self.buffers[0]

    def each(self) -> Iterator[tuple[Any, int, int]]:
        """(buffer, first element, elements) for every window in order; streamed, each uploaded as reached
        (``bands.fill``: mapped, or through the staging buffer a step at a time)."""
        for k, (w0, wn) in enumerate(self.ranges):
            if self.streamed:
                via = self.buffers[0] if self.staging is None else self.staging
                fill(self.gpu, self.buffers[0], self.source, [(w0 * self.bits // 8, 0, (wn * self.bits + 7) // 8)], via)
            yield self.buffers[0 if self.streamed else k], w0, wn

    def run_each(self, run: Callable[..., None], parts: list[tuple[Any, int, int]]) -> None:
        """``run(dst, e0, n, window)`` for each (dst, first element, elements) of ``parts`` against every window
        (``window`` None: the source is one buffer; else (buffer, first element, elements, a later window))."""
        for w, (buf, w0, wn) in enumerate(self.each()):
            for dst, e0, n in parts:
                run(dst, e0, n, None if self.single else (buf, w0, wn, w > 0))


def plan_windows(gpu: Any, bufs: Any, source: ByteSource, size: int, bits: int, window_cap: int, out_bytes: int,
         band_bytes: int, stream_bytes: int | None = None, stream: bool = True) -> Windows:
    """The windows of a source of ``size`` elements of ``bits``, each at most ``window_cap`` bytes (whole
    16-byte words), resident or streamed by the rule above (``stream_bytes`` forces passes of that many
    bytes; ``stream`` False keeps it resident), made in ``bufs`` and freed with the rest."""
    per = max(128, (window_cap * 8 // bits) // 128 * 128)  # 128 elements of any width are whole words
    ranges = [(w0, min(per, size - w0)) for w0 in range(0, size, per)] or [(0, 0)]
    nbytes = (size * bits + 7) // 8
    pass_bytes = stream_bytes or _pass_bytes(gpu, nbytes, (per * bits) // 8, out_bytes)
    if isinstance(source, DeviceBuffer) or not stream:  # a graph's intermediate: already on the device
        pass_bytes = None
    if len(ranges) == 1 or pass_bytes is None:
        return Windows(gpu, source, bits, ranges, _resident(gpu, bufs, source, ranges, bits))
    from .buffers import can_map  # here: tests patch buffers.can_map

    size0 = (ranges[0][1] * bits + 7) // 8
    # the staging buffer uploads a step at a time (``bands.fill``)
    window = Window(bufs, "data window", whole(size0), can_map(gpu), upload_size=whole(min(UPLOAD_STEP, size0)))
    return Windows(gpu, source, bits, ranges, [window.buffer], streamed=True,
                   pass_bands=max(1, pass_bytes // max(1, band_bytes)), staging=window.upload)


def _pass_bytes(gpu: Any, nbytes: int, window_bytes: int, out_bytes: int) -> int | None:
    """A pass's bytes where the source should stream by the rule above, else None (choose.py's
    ``gather_source`` asked only of a source that could stream)."""
    if nbytes <= 2 * window_bytes or out_bytes > nbytes or answer(gpu, "gather_source") != "streamed":
        return None
    return round_up(-(-nbytes // 2), 16)


def _resident(gpu: Any, bufs: Any, source: ByteSource, ranges: list[tuple[int, int]], bits: int) -> list[Any]:
    if len(ranges) == 1:
        return [bufs.upload("data", source, (ranges[0][1] * bits + 7) // 8)]
    out = []
    for w0, wn in ranges:
        nbytes = (wn * bits + 7) // 8
        out.append(bufs.upload("data window", Slice(source, w0 * bits // 8, nbytes), nbytes))
        gpu.queue.submit([])  # hand this window's staged bytes over now, not all the windows' at once
    return out
