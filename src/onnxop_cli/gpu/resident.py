"""Tensors that stay on the device between the nodes of a graph.

    host source --upload--> gather --> device buffer      (an intermediate)
    device buffer --copy--> gather --> device buffer      (one from another)
    device buffer --copy--> gather --readback--> sink      (a graph output)

Every streamed kernel takes either side on the device (gpu/bands.py): a device
source fills the kernel's window with a buffer-to-buffer copy (no mapping,
nothing crosses to the host), and a DeviceSink takes each band with a copy
into its buffer (gpu/gather.py: the view of a graph).
``Traffic`` counts the bytes that do cross, so a caller can show that only a
graph's inputs and outputs did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import OpError
from .device import Gpu
from .buffers import WORD, BufferUsage, read_bytes, round_up, submit_copy


@dataclass
class Traffic:
    """Bytes moved between host and device."""

    uploaded: int = 0
    read_back: int = 0
    # values a later node needed on the host (a shape, a condition), by name: part of read_back
    host_values: dict[str, int] = field(default_factory=dict)


class DeviceBuffer:
    """``nbytes`` of row-major little-endian elements in a storage buffer
    (padded to a whole word); ``release`` frees it at once."""

    def __init__(self, gpu: Gpu, nbytes: int, label: str = "intermediate") -> None:
        U = BufferUsage
        self.gpu, self.nbytes, self.label = gpu, nbytes, label
        limit = gpu.limits.get("max-buffer-size")
        if limit is not None and round_up(nbytes, WORD) > limit:  # the engine's refusal named no cause
            raise OpError(f"{label} takes {nbytes} bytes on the device, more than one buffer there holds "
                          f"({limit}, max-buffer-size): a graph keeps each value onnxop's nodes make on the "
                          "device whole")
        with gpu.errors(f"allocating {nbytes} bytes for {label}"):
            self.buffer: Any = gpu.device.create_buffer(
                label=label, size=max(WORD, round_up(nbytes, WORD)), usage=U.STORAGE | U.COPY_SRC | U.COPY_DST
            )

    traffic: Traffic | None = None  # where host reads of it are counted (set by the graph)
    label: str = "intermediate"

    def release(self) -> None:
        if self.buffer is not None:
            try:
                self.buffer.destroy()
            finally:
                self.buffer = None

    # The ByteSource protocol (core/sources.py): a kernel that cannot take a
    # device input, or a node that needs the values on the host (a shape),
    # reads them back here -- counted in ``traffic`` as a host value.
    def readinto(self, offset: int, out: memoryview) -> None:
        n = len(out)
        if not n:
            return
        start = offset - offset % 4
        raw = read_back(self.gpu, self.buffer, start, offset + n - start)
        out[:] = raw[offset - start : offset - start + n]
        if self.traffic is not None:
            self.traffic.read_back += n
            self.traffic.host_values[self.label] = self.traffic.host_values.get(self.label, 0) + n

    def to_array(self):
        import numpy as np

        out = np.empty(self.nbytes, dtype=np.uint8)
        self.readinto(0, memoryview(out))
        return out

    def close(self) -> None:
        pass


def read_back(gpu: Gpu, buffer: Any, start: int, nbytes: int) -> bytes:
    """``nbytes`` of a storage buffer from ``start`` (4-byte aligned), through a mapped buffer."""
    with gpu.lock:
        return read_bytes(gpu, buffer, nbytes, start)


class DeviceSink:
    """A kernel's output written into a DeviceBuffer instead of read back.

    Kernels that know it (gpu/pieces.py, gpu/indexed.py, gpu/scatter.py)
    call ``take(dst, nbytes)``: a buffer-to-buffer copy of each band, nothing
    crosses. Called as a plain sink (``sink(chunk)``), the host bytes are
    written in (counted as uploaded): the fallback for any other kernel."""

    def __init__(self, out: DeviceBuffer, traffic: Traffic) -> None:
        self.out, self.traffic, self.written = out, traffic, 0
        self._pending = b""

    def take(self, src: Any, nbytes: int) -> None:
        """Append ``nbytes`` of ``src`` (from offset 0) on the device. A band
        after one that ended inside a word (OneHot's bands of 1- or 2-byte
        elements end where a line or the binding does) cannot be copied to
        its place, which is not 4-aligned: it is read back and joined on the
        host to that word's bytes, written from the word's start."""
        gpu = self.out.gpu
        if self.written % 4 or self._pending:
            if self.written % 4:  # the word the last band ended in: its bytes so far are pending again
                head = self.written - self.written % 4
                self._pending = read_back(gpu, self.out.buffer, head, self.written % 4)
                self.written = head
            self(memoryview(read_back(gpu, src, 0, nbytes)))
            return
        n4 = min(round_up(nbytes, 4), self.out.buffer.size - self.written)
        if n4 <= 0:
            return
        with gpu.lock, gpu.errors("a kernel's output into a device buffer"):
            submit_copy(gpu, src, 0, self.out.buffer, self.written, n4)
        self.written += nbytes

    def __call__(self, chunk: memoryview) -> None:
        data = self._pending + bytes(chunk)
        whole = len(data) - len(data) % 4
        if whole:
            self._write(data[:whole])
        self._pending = data[whole:]

    def close(self) -> None:
        if self._pending:
            self._write(self._pending + bytes(-len(self._pending) % 4))
            self._pending = b""

    def _write(self, data: bytes) -> None:
        gpu = self.out.gpu
        with gpu.lock, gpu.errors("writing a device buffer"):
            gpu.queue.write_buffer(self.out.buffer, self.written, data)
        self.written += len(data)
        self.traffic.uploaded += len(data)


def copy_on_device(gpu: Gpu, source: DeviceBuffer, out: DeviceBuffer) -> None:
    """``source``'s bytes into ``out`` (BitCast: the same bytes, another type)."""
    n = min(source.buffer.size, out.buffer.size)
    with gpu.lock, gpu.errors("copying a device buffer"):
        submit_copy(gpu, source.buffer, 0, out.buffer, 0, n)
