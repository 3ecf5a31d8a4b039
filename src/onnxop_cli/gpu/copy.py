"""Move a tensor's bytes through the flat copy kernel, chunk by chunk.

    source --readinto--> upload (mapped) --copy--> src --kernel--> dst
           --copy--> readback (mapped) --sink-->

Chunks are at most the device's ``max_storage_buffer_binding_size`` (and a
default that bounds memory), so a tensor of any size streams through fixed
buffers and is never whole in host memory unless the sink keeps it.

WebGPU invariants, written once here:
- buffer sizes and copy sizes are multiples of 4; our buffers are padded to 16
  (one vec4<u32> word) and the padding is trimmed on readback;
- a dispatch has at most ``max_compute_workgroups_per_dimension`` groups per
  dimension; larger grids are folded into y.
"""

from __future__ import annotations

import math
import os
import re
import struct
from typing import Any, Callable

from ..tensor import ByteSource
from .device import Gpu
from .shaders import shader_source

SHADER = "copy.wgsl"
WORD = 16  # bytes per vec4<u32>
DEFAULT_CHUNK = 64 << 20
ENV_POISON = "ONNXOP_POISON"  # testing aid: fill dst with this byte before each dispatch

Sink = Callable[[memoryview], None]


def shader_const(shader: str, name: str) -> int:
    """Read ``const NAME: u32 = 123u;`` from a shader, so host and kernel agree."""
    m = re.search(rf"const\s+{name}\s*:\s*u32\s*=\s*(\d+)u?\s*;", shader_source(shader))
    if not m:
        raise RuntimeError(f"{shader} defines no u32 constant {name}")
    return int(m.group(1))


def round_up(n: int, to: int) -> int:
    return -(-n // to) * to


def grid(groups: int, max_per_dim: int) -> tuple[int, int]:
    """Fold ``groups`` workgroups into an (x, y) grid within the per-dimension limit."""
    if groups <= max_per_dim:
        return groups, 1
    y = math.ceil(groups / max_per_dim)
    return math.ceil(groups / y), y


def _env_poison() -> int | None:
    value = os.environ.get(ENV_POISON)
    return int(value, 0) & 0xFF if value else None


def copy_through_kernel(
    gpu: Gpu,
    source: ByteSource,
    sink: Sink,
    *,
    chunk_bytes: int | None = None,
    max_groups_per_dim: int | None = None,
    poison: int | None = None,
) -> int:
    """Copy ``source`` to ``sink`` through the flat copy kernel.

    Returns the number of dispatches. ``chunk_bytes`` and ``max_groups_per_dim``
    can be forced small to exercise chunk and grid boundaries on small data;
    ``poison`` fills the output buffer with that byte before every dispatch, so
    a byte the kernel failed to write cannot pass a comparison.
    """
    total = source.nbytes
    if total == 0:
        return 0
    limits = gpu.limits
    binding = limits.get("max-storage-buffer-binding-size", 128 << 20)
    limit = min(chunk_bytes or DEFAULT_CHUNK, binding)
    limit = max(WORD, limit - limit % WORD)
    chunk = min(total, limit)
    max_dim = max_groups_per_dim or limits.get("max-compute-workgroups-per-dimension", 65535)
    poison = _env_poison() if poison is None else poison
    words_per_group = shader_const(SHADER, "WG") * shader_const(SHADER, "UNROLL")

    buf_size = round_up(chunk, WORD)
    device, queue = gpu.device, gpu.queue
    import wgpu

    U = wgpu.BufferUsage
    with gpu.errors("copy"):
        pipeline = gpu.pipeline(SHADER)
        upload = device.create_buffer(label="upload", size=buf_size, usage=U.MAP_WRITE | U.COPY_SRC)
        src = device.create_buffer(label="src", size=buf_size, usage=U.STORAGE | U.COPY_DST)
        dst = device.create_buffer(
            label="dst", size=buf_size, usage=U.STORAGE | U.COPY_SRC | U.COPY_DST
        )
        readback = device.create_buffer(
            label="readback", size=buf_size, usage=U.MAP_READ | U.COPY_DST
        )
        params = device.create_buffer(label="params", size=16, usage=U.UNIFORM | U.COPY_DST)
        bind_group = device.create_bind_group(
            layout=pipeline.get_bind_group_layout(0),
            entries=[
                {"binding": 0, "resource": {"buffer": src, "offset": 0, "size": buf_size}},
                {"binding": 1, "resource": {"buffer": dst, "offset": 0, "size": buf_size}},
                {"binding": 2, "resource": {"buffer": params, "offset": 0, "size": 16}},
            ],
        )
        poison_block = bytes([poison]) * buf_size if poison is not None else None

    dispatches = 0
    try:
        for offset in range(0, total, chunk):
            n = min(chunk, total - offset)
            n4 = round_up(n, 4)
            words = -(-n // WORD)

            with gpu.errors("upload"):
                upload.map_sync(wgpu.MapMode.WRITE)
                mapped = upload._experimental_get_mapped_range(0, buf_size)
            try:
                source.readinto(offset, mapped[:n])
            finally:
                mapped.release()
                with gpu.errors("upload"):
                    upload.unmap()

            gx, gy = grid(-(-words // words_per_group), max_dim)
            with gpu.errors("dispatch"):
                queue.write_buffer(params, 0, struct.pack("<4I", words, gx, 0, 0))
                if poison_block is not None:
                    queue.write_buffer(dst, 0, poison_block)
                encoder = device.create_command_encoder()
                encoder.copy_buffer_to_buffer(upload, 0, src, 0, n4)
                compute = encoder.begin_compute_pass()
                compute.set_pipeline(pipeline)
                compute.set_bind_group(0, bind_group)
                compute.dispatch_workgroups(gx, gy, 1)
                compute.end()
                encoder.copy_buffer_to_buffer(dst, 0, readback, 0, n4)
                queue.submit([encoder.finish()])
                dispatches += 1
                # Mapping waits for the submitted work: it is our synchronisation
                # (queue.on_submitted_work_done_sync() raises in wgpu 0.32).
                readback.map_sync(wgpu.MapMode.READ, 0, n4)
            try:
                view = readback.read_mapped(0, n4, copy=False)
                sink(view[:n])
            finally:
                with gpu.errors("readback"):
                    readback.unmap()
    finally:
        for buf in (upload, src, dst, readback, params):
            _destroy(buf)
    return dispatches


def _destroy(buf: Any) -> None:
    try:
        buf.destroy()
    except Exception:  # noqa: BLE001 - best effort cleanup, the real error is already raised
        pass
