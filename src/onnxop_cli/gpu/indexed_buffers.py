"""The buffers of one indexed gather or scatter (gpu/indexed.py, gpu/scatter.py):
made, filled from host sources, handed to sinks, destroyed together.

Two ways to move the bytes, chosen per call:

- staged (every adapter): a source goes in through ``queue.write_buffer``
  (the engine's staging copy and a copy command), a result comes out through
  a readback buffer (a copy command, then the readback mapped);
- mapped (adapters that ``can_map``: wgpu and Dawn on a CPU Vulkan adapter,
  see gpu/copy.py's mapped mode and gpu/engines/dawn/host.py): the kernel's
  own buffers are mapped -- a source (data, raw indices) read straight into
  its storage buffer, a result handed to the sink where the kernel wrote it.
  No staging buffer and no copy command either way.

A graph's device-resident source (``DeviceBuffer``) is copied on the device
and a ``DeviceSink`` takes the result on the device, whichever way is chosen.
``counts`` says which way each transfer went (tests assert it: a silent
fallback to staging fails them); gpu/indexed.py leaves a call's counts in
``gpu.cache["indexed-last"]``.
"""

from __future__ import annotations

from typing import Any, Callable

from ..core.sources import ByteSource
from .buffers import WORD, Owned, can_map, reset_status, round_up, submit_copy, write_mapped
from .device import Gpu
from .engines.base import BufferUsage as U
from .engines.base import MapMode
from .program import compiled, grid_x
from .render.indexed import NO_BAD

Sink = Callable[[memoryview], None]
UPLOAD_STEP = 16 << 20  # bytes read from a source per write_buffer (staged); a streamed window's upload buffer
KEYS = ("mapped uploads", "staged uploads", "device uploads", "mapped reads", "staged reads", "device reads",
        "check passes", "folded checks")  # index check passes; scatters whose kernel checked the raw indices


class Slice:
    """A byte range of a source."""

    def __init__(self, source: ByteSource, offset: int, nbytes: int) -> None:
        self.source, self.offset, self.nbytes = source, offset, nbytes

    def readinto(self, offset: int, out: memoryview) -> None:
        self.source.readinto(self.offset + offset, out)


class Buffers(Owned):
    """The buffers of one indexed operation, in whole words. ``mapped``:
    host transfers through the kernel's own buffers mapped (only where the
    adapter ``can_map``); ``counts`` (shared with ``child()``) how each went."""

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
        buf = self._buffer(label, max(WORD, round_up(size, WORD)), usage)
        if usage & U.MAP_READ and usage & U.STORAGE:  # a kernel's buffer (not a readback's)
            self.readable[id(buf)] = buf
        return buf

    def holding(self, label: str, data: bytes, usage: int = U.STORAGE) -> Any:
        """A buffer holding ``data``: a kernel's table rows or bounds (storage), or its Params (``params``)."""
        buf = self.new(label, len(data), usage | U.COPY_DST)
        self.gpu.queue.write_buffer(buf, 0, data)
        return buf

    def params(self, label: str, data: bytes) -> Any:
        """A uniform buffer holding ``data``: a kernel's Params (gpu/layout.py packs them)."""
        return self.holding(label, data, U.UNIFORM)

    def result(self, label: str, size: int) -> Any:
        """A kernel's output buffer: read where it lies when mapped."""
        return self.new(label, size, U.STORAGE | U.COPY_SRC | U.COPY_DST | (U.MAP_READ if self.mapped else 0))

    def small(self, label: str, size: int = 16) -> Any:
        """A status word buffer the host reads (and rewrites with write_buffer)."""
        return self.new(label, size, U.STORAGE | U.COPY_DST | U.COPY_SRC | (U.MAP_READ if self.mapped else 0))

    def status(self, first: int = NO_BAD) -> Any:
        """A status word reset to ``first``, by default "no bad index" (checking kernels lower it by atomicMin)."""
        status = self.small("status")
        reset_status(self.gpu, status, first)
        return status

    def upload(self, label: str, source: ByteSource, nbytes: int, readable: bool = False) -> Any:
        """A storage buffer holding ``source``'s first ``nbytes`` (zero-padded
        to whole words); ``readable``: also read back when mapped (a scatter's
        output is its uploaded data)."""
        from .resident import DeviceBuffer, device_copy

        base, at0 = (source.source, source.offset) if isinstance(source, Slice) else (source, 0)
        device = isinstance(base, DeviceBuffer) and at0 % 4 == 0
        kind = U.STORAGE | U.COPY_DST | U.COPY_SRC
        if self.mapped and not device:
            kind |= U.MAP_WRITE | (U.MAP_READ if readable else 0)
        buf = self.new(label, nbytes, kind)
        if device:  # a graph's intermediate: copied on the device
            encoder = self.gpu.device.create_command_encoder()
            device_copy(encoder, base, at0, buf, 0, nbytes)
            self.gpu.queue.submit([encoder.finish()])
            self.counts["device uploads"] += 1
            return buf
        self.refill(buf, source, nbytes)
        return buf

    def refill(self, buf: Any, source: ByteSource, nbytes: int) -> None:
        """Overwrite the first ``nbytes`` of ``buf`` (this object's ``upload``
        of a host source, at least that large) with ``source``'s, after the
        device's work already submitted with it: a mapped buffer waits for
        that work in its map, a staged write is ordered after it by the queue."""
        if self.mapped:  # read straight into the kernel's buffer
            if nbytes:
                write_mapped(self.gpu, buf, source, 0, nbytes)
            self.counts["mapped uploads"] += 1
            return
        step = UPLOAD_STEP
        piece = bytearray(min(step, nbytes))
        for at in range(0, nbytes, step):
            n = min(step, nbytes - at)
            view = memoryview(piece)[:n]
            source.readinto(at, view)
            tail = (-n) % 4  # write_buffer takes whole words
            self.gpu.queue.write_buffer(buf, at, bytes(view) + b"\0" * tail if tail else view)
        self.counts["staged uploads"] += 1

    def release(self) -> None:
        super().release()
        self.readable.clear()


def read_small(gpu: Gpu, bufs: Buffers, buf: Any, nbytes: int) -> bytes:
    """``buf``'s first ``nbytes`` (a few status words) as bytes (``read_view``'s way)."""
    out: list[bytes] = []
    read_view(gpu, bufs, buf, nbytes, lambda view: out.append(bytes(view)))
    return out[0]


def read_view(gpu: Gpu, bufs: Buffers, buf: Any, nbytes: int, use: Sink) -> bool:
    """``use`` given ``buf``'s first ``nbytes``: mapped where it lies if it was made
    readable (``Buffers.result``; True), else through a readback freed at once (False)."""
    n4 = max(4, round_up(nbytes, 4))
    readable = id(buf) in bufs.readable
    back = buf if readable else bufs.new("readback", n4, U.MAP_READ | U.COPY_DST)
    if not readable:
        submit_copy(gpu, buf, 0, back, 0, n4)
    gpu.wait(back.map_async(MapMode.READ, 0, n4), "readback")
    try:
        use(back.read_mapped(0, n4, copy=False)[:nbytes])
    finally:
        back.unmap()
        if not readable:
            back.destroy()
            bufs.buffers.remove(back)
    return readable


def to_sink(gpu: Gpu, bufs: Buffers, buf: Any, nbytes: int, sink: Sink) -> int:
    """Hand ``buf``'s first ``nbytes`` to ``sink``: kept on the device for a
    graph's DeviceSink, else ``read_view``'s way. Returns ``nbytes``."""
    from .resident import DeviceSink

    if isinstance(sink, DeviceSink):  # a graph's intermediate: stays on the device
        sink.take(buf, nbytes)
        bufs.counts["device reads"] += 1
        return nbytes
    bufs.counts["mapped reads" if read_view(gpu, bufs, buf, nbytes, sink) else "staged reads"] += 1
    return nbytes


def launch(bufs: Buffers, render: Any, units: int, per: int, max_dim: int, label: str, fields: dict,
           resources: list[Any]) -> None:
    """One dispatch of the rendered kernel ``render`` (gpu/render/) over ``units`` of work, ``per`` an
    invocation: its Params (``fields`` and the grid's ``groups_x``) in a uniform buffer of ``bufs``
    named ``label``, bound where ``resources`` holds None."""
    kernel = compiled(bufs.gpu, render)  # once: the device caches it by label
    groups = -(-units // (render.schedule.wg * per))
    params = bufs.params(label, render.PARAMS.pack(groups_x=grid_x(groups, max_dim), **fields))
    encoder = bufs.gpu.device.create_command_encoder()
    kernel.dispatch(encoder, groups, max_dim, kernel.bind([params if r is None else r for r in resources]))
    bufs.gpu.queue.submit([encoder.finish()])
