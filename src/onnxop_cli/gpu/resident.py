"""Tensors that stay on the device between the nodes of a graph.

    host source --upload--> gather --> device buffer      (an intermediate)
    device buffer --copy--> gather --> device buffer      (one from another)
    device buffer --copy--> gather --readback--> sink      (a graph output)

The same gather kernel and plan as gpu/gather.py, with either side on the
device: a device source fills the kernel's src window with a buffer-to-buffer
copy (no mapping, nothing crosses to the host), and a device output takes
each band with a copy into its buffer. ``Traffic`` counts the bytes that do
cross, so a caller can show that only a graph's inputs and outputs did.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.sources import ByteSource
from ..core.view import View
from .device import Gpu
from .buffers import WORD, BufferUsage, env_poison, round_up
from .gather import Sink, _random_access, _Run, _spool, make_plan
from .tiling import Plan, Upload, in_order


@dataclass
class Traffic:
    """Bytes moved between host and device."""

    uploaded: int = 0
    read_back: int = 0


class DeviceBuffer:
    """``nbytes`` of row-major little-endian elements in a storage buffer
    (padded to a whole word); ``release`` frees it at once."""

    def __init__(self, gpu: Gpu, nbytes: int, label: str = "intermediate") -> None:
        U = BufferUsage
        self.gpu, self.nbytes = gpu, nbytes
        with gpu.errors(f"allocating {nbytes} bytes for {label}"):
            self.buffer: Any = gpu.device.create_buffer(
                label=label, size=max(WORD, round_up(nbytes, WORD)), usage=U.STORAGE | U.COPY_SRC | U.COPY_DST
            )

    def release(self) -> None:
        if self.buffer is not None:
            try:
                self.buffer.destroy()
            finally:
                self.buffer = None


class _WindowsOnly(Plan):
    """A plan whose uploads are whole windows: a buffer-to-buffer copy needs
    4-byte aligned offsets, which windows have (they start at 16-byte words)
    and packed runs do not."""

    def packed(self, box, budget):  # noqa: D102 - see Plan.packed
        return None


class _ResidentRun(_Run):
    def __init__(self, *args: Any, device_source: DeviceBuffer | None, device_out: DeviceBuffer | None,
                 traffic: Traffic, **kw: Any) -> None:
        super().__init__(*args, host_in=device_source is None, host_out=device_out is None, **kw)
        self.device_source, self.device_out, self.traffic = device_source, device_out, traffic

    def _fill(self, encoder: Any, upload: Upload) -> None:
        if self.device_source is None:
            self.traffic.uploaded += sum(n for _, _, n in upload.runs)
            return super()._fill(encoder, upload)
        buffer = self.device_source.buffer
        for source, into, n in upload.runs:
            n = min(round_up(n, 4), buffer.size - source)
            encoder.copy_buffer_to_buffer(buffer, source, self.src, into, n)

    def _drain(self, sink: Sink, written: int, nbytes: int) -> None:
        if self.device_out is None:
            self.traffic.read_back += nbytes
            return super()._drain(sink, written, nbytes)
        gpu = self.gpu
        with gpu.errors("gather into a device buffer"):
            encoder = gpu.device.create_command_encoder()
            encoder.copy_buffer_to_buffer(self.dst, 0, self.device_out.buffer, written, round_up(nbytes, 4))
            gpu.queue.submit([encoder.finish()])


def gather(
    gpu: Gpu,
    source: ByteSource | DeviceBuffer,
    view: View,
    bits: int,
    *,
    swap: int = 0,
    sink: Sink | None = None,
    traffic: Traffic | None = None,
    binding_bytes: int | None = None,
) -> DeviceBuffer | None:
    """The view's elements of ``source`` (host bytes or a device buffer),
    row-major: streamed into ``sink`` when one is given (returns None), else
    into a new device buffer (returned; the caller releases it)."""
    traffic = traffic if traffic is not None else Traffic()
    on_device = isinstance(source, DeviceBuffer)
    plan, band_bytes, window_bytes = make_plan(
        gpu, source.nbytes, view, bits, swap, binding_bytes, _WindowsOnly if on_device else Plan
    )
    out = None
    if sink is None:
        out = DeviceBuffer(gpu, (view.size * bits + 7) // 8)
    if plan is None:
        return out
    spool = None
    if not on_device and not (_random_access(source) or in_order(plan)):
        spool = _spool(source)  # type: ignore[arg-type]
    try:
        with gpu.lock:  # one call at a time on the device's pipelines and queue (device.py)
            run = _ResidentRun(
                gpu, plan, spool or source, band_bytes, window_bytes, swap, None,
                device_source=source if on_device else None, device_out=out, traffic=traffic,  # type: ignore[arg-type]
            )
            try:
                run.stream(sink or (lambda chunk: None), env_poison())
            finally:
                run.release()
    except BaseException:
        if out is not None:
            out.release()
        raise
    finally:
        if spool is not None:
            spool.close()
    return out
