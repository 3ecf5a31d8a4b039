"""Re-lay out Fortran-ordered and/or big-endian bytes to row-major little-endian
bytes through ``shaders/relayout.wgsl``.

    source --readinto--> upload --copy--> src --relayout--> dst --copy--> readback --sink-->

A big-endian row-major tensor needs no element to move, only bytes swapped
within each element: it streams through in chunks like the flat copy.

A Fortran-ordered tensor needs every source element reachable from every
output word: the whole tensor is one chunk, so it must fit one storage binding
(``max_storage_buffer_binding_size``: 128 MiB on lavapipe and llvmpipe).
Chunking it would make one side of the transposition scattered (blocks of the
last axis are contiguous in the source but strided in the output, and the
reverse for the first axis), so larger tensors are refused by the caller with
the limit named (see :func:`whole_tensor_limit`), never copied on the host.
"""

from __future__ import annotations

import os
import struct
from typing import Any, Callable

from ..tensor import ByteSource
from .kernels import grid, round_up, shader_const
from .device import Gpu

SHADER = "relayout.wgsl"
ITEMSIZES = (1, 2, 4, 8, 16)
WORD = 16  # buffers are padded to 16 bytes, a multiple of every element size
DEFAULT_CHUNK = 64 << 20  # streaming chunk for row-major (byte-swap only) input
ENV_POISON = "ONNXOP_POISON"  # as for the copy kernel: fill dst before each dispatch

Sink = Callable[[memoryview], None]


def source_axes(shape: tuple[int, ...], fortran: bool) -> list[tuple[int, int]]:
    """(dim, source stride in elements) per row-major axis, for the kernel.

    Size-1 axes change no address and are dropped; an empty list means the
    identity mapping (C order, or a Fortran array with at most one axis > 1,
    whose bytes are already row-major).
    """
    dims = [int(d) for d in shape if d != 1]
    if not fortran or len(dims) < 2:
        return []
    axes, stride = [], 1
    for d in dims:
        axes.append((d, stride))
        stride *= d
    return axes


def binding_limit(gpu: Gpu) -> int:
    return int(gpu.limits.get("max-storage-buffer-binding-size", 128 << 20))


def whole_tensor_limit(gpu: Gpu, limit: int | None = None) -> int:
    """The largest tensor, in bytes, whose re-layout needs it whole (Fortran order)."""
    limit = min(limit or binding_limit(gpu), binding_limit(gpu))
    return limit - limit % WORD


def relayout_through_kernel(
    gpu: Gpu,
    source: ByteSource,
    sink: Sink,
    *,
    shape: tuple[int, ...],
    itemsize: int,
    fortran: bool,
    swap: int = 0,
    chunk_bytes: int | None = None,
    max_groups_per_dim: int | None = None,
    poison: int | None = None,
) -> int:
    """Write ``source``'s elements to ``sink`` in row-major little-endian order.

    ``itemsize`` is one of 1, 2, 4, 8, 16; ``swap`` is 0 or the byte-swap
    unit of big-endian data. ``chunk_bytes`` caps the binding size (tests
    force it small); a Fortran-ordered tensor larger than that cap raises
    ValueError -- callers check :func:`whole_tensor_limit` first. Returns the
    number of dispatches.
    """
    if itemsize not in ITEMSIZES:
        raise ValueError(f"the re-layout kernel takes elements of {ITEMSIZES} bytes, not {itemsize}")
    if swap not in (0, 2, 4, 8) or (swap and itemsize % swap):
        raise ValueError(f"byte-swap unit {swap} does not divide element size {itemsize}")
    total = source.nbytes
    if total == 0:
        return 0
    axes = source_axes(shape, fortran)
    limit = whole_tensor_limit(gpu, chunk_bytes or (None if axes else DEFAULT_CHUNK))
    if axes:
        if total > limit:
            raise ValueError(f"a Fortran-ordered tensor of {total} bytes exceeds the {limit}-byte binding")
        chunk = total
    else:
        chunk = min(total, max(WORD, limit))
    limits = gpu.limits
    max_dim = max_groups_per_dim or limits.get("max-compute-workgroups-per-dimension", 65535)
    if poison is None and os.environ.get(ENV_POISON):
        poison = int(os.environ[ENV_POISON], 0) & 0xFF
    per_group = shader_const(SHADER, "WG") * shader_const(SHADER, "WORDS")  # output words

    buf_size = round_up(chunk, WORD)
    axes_bytes = b"".join(struct.pack("<2I", d, s) for d, s in axes) or bytes(8)
    device, queue = gpu.device, gpu.queue
    import wgpu

    U = wgpu.BufferUsage
    buffers: list[Any] = []
    with gpu.errors("re-layout"):
        pipeline = gpu.pipeline(SHADER)

        def buffer(label: str, size: int, usage: int) -> Any:
            buf = device.create_buffer(label=label, size=size, usage=usage)
            buffers.append(buf)
            return buf

        upload = buffer("upload", buf_size, U.MAP_WRITE | U.COPY_SRC)
        src = buffer("src", buf_size, U.STORAGE | U.COPY_DST)
        dst = buffer("dst", buf_size, U.STORAGE | U.COPY_SRC | U.COPY_DST)
        readback = buffer("readback", buf_size, U.MAP_READ | U.COPY_DST)
        params = buffer("params", 32, U.UNIFORM | U.COPY_DST)
        axes_buf = buffer("axes", round_up(len(axes_bytes), WORD), U.STORAGE | U.COPY_DST)
        queue.write_buffer(axes_buf, 0, axes_bytes)
        bind_group = device.create_bind_group(
            layout=pipeline.get_bind_group_layout(0),
            entries=[
                {"binding": 0, "resource": {"buffer": src, "offset": 0, "size": buf_size}},
                {"binding": 1, "resource": {"buffer": dst, "offset": 0, "size": buf_size}},
                {"binding": 2, "resource": {"buffer": params, "offset": 0, "size": 32}},
                {"binding": 3, "resource": {"buffer": axes_buf, "offset": 0, "size": axes_buf.size}},
            ],
        )
        poison_block = bytes([poison]) * buf_size if poison is not None else None

    dispatches = 0
    try:
        for offset in range(0, total, chunk):
            n = min(chunk, total - offset)
            n4 = round_up(n, 4)
            words = n4 // 4

            with gpu.errors("upload"):
                gpu.wait(upload.map_async(wgpu.MapMode.WRITE), "upload")
                mapped = upload._experimental_get_mapped_range(0, buf_size)
            try:
                source.readinto(offset, mapped[:n])
            finally:
                mapped.release()
                with gpu.errors("upload"):
                    upload.unmap()

            gx, gy = grid(-(-words // per_group), max_dim)
            header = struct.pack("<8I", words, gx, n // itemsize, itemsize, swap, len(axes), 0, 0)
            with gpu.errors("re-layout dispatch"):
                queue.write_buffer(params, 0, header)
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
                gpu.wait(readback.map_async(wgpu.MapMode.READ, 0, n4), "readback")
            try:
                view = readback.read_mapped(0, n4, copy=False)
                sink(view[:n])
            finally:
                with gpu.errors("readback"):
                    readback.unmap()
    finally:
        for buf in buffers:
            try:
                buf.destroy()
            except Exception:  # noqa: BLE001 - best effort cleanup; the real error is raised
                pass
    return dispatches
