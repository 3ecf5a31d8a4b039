"""The buffers of one indexed gather or scatter (gpu/indexed.py, gpu/scatter.py): made, filled from host
sources, handed to sinks, destroyed together; and a gather's source in windows, its output in bands
(``plan_windows``, ``run_bands``). Bytes move staged, or mapped where the adapter ``can_map``, and a graph's
device buffers are copied on the device, as gpu/bands.py's ends move them; ``counts`` says which way each
transfer went (tests assert it: a silent fallback to staging fails them); gpu/indexed.py leaves a call's
counts in ``gpu.cache["indexed-last"]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ..core.sources import ByteSource
from .buffers import WORD, Owned, can_map, read_bytes, read_through, reset_status, round_up, submit_copy, write_mapped
from .bands import Window, drain
from .choose import answer
from .device import Gpu
from .engines.base import BufferUsage as U
from .program import compiled, grid_x
from .render.indexed import NO_BAD
from .resident import DeviceBuffer, DeviceSink, submit_device_copy

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
        buf = self._buffer(label, whole(size), usage)
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
        base, at0 = (source.source, source.offset) if isinstance(source, Slice) else (source, 0)
        device = isinstance(base, DeviceBuffer) and at0 % 4 == 0
        kind = U.STORAGE | U.COPY_DST | U.COPY_SRC
        if self.mapped and not device:
            kind |= U.MAP_WRITE | (U.MAP_READ if readable else 0)
        buf = self.new(label, nbytes, kind)
        if device:  # a graph's intermediate: copied on the device
            submit_device_copy(self.gpu, base, at0, buf, nbytes)
            self.counts["device uploads"] += 1
            return buf
        self.refill(buf, source, nbytes)
        return buf

    def refill(self, buf: Any, source: ByteSource, nbytes: int) -> None:
        """Overwrite the first ``nbytes`` of ``buf`` (this object's ``upload`` of a host source, at least that
        large) with ``source``'s, after the work already submitted with it: a mapped buffer waits for that work
        in its map, a staged write is ordered after it by the queue."""
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
    return read_bytes(gpu, buf, nbytes, readable=id(buf) in bufs.readable)


def read_view(gpu: Gpu, bufs: Buffers, buf: Any, nbytes: int, use: Sink) -> bool:
    """``use`` given ``buf``'s first ``nbytes``: mapped where it lies if it was made readable
    (``Buffers.result``; True), else through a readback freed at once (False)."""
    readable = id(buf) in bufs.readable
    read_through(gpu, buf, buf if readable else None, nbytes, use)
    return readable


def to_sink(gpu: Gpu, bufs: Buffers, buf: Any, nbytes: int, sink: Sink) -> int:
    """Hand ``buf``'s first ``nbytes`` to ``sink`` (``bands.drain``: kept on the device for a graph's DeviceSink,
    else ``read_view``'s way), counted. Returns ``nbytes``."""
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
    params = bufs.params(label, render.PARAMS.pack(groups_x=grid_x(groups, max_dim), **fields))
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
    uploads: int = field(default=0)  # windows uploaded so far (tests count the passes with it)

    @property
    def single(self) -> bool:
        return len(self.ranges) == 1

    @property
    def first(self) -> Any:
        return self.buffers[0]

    def each(self) -> Iterator[tuple[Any, int, int]]:
        """(buffer, first element, elements) for every window in order; streamed, each uploaded as reached."""
        for k, (w0, wn) in enumerate(self.ranges):
            if self.streamed:
                nbytes = (wn * self.bits + 7) // 8
                write(self.gpu, self.buffers[0], Slice(self.source, w0 * self.bits // 8, nbytes), nbytes, self.staging)
                self.uploads += 1
            yield self.buffers[0 if self.streamed else k], w0, wn


def run_bands(gpu: Any, bufs: Any, windows: Windows, run: Callable[..., None], count: int, bits: int, band: int,
              sink: Callable[[memoryview], None], poison: int | None = None,
              checked: Callable[[], None] | None = None) -> int:
    """Make the output's ``count`` elements in bands of ``band``, a pass of ``windows.pass_bands`` at a time:
    ``run(dst, e0, n, window)`` fills a band from one window (``window`` None: the source is one buffer; else
    (buffer, first element, elements, a later window of this band)), every band of a pass against every
    window; ``checked`` (the kernel checked the indices as it read them) raises before any band reaches
    ``sink``. Returns the bytes written."""
    per_pass = band * windows.pass_bands
    dsts = [bufs.result("dst", min(band, count) * bits // 8 + 16)
            for _ in range(min(windows.pass_bands, -(-count // band)))]
    written = 0
    for p0 in range(0, count, per_pass):  # a pass: its bands run against every window
        parts = [(e0, min(band, count - e0)) for e0 in range(p0, min(p0 + per_pass, count), band)]
        if poison is not None:
            for dst, (e0, n) in zip(dsts, parts):
                gpu.queue.write_buffer(dst, 0, bytes([poison]) * round_up((n * bits + 7) // 8, 4))
        for w, (buf, w0, wn) in enumerate(windows.each()):
            for dst, (e0, n) in zip(dsts, parts):
                run(dst, e0, n, None if windows.single else (buf, w0, wn, w > 0))
        if checked is not None:  # one band: every index was read; none reaches the sink unchecked
            checked()
        for dst, (e0, n) in zip(dsts, parts):
            written += to_sink(gpu, bufs, dst, (n * bits + 7) // 8, sink)
    return written


def write(gpu: Any, buf: Any, source: Any, nbytes: int, staging: Any = None) -> None:
    """``source``'s first ``nbytes`` into ``buf`` from offset 0: read straight into ``buf`` mapped
    (``staging`` None: gpu/buffers.can_map), else a step at a time through ``staging``. Either map waits for
    the dispatches that read the last window, so neither engine queues a second copy of the source
    (``write_buffer`` would: its staging memory is let go only when the device next settles)."""
    into, step = (buf, round_up(nbytes, 4)) if staging is None else (staging, staging.size)
    for at in range(0, nbytes, step):
        n = min(step, nbytes - at)
        write_mapped(gpu, into, source, at, n)
        if staging is not None:
            submit_copy(gpu, staging, 0, buf, at, round_up(n, 4))


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
    # the staging buffer uploads a step at a time (``write``)
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
