"""NonZero on the device: shaders/nonzero.wgsl counts the non-zero elements
of each workgroup, the host turns the counts into each group's first output
position (a prefix sum of one number per 256 elements), and the same kernel
writes every non-zero element's coordinates as int64.

The kernel's total is checked against the count the plan was made with (the
output's shape): a kernel that counted otherwise is a GpuError, never a
wrong-sized output. Limits, one-line errors: the data and the output each fit
one storage binding, and the data has fewer than 2^32 elements.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from typing import Callable

from ..errors import GpuError, OpError
from ..core.sources import ByteSource
from .device import Gpu
from .engines.base import BufferUsage as U
from .indexed import Buffers, fits, read_to_host
from .program import Program, grid_x
from .layout import pack, pack_rows
from .shaders import shader_source

SHADER = "nonzero.wgsl"
FLOAT_PARTS = {"float16": 2, "bfloat16": 2, "float": 4, "double": 8, "complex64": 4, "complex128": 8}


def shader_const(shader: str, name: str) -> int:
    """Read ``const NAME: u32 = 123u;`` from a shader, so host and kernel agree."""
    m = re.search(rf"const\s+{name}\s*:\s*u32\s*=\s*(\d+)u?\s*;", shader_source(shader))
    if not m:
        raise RuntimeError(f"{shader} defines no u32 constant {name}")
    return int(m.group(1))


@dataclass(frozen=True)
class Elements:
    """The input as the kernel reads it: its bytes, logical shape, element
    strides of its storage, ONNX type name, element bytes and big-endian swap."""

    source: ByteSource
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    onnx_name: str
    itemsize: int
    swap: int = 0

    @property
    def size(self) -> int:
        return math.prod(self.shape)


def _params(e: Elements, groups_x: int, pass_: int, total: int) -> bytes:
    part = FLOAT_PARTS.get(e.onnx_name, 0)
    if e.itemsize < 4:
        width, words, part_words, sign_word = e.itemsize, 0, 1, 0
        full = (1 << (8 * e.itemsize)) - 1
        sign = full & ~((1 << (8 * part - 1)) if not e.swap else 0x80) if part else full
    else:
        width, words = 0, e.itemsize // 4
        part_words = part // 4 if part else words
        sign_word = (0 if e.swap else part_words - 1) if part else 0
        sign = (0xFFFFFF7F if e.swap else 0x7FFFFFFF) if part else 0xFFFFFFFF
    return pack(SHADER, count=e.size, groups_x=groups_x, rank=len(e.shape), pass_=pass_, width=width, words=words,
                part_words=part_words, sign_word=sign_word, sign=sign, total=total)



def nonzero_indices(gpu: Gpu, e: Elements, total: int, sink: Callable[[memoryview], None], *, op: str = "NonZero",
                    max_groups_per_dim: int | None = None) -> int:
    """Stream the (rank, total) int64 coordinates of ``e``'s non-zero
    elements into ``sink``; the bytes written."""
    n, rank = e.size, len(e.shape)
    if n >= 1 << 32:
        raise OpError(f"{op}: the data has {n} elements; the device indexes at most 2^32 - 1")
    nbytes = rank * total * 8
    if e.source.nbytes < n * e.itemsize:
        raise OpError(f"{op}: the data holds {e.source.nbytes} bytes, not {n * e.itemsize}")
    fits(gpu, n * e.itemsize, "the data", op)
    fits(gpu, nbytes, "the output", op)
    if nbytes == 0:
        return 0
    wg = shader_const(SHADER, "WG")
    max_dim = max_groups_per_dim or gpu.limits.get("max-compute-workgroups-per-dimension", 65535)
    groups = -(-n // wg)
    gx = grid_x(groups, max_dim)
    with gpu.lock:  # one call at a time on the device's pipelines and queue (device.py)
        bufs = Buffers(gpu)
        try:
            with gpu.errors(f"{op} on the device"):
                kernel = Program(SHADER, ("read-only-storage", "storage", "storage", "uniform",
                                          "read-only-storage")).on(gpu)
                data = bufs.upload("data", e.source, n * e.itemsize)
                counts = bufs.new("counts", groups * 4, U.STORAGE | U.COPY_SRC | U.COPY_DST)
                out = bufs.new("nonzero", nbytes, U.STORAGE | U.COPY_SRC)
                axes = bufs.new("axes", 16 * max(rank, 1), U.STORAGE | U.COPY_DST)
                gpu.queue.write_buffer(axes, 0, pack_rows(
                    SHADER, "Axis", ({"size": d, "stride": s} for d, s in zip(e.shape, e.strides))) or bytes(16))
                params = bufs.params("nonzero params", _params(e, gx, 0, total))
                group = kernel.bind([data, counts, out, params, axes])
                encoder = gpu.device.create_command_encoder()
                kernel.dispatch(encoder, groups, max_dim, group)
                gpu.queue.submit([encoder.finish()])
                back, view = read_to_host(gpu, bufs, counts, groups * 4)
                found = struct.unpack(f"<{groups}I", view)
                back.unmap()
                starts, at = [], 0
                for c in found:  # each group's first output position
                    starts.append(at)
                    at += c
                if at != total:
                    raise GpuError(f"{op}: the device counted {at} non-zero elements, the host {total}")
                gpu.queue.write_buffer(counts, 0, struct.pack(f"<{groups}I", *starts))
                gpu.queue.write_buffer(params, 0, _params(e, gx, 1, total))
                encoder = gpu.device.create_command_encoder()
                kernel.dispatch(encoder, groups, max_dim, group)
                gpu.queue.submit([encoder.finish()])
                back, view = read_to_host(gpu, bufs, out, nbytes)
                try:
                    sink(view)
                finally:
                    back.unmap()
                return nbytes
        finally:
            bufs.release()

