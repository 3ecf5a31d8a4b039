"""The two ends of every streamed kernel (gpu/copy.py's chunks, gpu/gather.py's and gpu/pieces.py's bands,
gpu/indexed_buffers.py's streamed window): where the host's bytes go in and where the kernel's come out.

    source --fill--> [upload --copy-->] Window.buffer --kernel--> Band.dst [--copy--> readback] --sink-->

Mapped (``buffers.can_map``: a CPU adapter, host sources and a host sink), the kernel's own storage buffers
are mapped: no staging buffer, no copy command. Staged, an upload buffer (its own, or one shared by several
windows, each fill submitted before the next) stands beside a window and a readback beside dst. A graph's
device buffer (gpu/resident.py) is copied on the device either way, into a window or out of dst
(``DeviceSink``). The buffers are made in their owner's list (``buffers.Owned``) and freed with it; what
differs between the kernels is data: sizes, mapped or not, the shared upload, what each band poisons.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from ..core.sources import read_runs
from .buffers import BufferUsage as U
from .buffers import MapMode, Owned, hand_mapped, map_write, read_through, round_up, write_mapped
from .resident import DeviceBuffer, DeviceSink, device_copy


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

    def fill_runs(self, encoder: Any, source: Any, runs: Iterable[tuple[int, int, int]]) -> None:
        """The (source byte, window byte, bytes) ``runs`` of ``source`` into the window: by copies recorded in
        ``encoder`` from a DeviceBuffer, else read into the mapped window or upload (and one copy of it all)."""
        if isinstance(source, DeviceBuffer):
            buffer = source.buffer
            for at, into, n in runs:
                encoder.copy_buffer_to_buffer(buffer, at, self.buffer, into, min(round_up(n, 4), buffer.size - at))
            return
        target = self.buffer if self.upload is None else self.upload
        map_write(self.gpu, target, target.size, lambda mapped: read_runs(source, runs, mapped))
        if self.upload is not None:
            end = max(into + n for _, into, n in runs)
            encoder.copy_buffer_to_buffer(self.upload, 0, self.buffer, 0, round_up(end, 4))


def fill(gpu: Any, encoder: Any, buffer: Any, upload: Any, source: Any, start: int, n: int) -> None:
    """``source``'s bytes [start, start + n) into ``buffer`` from 0: copied on the device from a DeviceBuffer
    (``start`` 4-aligned), read straight into ``buffer`` mapped (``upload`` None), else into ``upload`` mapped
    and copied across (both copies recorded in ``encoder``)."""
    if isinstance(source, DeviceBuffer):
        device_copy(encoder, source, start, buffer, 0, n)
        return
    write_mapped(gpu, buffer if upload is None else upload, source, start, n)
    if upload is not None:
        encoder.copy_buffer_to_buffer(upload, 0, buffer, 0, round_up(n, 4))


class Band:
    """A kernel's output ``dst`` of ``size`` bytes and ``out``, where the host reads it: dst itself mapped,
    else a readback beside it (``staged`` False: none, every band goes to a DeviceSink)."""

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

    def hand(self, promise: Any, n: int, sink: Callable[[memoryview], None]) -> None:
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
