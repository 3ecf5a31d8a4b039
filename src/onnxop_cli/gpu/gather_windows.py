"""A gather's source on the device: one buffer, or windows of one binding each.

Gather reads its source at places only the indices know, so every output
band may read any of it. Two ways to give the kernel the whole source:

- **resident** (the rule): every window uploaded once, before the first
  band, and kept; each band runs once per window. The device holds the
  whole source and one band.
- **streamed**: the output goes in *passes* of several bands; each pass
  uploads the windows in turn into one buffer and runs all its bands
  against each (the queue orders an upload after the dispatches already
  submitted). The device holds one window and a pass's bands; the source
  is uploaded once per pass.

A source streams where the device's memory is the process's own
(choose.py's ``gather_source`` question), has more than two windows and is
no smaller than the output: passes of half the source, so at most one more
upload takes the peak from source + band to window + half the source
(figures: docs/indexed-operators.md#speed). Elsewhere, and for a graph's
intermediate already on the device, it stays resident; ``stream_bytes``
(tests) forces passes of that many bytes on any adapter.

In windows the element kernel visits every element of a band per window,
writing those whose source the window holds; the vec4 slabs kernel
(gpu/render/slices.py ``windowed``) skips a slab outside the window with
one test, so 8 windows cost about one pass of copying, not eight.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ..core.sources import ByteSource
from .buffers import round_up, submit_copy, write_mapped
from .choose import answer
from .engines.base import BufferUsage as U
from .indexed_buffers import UPLOAD_STEP, Slice, to_sink


@dataclass
class Windows:
    """The source's windows as (first element, elements); ``buffers`` the
    resident windows' buffers, or (streamed) the one buffer each is
    uploaded into in turn; ``pass_bands`` the bands a pass makes."""

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
        """(buffer, first element, elements) for every window in order;
        streamed, each is uploaded as it is reached."""
        if not self.streamed:
            for buf, (w0, wn) in zip(self.buffers, self.ranges):
                yield buf, w0, wn
            return
        for w0, wn in self.ranges:
            nbytes = (wn * self.bits + 7) // 8
            write(self.gpu, self.buffers[0], Slice(self.source, w0 * self.bits // 8, nbytes), nbytes, self.staging)
            self.uploads += 1
            yield self.buffers[0], w0, wn


def run_bands(gpu: Any, bufs: Any, windows: Windows, run: Callable[..., None], count: int, bits: int, band: int,
              sink: Callable[[memoryview], None], poison: int | None = None,
              checked: Callable[[], None] | None = None) -> int:
    """Make the output's ``count`` elements in bands of ``band``, a pass of
    ``windows.pass_bands`` at a time: ``run(dst, e0, n, window)`` fills a
    band from one window (``window`` None: the source is one buffer; else
    (buffer, first element, elements, a later window of this band)), every
    band of a pass against every window; ``checked`` (the kernel checked the
    indices as it read them) raises before any band reaches ``sink``.
    Returns the bytes written."""
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
    """``source``'s first ``nbytes`` into ``buf`` from offset 0: read straight
    into ``buf`` mapped (``staging`` None: a CPU adapter's buffer that maps,
    gpu/buffers.can_map), else a step at a time through ``staging``. Either
    map waits for the dispatches that read the last window, so neither
    engine queues a second copy of the source (``write_buffer`` would: its
    staging memory is let go only when the device next settles)."""
    into, step = (buf, round_up(nbytes, 4)) if staging is None else (staging, staging.size)
    for at in range(0, nbytes, step):
        n = min(step, nbytes - at)
        write_mapped(gpu, into, source, at, n)
        if staging is not None:
            submit_copy(gpu, staging, 0, buf, at, round_up(n, 4))


def plan(gpu: Any, bufs: Any, source: ByteSource, size: int, bits: int, window_cap: int, out_bytes: int,
         band_bytes: int, stream_bytes: int | None = None, stream: bool = True) -> Windows:
    """The windows of a source of ``size`` elements of ``bits``, each at
    most ``window_cap`` bytes (whole 16-byte words), resident or streamed
    (the module's rule; ``stream_bytes`` forces passes of that many bytes;
    ``stream`` False keeps it resident).
    ``bufs`` (indexed.Buffers) makes the buffers and frees them with the rest."""
    per = _per_window(bits, window_cap)
    ranges = [(w0, min(per, size - w0)) for w0 in range(0, size, per)] or [(0, 0)]
    nbytes = (size * bits + 7) // 8
    pass_bytes = stream_bytes or _pass_bytes(gpu, nbytes, (per * bits) // 8, out_bytes)
    from .resident import DeviceBuffer

    if isinstance(source, DeviceBuffer) or not stream:  # a graph's intermediate: already on the device
        pass_bytes = None
    if len(ranges) == 1 or pass_bytes is None:
        return Windows(gpu, source, bits, ranges, _resident(gpu, bufs, source, ranges, bits))
    from .buffers import can_map  # here: tests patch buffers.can_map

    size0 = (ranges[0][1] * bits + 7) // 8
    mapped = can_map(gpu)
    window = bufs.new("data window", size0, U.STORAGE | (U.MAP_WRITE if mapped else U.COPY_DST))
    staging = None if mapped else bufs.new("upload", min(UPLOAD_STEP, size0), U.MAP_WRITE | U.COPY_SRC)
    return Windows(gpu, source, bits, ranges, [window], streamed=True,
                   pass_bands=max(1, pass_bytes // max(1, band_bytes)), staging=staging)


def _per_window(bits: int, window_cap: int) -> int:
    return max(128, (window_cap * 8 // bits) // 128 * 128)  # 128 elements of any width are whole words


def one_window(size: int, bits: int, window_cap: int) -> bool:
    """Whether ``plan`` makes a source of ``size`` elements one window."""
    return size <= _per_window(bits, window_cap)


def _pass_bytes(gpu: Any, nbytes: int, window_bytes: int, out_bytes: int) -> int | None:
    """The module's rule: a pass's bytes when the source should stream, else
    None. Whether the device's memory is the process's own is choose.py's
    ``gather_source`` question, asked only for a source that could stream."""
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
