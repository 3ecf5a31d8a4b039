"""Scatters whose data (or its claims, 4 bytes an element) is larger than
one storage binding: the output a band at a time.

    updates ──▶ upd;  indices ──▶ norm ──offsets mode──▶ targets (into the whole data)
    per band [b0, b0 + bn):  data band ──▶ out;  targets outside ──▶ done,
                             the rest rebased (the rounds' band pass) ▶ the rounds ▶ sink

Each target lies in one band, so a band's rounds are the whole scatter's
restricted to it: the same updates in the same index order, the same bytes
as one pass (gpu/scatter.py's rounds; the slice and line kernels, which
address the whole data, are not used here). reduction none refuses two
updates of one element before any band reaches the sink: a first sweep
runs every band's one round (claims and apply into a scratch band) and
only then are the bands made for real. The updates and their targets
still fit one binding each (a one-line refusal otherwise, in scatter.py).
"""

from __future__ import annotations

from typing import Any, Callable

from . import gather_windows
from .device import Gpu
from .indexed import (
    Data, Sink, Table, Buffers, Gather, to_sink, binding_limit, row_strides, U,
)

def band_elements(bits: int, cap: int) -> int:
    """Elements of a band: its data and its claims each within ``cap`` bytes, whole words."""
    return max(128, min(cap * 8 // bits, cap // 4) // 128 * 128)


class _Fill:
    """A band of the data into a buffer, row-major and little-endian: read
    straight from the source when it is so already, else re-laid (and
    swapped) by the gather kernel from the data's windows."""

    def __init__(self, gpu: Gpu, bufs: Buffers, data: Data, max_dim: int, band: int) -> None:
        from .resident import DeviceBuffer

        self.gpu, self.data = gpu, data
        self.direct = not data.swap and data.row_major
        self.on_device = isinstance(data.source, DeviceBuffer)  # a graph's intermediate: copied on the device
        if self.on_device and self.direct:
            return
        if self.direct:
            self.staging = bufs.new("upload", min(gather_windows.UPLOAD_STEP, band * data.bits // 8),
                                    U.MAP_WRITE | U.COPY_SRC)
            return
        self.windows = gather_windows.plan(gpu, bufs, data.source, data.size, data.bits, binding_limit(gpu),
                                           data.nbytes, band * data.bits // 8, stream=False)
        ident = Table.over(data.shape, data.strides or row_strides(data.shape), (0,) * len(data.shape))
        self.kernel = Gather(gpu, bufs, self.windows.first, bufs.new("norm", 16, U.STORAGE), ident, max_dim)

    def __call__(self, out: Any, b0: int, bn: int) -> None:
        d = self.data
        if self.on_device and self.direct:
            from .resident import device_copy

            encoder = self.gpu.device.create_command_encoder()
            device_copy(encoder, d.source, b0 * d.bits // 8, out, 0, (bn * d.bits + 7) // 8)
            self.gpu.queue.submit([encoder.finish()])
            return
        if self.direct:
            nbytes = (bn * d.bits + 7) // 8
            gather_windows.write(self.gpu, out, gather_windows.Slice(d.source, b0 * d.bits // 8, nbytes), nbytes,
                                 self.staging)
            return
        for w, (buf, w0, wn) in enumerate(self.windows.each()):
            self.kernel.run(out, b0, bn, d.bits, d.swap,
                            window=None if self.windows.single else (buf, w0, wn, w > 0))


def scatter_banded(gpu: Gpu, bufs: Buffers, data: Data, updates: Data, norm: Any, table: Table, reduce: Any,
                   op: str, max_dim: int, max_rounds: int | None, sink: Sink, cap: int,
                   copy_in: Callable[..., Any], run_rounds: Callable[..., None]) -> int:
    """gpu/scatter.scatter_indexed's work, band by band (see the module), with
    its ``_copy_in`` and ``_rounds`` (passed in: this module is below it);
    returns the bytes written."""
    n = updates.size
    band = band_elements(data.bits, cap)
    bands = [(b0, min(band, data.size - b0)) for b0 in range(0, data.size, band)]
    out = bufs.result("scatter band", (band * data.bits + 7) // 8)
    fill = _Fill(gpu, bufs, data, max_dim, band)
    targets = upd = None
    if n:
        upd = copy_in(gpu, bufs, updates, max_dim, output=False)
        targets = bufs.new("targets", 4 * n, U.STORAGE | U.COPY_SRC)
        Gather(gpu, bufs, upd, norm, table, max_dim).run(targets, 0, n, 32, 0, offsets=True)

    def rounds(b: tuple[int, int]) -> None:
        sub = bufs.child()  # a band's claims and lists, freed before the next band's
        try:
            run_rounds(gpu, sub, out, upd, targets, data, n, reduce, op, max_dim, max_rounds, band=b)
        finally:
            sub.release()

    if n and reduce.kind == "none":  # two updates of one element: refused before any band is written
        for b in bands:
            rounds(b)
    written = 0
    for b0, bn in bands:
        fill(out, b0, bn)
        if n:
            rounds((b0, bn))
        written += to_sink(gpu, bufs, out, (bn * data.bits + 7) // 8, sink)
    return written
