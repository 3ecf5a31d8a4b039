"""The two ends of every streamed kernel (gpu/copy.py's chunks, gpu/gather.py's, gpu/indexed.py's and
gpu/pieces.py's bands), and the one band loop (``stream``): where the host's bytes go in, where the kernel's
come out.

    source --fill--> [upload --copy-->] Window.buffer --kernel--> Band.dst [--copy--> readback] --sink-->

Mapped (``buffers.can_map``: a CPU adapter, host sources and a host sink), the kernel's own storage buffers
are mapped: no staging buffer, no copy command. Staged, an upload buffer (its own, or one shared by several
windows, each fill submitted before the next) stands beside a window and a readback beside dst (or one made
and freed at each drain). A graph's device buffer (gpu/resident.py) is copied on the device either way, into
a window or out of dst (``DeviceSink``). The buffers are made in their owner's list (``buffers.Owned``) and
freed with it; what differs between the kernels is data: sizes, mapped or not, the shared upload, what each
band poisons.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from ..core.sources import read_runs
from .buffers import BufferUsage as U
from .buffers import MapMode, Owned, hand_mapped, map_write, read_through, round_up, submit_copy
from .resident import DeviceBuffer, DeviceSink

Sink = Callable[[memoryview], None]  # a band's bytes to the host, in order (or a graph's DeviceSink)
UPLOAD_STEP = 16 << 20  # bytes handed to write_buffer at a time, and a streamed window's upload buffer


class Window:
    """A kernel's input ``buffer`` of ``size`` bytes and the ``upload`` buffer beside it: its own (``OWN``, of
    ``upload_size`` bytes, the window's by default), one shared with other windows, or None (mapped, or filled
    only on the device)."""

    OWN = object()

    def __init__(self, owner: Owned, label: str, size: int, mapped: bool, upload: Any = OWN,
                 upload_label: str = "upload", upload_size: int | None = None) -> None:
        self.gpu = owner.gpu
        if mapped or upload is not Window.OWN:
            self.upload = None if mapped else upload
        else:
            self.upload = owner._buffer(upload_label, upload_size or size, U.MAP_WRITE | U.COPY_SRC)
        self.buffer = owner._buffer(label, size, U.STORAGE | (U.MAP_WRITE if mapped else U.COPY_DST))

    @property
    def via(self) -> Any:
        """What ``fill`` maps to fill the window: its upload, else the window itself."""
        return self.buffer if self.upload is None else self.upload


def fill(gpu: Any, buffer: Any, source: Any, runs: Sequence[tuple[int, int, int]], via: Any = None,
         encoder: Any = None) -> None:
    """The one way bytes go into a kernel's buffer: ``source``'s (source byte, buffer byte, bytes) ``runs``
    into ``buffer``. From a graph's DeviceBuffer, copied on the device (4-aligned); from the host, read into
    ``via`` mapped (``buffer`` itself, or an upload buffer copied across, a step of its size at a time), or,
    ``via`` None, handed to write_buffer a step (UPLOAD_STEP) at a time. Copies are recorded in ``encoder``
    (then one step must hold every run), else submitted each at once. A map waits for the work submitted
    before it, so an upload buffer is never rewritten under a pending copy, and neither engine queues a second
    copy of the source (``write_buffer`` would: its staging memory is let go only when the device next
    settles)."""
    copy = functools.partial(submit_copy, gpu) if encoder is None else encoder.copy_buffer_to_buffer
    if isinstance(source, DeviceBuffer):
        for at, into, n in runs:
            n4 = min(round_up(n, 4), source.buffer.size - at, buffer.size - into)
            if n4 > 0:
                copy(source.buffer, at, buffer, into, n4)
        return
    end = max((into + n for _, into, n in runs), default=0)
    step = UPLOAD_STEP if via is None else end if via is buffer else via.size
    for s in range(0, end, step):
        n4 = round_up(min(step, end - s), 4)
        piece = [(at + lo - into, lo - s, hi - lo) for at, into, n in runs
                 for lo, hi in [(max(into, s), min(into + n, s + step))] if lo < hi]
        if via is None:
            data = bytearray(n4)  # write_buffer takes whole words
            read_runs(source, piece, memoryview(data))
            gpu.queue.write_buffer(buffer, s, data)
            continue
        map_write(gpu, via, n4, lambda mapped: read_runs(source, piece, mapped))
        if via is not buffer:
            copy(via, 0, buffer, s, n4)


class Band:
    """A kernel's output ``dst`` of ``size`` bytes and ``out``, where the host reads it: dst itself mapped,
    else a readback beside it (``staged`` False: none, a drain to the host makes one and frees it)."""

    def __init__(self, owner: Owned, size: int, mapped: bool, staged: bool = True) -> None:
        self.gpu, self.size = owner.gpu, size
        self.dst = owner._buffer("dst", size, U.STORAGE | U.COPY_DST | (U.MAP_READ if mapped else U.COPY_SRC))
        self.out = self.dst if mapped else owner._buffer("readback", size, U.MAP_READ | U.COPY_DST) if (
            staged) else None
        if mapped:
            # wgpu zero-fills, when a buffer is mapped, the bytes it never saw written; a kernel write it
            # failed to track would read back as zeros: clearing dst once marks it all written
            # (tests/gpu/test_gpu_copy.py test_fresh_buffers_without_poison)
            self.reset(size)

    def reset(self, n: int, poison: int | None = None) -> None:
        """dst's first ``n`` bytes filled with ``poison`` (the testing aid's byte), else zeroed; submitted
        either way, so that a band no kernel writes (a pieces band outside every part) is read back as
        reset: Dawn maps dst after its last submit, which a write_buffer alone is not."""
        gpu = self.gpu
        encoder = gpu.device.create_command_encoder()
        if poison is not None:
            gpu.queue.write_buffer(self.dst, 0, bytes([poison]) * n)
        else:
            encoder.clear_buffer(self.dst, 0, n)
        gpu.queue.submit([encoder.finish()])

    def record_readback(self, encoder: Any, n: int) -> None:
        """Staged: dst's first ``n`` bytes copied into the readback, recorded after the kernel."""
        if self.out is not self.dst:
            encoder.copy_buffer_to_buffer(self.dst, 0, self.out, 0, round_up(n, 4))

    def map(self, n: int) -> Any:
        """The read map of ``out``'s first ``n`` bytes, resolved once the work submitted is done."""
        return self.out.map_async(MapMode.READ, 0, round_up(n, 4))

    def hand(self, promise: Any, n: int, sink: Sink) -> None:
        """``sink`` given the first ``n`` bytes of ``out`` once ``promise`` (``map``) resolves."""
        hand_mapped(self.gpu, self.out, promise, n, sink)

    def drain(self, sink: Any, n: int) -> None:
        """The band's first ``n`` bytes to ``sink`` (``drain``; mapped where dst lies, else in the readback)."""
        drain(self.gpu, self.dst, self.out, n, sink)


def drain(gpu: Any, dst: Any, out: Any, n: int, sink: Any) -> None:
    """``dst``'s first ``n`` bytes to ``sink``: kept on the device for a graph's DeviceSink, else mapped in ``out``
    (``buffers.read_through``: dst itself, a readback, or None for one made and freed at once)."""
    if isinstance(sink, DeviceSink):  # a graph's intermediate: stays on the device
        sink.take(dst, n)
    else:
        read_through(gpu, dst, out, n, sink)


Part = tuple[Band, int, int]  # a band of a pass: (its Band, first output element, elements)


def stream(outs: Sequence[Band], count: int, band: int, bits: int, make: Callable[[list[Part]], None],
           drain: Callable[[Band, int], None], poison: int | None = None,
           checked: Callable[[], None] | None = None) -> int:
    """The one band loop: the output's ``count`` elements of ``bits`` in bands of ``band`` elements, a pass of
    one band for each of ``outs`` at a time: each dst poisoned (``poison``, the testing aid's byte), then
    ``make(parts)`` fills the pass's parts, ``checked()`` (a kernel checked the indices as it read them)
    raises before any band leaves, and each band's bytes go to ``drain(band, nbytes)``, in output order.
    Returns the bytes written."""
    written, per_pass = 0, band * len(outs)
    for p0 in range(0, count, per_pass):
        parts = [(out, e0, min(band, count - e0)) for out, e0 in zip(outs, range(p0, min(p0 + per_pass, count), band))]
        if poison is not None:
            for out, _, _ in parts:
                out.reset(out.size, poison)
        make(parts)
        if checked is not None:
            checked()
        for out, _, n in parts:
            nbytes = (n * bits + 7) // 8
            drain(out, nbytes)
            written += nbytes
    return written
