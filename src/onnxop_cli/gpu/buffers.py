"""The one allocator's rules, written once: buffer sizes, binding windows
and dispatch grids, for every kernel (copy, gather) and for ``bench``.

- WebGPU copies and maps in multiples of 4 bytes (``COPY_ALIGN``); onnxop's
  kernels move 16-byte words (``WORD``), so their buffers are multiples of it.
- One binding may not exceed the device's ``max-storage-buffer-binding-size``:
  larger buffers are covered by several windows (``binding_limit``).
- One dispatch may not exceed ``max-compute-workgroups-per-dimension``
  workgroups in x or y: larger ones are folded into an (x, y) grid (``grid``).

The flag values (buffer usage, map mode) are WebGPU's, from
engines/base.py, so no kernel imports an engine's package for them.
"""

from __future__ import annotations

import os
import struct
from typing import TYPE_CHECKING, Any, Callable

from ..errors import UsageError
from .engines.base import BufferUsage, MapMode  # noqa: F401 - BufferUsage: the kernels import it from here

if TYPE_CHECKING:
    from .device import Gpu

COPY_ALIGN = 4  # bytes: WebGPU's copy and map granularity
WORD = 16  # bytes of one vec4<u32>; every kernel buffer is a multiple of this
# WebGPU's default limits: what a device that reports none allows
DEFAULT_BINDING = 128 << 20
DEFAULT_GROUPS_PER_DIM = 65535

# 4 MiB chunks used the least CPU and wall time for a 1 GiB flatten on a
# 2-core lavapipe box (4-64 MiB tried): read, kernel and write then find the
# chunk still in cache. Peak RSS grows with the chunk. Re-measured with the
# run-layout kernels (2026-11-30, benchmarks/chunk_sizes.py): 4 MiB 1.24-1.30 s,
# 8-64 MiB 1.70-2.19 s, on Mesa 22.3 and 25.
DEFAULT_CHUNK = 4 << 20


def round_up(n: int, to: int = COPY_ALIGN) -> int:
    """``n`` rounded up to a multiple of ``to``."""
    return -(-n // to) * to


def binding_limit(gpu: Gpu) -> int:
    """The most bytes one storage-buffer binding may span on ``gpu``."""
    return int(gpu.limits.get("max-storage-buffer-binding-size", DEFAULT_BINDING))


def dispatch_limit(gpu: Gpu, override: int | None = None) -> int:
    """The most workgroups one dispatch may have in x or y (``override``: a test's smaller limit)."""
    return override or int(gpu.limits.get("max-compute-workgroups-per-dimension", DEFAULT_GROUPS_PER_DIM))


def grid(groups: int, max_per_dim: int) -> tuple[int, int]:
    """Fold ``groups`` workgroups into an (x, y) grid within the per-dimension limit."""
    if groups <= max_per_dim:
        return groups, 1
    y = -(-groups // max_per_dim)
    return -(-groups // y), y


def reset_status(gpu: Gpu, status: object, first: int) -> None:
    """A kernel's 16-byte status word written back to ``first`` then zeros, before the kernel lowers or counts it."""
    gpu.queue.write_buffer(status, 0, struct.pack("<4I", first, 0, 0, 0))


def submit_copy(gpu: Gpu, src: Any, start: int, dst: Any, at: int, nbytes: int) -> None:
    """``nbytes`` (whole words) of ``src`` from ``start`` copied into ``dst`` at ``at``, submitted at once."""
    encoder = gpu.device.create_command_encoder()
    encoder.copy_buffer_to_buffer(src, start, dst, at, nbytes)
    gpu.queue.submit([encoder.finish()])


class Owned:
    """An object's buffers, made by ``_buffer`` and destroyed together by ``release``."""

    gpu: Gpu
    buffers: list[Any]

    def _buffer(self, label: str, size: int, usage: int) -> Any:
        buf = self.gpu.device.create_buffer(label=label, size=size, usage=usage)
        self.buffers.append(buf)
        return buf

    def release(self) -> None:
        """Every buffer destroyed, best effort: the error being raised, if any, is the real one."""
        for buf in self.buffers:
            try:
                buf.destroy()
            except Exception:  # noqa: BLE001 - best effort
                pass


def map_write(gpu: Gpu, buf: Any, n4: int, fill: Callable[[memoryview], None]) -> None:
    """``buf``'s first ``n4`` bytes (whole words) mapped for writing and handed to ``fill``, then unmapped."""
    with gpu.errors("upload"):
        gpu.wait(buf.map_async(MapMode.WRITE, 0, n4), "upload")
        mapped = buf._experimental_get_mapped_range(0, n4)
    try:
        fill(mapped)
    finally:
        mapped.release()
        with gpu.errors("upload"):
            buf.unmap()


def read_through(gpu: Gpu, dst: Any, readback: Any, nbytes: int, sink: Any, start: int = 0) -> None:
    """``sink`` given ``nbytes`` of ``dst`` from ``start`` (4-aligned), mapped in ``readback``: ``dst`` itself
    (read where it lies), a buffer it is copied into first, or None (one made for it, destroyed after)."""
    n4 = min(max(COPY_ALIGN, round_up(nbytes, COPY_ALIGN)), dst.size - start)
    own = readback is None
    with gpu.errors("readback"):
        if own:
            readback = gpu.device.create_buffer(label="readback", size=n4, usage=BufferUsage.MAP_READ
                                                | BufferUsage.COPY_DST)
        if readback is not dst:
            submit_copy(gpu, dst, start, readback, 0, n4)
        promise = readback.map_async(MapMode.READ, 0, n4)
    try:
        hand_mapped(gpu, readback, promise, nbytes, sink)
    finally:
        if own:
            readback.destroy()


def read_bytes(gpu: Gpu, dst: Any, nbytes: int, start: int = 0, readable: bool = False) -> bytes:
    """``nbytes`` of ``dst`` from ``start`` as bytes (``read_through``: where it lies if ``readable``)."""
    out: list[bytes] = []
    read_through(gpu, dst, dst if readable else None, nbytes, lambda view: out.append(bytes(view)), start)
    return out[0]


def hand_mapped(gpu: Gpu, buf: Any, promise: Any, nbytes: int, sink: Any) -> None:
    """``sink`` given ``buf``'s first ``nbytes`` once its read map ``promise`` resolves, then ``buf`` unmapped
    (a sink consumes its memoryview before it returns)."""
    with gpu.errors("readback"):
        gpu.wait(promise, "readback")
        view = buf.read_mapped(0, max(COPY_ALIGN, round_up(nbytes, COPY_ALIGN)), copy=False)
    try:
        sink(view[:nbytes])
    finally:
        with gpu.errors("readback"):
            buf.unmap()


def can_map(gpu: Gpu) -> bool:
    """Whether the kernel's own buffers can be mapped (no staging copies)."""
    return "mappable-primary-buffers" in gpu.features


ENV_POISON = "ONNXOP_POISON"  # testing aid: fill a kernel's output with this byte before each chunk or band


def env_poison() -> int | None:
    """The byte ``$ONNXOP_POISON`` names (a testing aid: 0xAB, 171, 0o253),
    else None. Anything else is a usage error naming the variable."""
    value = os.environ.get(ENV_POISON, "").strip()
    if not value:
        return None
    try:
        byte = int(value, 0)
    except ValueError:
        byte = -1
    if not 0 <= byte <= 0xFF:
        raise UsageError(f"${ENV_POISON} must be a byte value 0..255 (such as 0xAB), got {value!r}")
    return byte
