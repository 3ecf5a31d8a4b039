"""The flat copy kernels and how each one is bound and dispatched.

Two shapes of the same byte copy, because adapters differ in what is fast:

``storage`` (shaders/copy.wgsl)
    storage buffer -> storage buffer, vec4<u32> words. The portable kernel and
    the right one for real GPUs.

``uniform`` / ``uniform64`` (shaders/copy_uniform.wgsl, copy_uniform64.wgsl)
    the source is read through uniform-buffer windows of 64 KiB (several per
    dispatch, moved along the buffer with dynamic offsets), the destination is
    a storage buffer. Mesa's CPU drivers (lavapipe, llvmpipe GL) compile a
    storage-buffer load into a per-lane scalar loop, but a uniform load into a
    vector gather; the store stays a per-lane loop, so the widest word wins:
    ``uniform64`` moves vec4<u64> (needs the ``shader-int64`` feature).
    On lavapipe this is 3-4x the storage kernel (`onnxop bench`).

:func:`choose` picks the kernel for an adapter; every kernel is exact on every
adapter that can run it (tests run each one on lavapipe and on GL).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import Any

from .device import Gpu
from .shaders import shader_source

WORD = 16  # bytes of one vec4<u32>; every buffer is a multiple of this


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
    y = -(-groups // max_per_dim)
    return -(-groups // y), y


class Kernel:
    """A copy kernel: which usage its source buffer needs, how buffer sizes
    must be rounded, and how to bind a (src, dst) pair and record a copy."""

    name: str
    shader: str
    align: int  # buffer sizes are multiples of this
    source_usage: str  # "STORAGE" or "UNIFORM"
    features: tuple[str, ...] = ()

    def available(self, gpu: Gpu) -> bool:
        return all(f in gpu.features for f in self.features)

    def max_chunk(self, gpu: Gpu) -> int:
        """The largest chunk one bound buffer pair should hold."""
        return gpu.limits.get("max-buffer-size", 256 << 20)

    def bind(self, gpu: Gpu, src: Any, dst: Any, size: int, max_groups_per_dim: int | None = None) -> Bound:
        raise NotImplementedError


class Bound:
    """A kernel bound to one buffer pair; ``record`` encodes copying the
    first ``nbytes`` and returns the number of dispatches recorded."""

    def record(self, encoder: Any, nbytes: int, timestamp_writes: dict | None = None) -> int:
        raise NotImplementedError


# --------------------------------------------------------------------- storage


class StorageKernel(Kernel):
    name = "storage"
    shader = "copy.wgsl"
    align = WORD
    source_usage = "STORAGE"

    def max_chunk(self, gpu: Gpu) -> int:
        return gpu.limits.get("max-storage-buffer-binding-size", 128 << 20)

    def bind(self, gpu, src, dst, size, max_groups_per_dim=None):
        return _StorageBound(gpu, src, dst, size, max_groups_per_dim)


@dataclass
class _Window:
    offset: int
    size: int
    params: Any
    bind_group: Any


class _StorageBound(Bound):
    """Buffers larger than one binding are covered by several windows, each
    a bind group at an offset (binding offsets are binding-size multiples,
    so always aligned)."""

    def __init__(self, gpu: Gpu, src: Any, dst: Any, size: int, max_groups_per_dim: int | None):
        import wgpu

        self.gpu = gpu
        self.pipeline = gpu.pipeline(StorageKernel.shader)
        self.per_group = shader_const(StorageKernel.shader, "WG") * shader_const(
            StorageKernel.shader, "UNROLL"
        )
        self.max_dim = max_groups_per_dim or gpu.limits.get(
            "max-compute-workgroups-per-dimension", 65535
        )
        binding = StorageKernel().max_chunk(gpu)
        binding -= binding % 256
        layout = self.pipeline.get_bind_group_layout(0)
        self.windows: list[_Window] = []
        for offset in range(0, size, binding):
            n = min(binding, size - offset)
            params = gpu.device.create_buffer(
                label="copy params", size=16, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
            )
            group = gpu.device.create_bind_group(
                layout=layout,
                entries=[
                    {"binding": 0, "resource": {"buffer": src, "offset": offset, "size": n}},
                    {"binding": 1, "resource": {"buffer": dst, "offset": offset, "size": n}},
                    {"binding": 2, "resource": {"buffer": params, "offset": 0, "size": 16}},
                ],
            )
            self.windows.append(_Window(offset, n, params, group))

    def record(self, encoder, nbytes, timestamp_writes=None):
        queue = self.gpu.queue
        compute = encoder.begin_compute_pass(timestamp_writes=timestamp_writes)
        compute.set_pipeline(self.pipeline)
        dispatches = 0
        for w in self.windows:
            if w.offset >= nbytes:
                break
            words = -(-min(w.size, nbytes - w.offset) // WORD)
            gx, gy = grid(-(-words // self.per_group), self.max_dim)
            # write_buffer lands before the next submit, after earlier ones:
            # each window (and each streaming slot) has its own params buffer.
            queue.write_buffer(w.params, 0, struct.pack("<4I", words, gx, 0, 0))
            compute.set_bind_group(0, w.bind_group)
            compute.dispatch_workgroups(gx, gy, 1)
            dispatches += 1
        compute.end()
        return dispatches


# --------------------------------------------------------------------- uniform


class UniformKernel(Kernel):
    name = "uniform"
    shader = "copy_uniform.wgsl"
    source_usage = "UNIFORM"

    @property
    def window(self) -> int:
        """Bytes per uniform window (the shader's array size)."""
        return shader_const(self.shader, "WINDOW_WORDS") * shader_const(self.shader, "WORD_BYTES")

    @property
    def windows(self) -> int:
        return shader_const(self.shader, "WINDOWS")

    @property
    def align(self) -> int:  # type: ignore[override]
        return self.window * self.windows

    def bind(self, gpu, src, dst, size, max_groups_per_dim=None):
        return _UniformBound(self, gpu, src, dst, size)

    def layout_entries(self) -> list[dict]:
        import wgpu

        stage = wgpu.ShaderStage.COMPUTE
        entries = [{"binding": 0, "visibility": stage, "buffer": {"type": "storage", "has_dynamic_offset": True}}]
        entries += [
            {"binding": i + 1, "visibility": stage, "buffer": {"type": "uniform", "has_dynamic_offset": True}}
            for i in range(self.windows)
        ]
        return entries


class Uniform64Kernel(UniformKernel):
    name = "uniform64"
    shader = "copy_uniform64.wgsl"
    features = ("shader-int64",)


class _UniformBound(Bound):
    def __init__(self, kernel: UniformKernel, gpu: Gpu, src: Any, dst: Any, size: int):
        assert size % kernel.align == 0, "uniform-kernel buffers are padded to whole spans"
        self.pipeline, layout = gpu.pipeline_with_layout(kernel.shader, kernel.layout_entries())
        self.window = kernel.window
        self.windows = kernel.windows
        self.span = self.window * self.windows
        self.groups = shader_const(kernel.shader, "WINDOW_WORDS") // shader_const(kernel.shader, "WG")
        entries = [{"binding": 0, "resource": {"buffer": dst, "offset": 0, "size": self.span}}]
        entries += [
            {"binding": i + 1, "resource": {"buffer": src, "offset": 0, "size": self.window}}
            for i in range(self.windows)
        ]
        self.bind_group = gpu.device.create_bind_group(layout=layout, entries=entries)

    def record(self, encoder, nbytes, timestamp_writes=None):
        compute = encoder.begin_compute_pass(timestamp_writes=timestamp_writes)
        compute.set_pipeline(self.pipeline)
        window, windows, group, groups = self.window, self.windows, self.bind_group, self.groups
        dispatches = 0
        # Whole spans only: the buffers are padded, and bytes past nbytes are
        # copied into padding that is never read back.
        for offset in range(0, nbytes, self.span):
            compute.set_bind_group(0, group, [offset] + [offset + i * window for i in range(windows)])
            compute.dispatch_workgroups(groups, 1, 1)
            dispatches += 1
        compute.end()
        return dispatches


KERNELS: dict[str, Kernel] = {k.name: k for k in (StorageKernel(), UniformKernel(), Uniform64Kernel())}


def choose(gpu: Gpu, name: str | None = None) -> Kernel:
    """The kernel to use on ``gpu``: ``name`` if given, else the fastest one
    this kind of adapter can run (measured with `onnxop bench`)."""
    if name is not None:
        kernel = KERNELS[name]
        if not kernel.available(gpu):
            raise ValueError(f"kernel {name!r} needs {', '.join(kernel.features)} on {gpu.name}")
        return kernel
    if gpu.info.adapter_type == "CPU":
        for candidate in ("uniform64", "uniform"):
            if KERNELS[candidate].available(gpu):
                return KERNELS[candidate]
    return KERNELS["storage"]
