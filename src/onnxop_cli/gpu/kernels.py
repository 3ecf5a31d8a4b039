"""The flat copy kernels and how each one is bound and dispatched: the two
widths gpu/render/copy.py renders (and says why), ``storage`` and
``storage64``. (Each width with its unroll doubled or in runs of 16
invocations won on neither Mesa: docs/performance-adapters.md.)

Which one is faster depends on the adapter and its driver, so it is not
decided here: choose.py measures the available kernels once per
adapter and driver and caches the answer.

Every kernel is exact on every adapter that can run it (tests run each one
on lavapipe and on GL, poisoned output, chunk and grid boundaries).
``survey`` tells ``info`` which adapters of which engines can run each.
"""

from __future__ import annotations

from typing import Any

from .buffers import binding_limit, dispatch_limit, grid
from .device import Gpu
from .engines.base import BufferUsage
from .program import compiled
from .render.copy import Copy
from .render.frame import Needs
from .render.schedule import Runs


class Kernel:
    """A copy kernel (``render``: its rendered ``wgsl``, ``shader`` its label):
    what its code needs beyond WebGPU (``needs``, ``features``), how buffer
    sizes must be rounded (``align``: one workgroup's span, so no word is
    bounds-checked), and how to bind a (src, dst) pair and record a copy."""

    def __init__(self, name: str, render: Copy) -> None:
        self.name, self.render, self.shader, self.wgsl = name, render, render.label, render.wgsl()
        self.needs = render.needs
        self.features = self.needs.features
        self.word = render.schedule.nbytes
        self.per_group = render.schedule.wg * render.schedule.unroll  # words one workgroup copies

    @property
    def align(self) -> int:
        return self.per_group * self.word

    def available(self, gpu: Gpu) -> bool:
        return all(f in gpu.features for f in self.features)

    def max_chunk(self, gpu: Gpu) -> int:
        """The largest chunk one binding holds: whole spans within the limit."""
        limit = binding_limit(gpu)
        return max(self.align, limit - limit % self.align)

    def bind(self, gpu: Gpu, src: Any, dst: Any, size: int, max_groups_per_dim: int | None = None) -> Bound:
        """Bind ``size`` bytes (a multiple of ``align``) of src and dst."""
        return Bound(self, gpu, src, dst, size, max_groups_per_dim)


class Bound:
    """A kernel bound to one buffer pair; ``record`` encodes copying the
    first ``nbytes`` (rounded up to whole spans) and returns the number of
    dispatches recorded. Buffers larger than one binding are covered by
    several windows, each (offset, bytes, its params buffer, its bind group)
    (offsets are multiples of the binding size, itself a multiple of the
    span, so always aligned)."""

    def __init__(self, kernel: Kernel, gpu: Gpu, src: Any, dst: Any, size: int, max_groups_per_dim: int | None):
        assert size % kernel.align == 0, "copy buffers are padded to whole workgroup spans"
        self.gpu, self.kernel = gpu, kernel
        self.program = compiled(gpu, kernel.render)
        self.max_dim = dispatch_limit(gpu, max_groups_per_dim)
        binding = kernel.max_chunk(gpu)
        self.windows: list[tuple[int, int, Any, Any]] = []
        for offset in range(0, size, binding):
            n = min(binding, size - offset)
            params = gpu.device.create_buffer(label="copy params", size=16,
                                              usage=BufferUsage.UNIFORM | BufferUsage.COPY_DST)
            group = self.program.bind([(src, offset, n), (dst, offset, n), (params, 0, 16)])
            self.windows.append((offset, n, params, group))

    def record(self, encoder: Any, nbytes: int, timestamp_writes: dict | None = None) -> int:
        queue = self.gpu.queue
        span = self.kernel.align
        compute = encoder.begin_compute_pass(timestamp_writes=timestamp_writes)
        dispatches = 0
        for offset, size, params, group in self.windows:
            if offset >= nbytes:
                break
            groups = -(-min(size, nbytes - offset) // span)
            gx, gy = grid(groups, self.max_dim)
            # write_buffer lands before the next submit, after earlier ones:
            # each window (and each streaming slot) has its own params buffer.
            queue.write_buffer(params, 0, self.kernel.render.PARAMS.pack(groups=groups, groups_x=gx))
            self.program.record(compute, groups, self.max_dim, group)
            dispatches += 1
        compute.end()
        return dispatches


WIDTHS = {"storage": Runs("vec4<u32>", 16, unroll=4), "storage64": Runs("vec4<u64>", 32, unroll=8)}  # Mesa 22.3's
KERNELS: dict[str, Kernel] = {name: Kernel(name, Copy(runs)) for name, runs in WIDTHS.items()}  # choose.py's COPY


def available(gpu: Gpu) -> list[Kernel]:
    """The kernels ``gpu`` can run, portable one first."""
    return [k for k in KERNELS.values() if k.available(gpu)]


def require(gpu: Gpu, name: str) -> Kernel:
    """``KERNELS[name]``, if it exists and ``gpu`` can run it."""
    from ..errors import UsageError

    names = ", ".join(k.name for k in available(gpu))
    kernel = KERNELS.get(name)
    if kernel is None:
        raise UsageError(f"unknown kernel {name!r}; available on {gpu.name}: {names}")
    if not kernel.available(gpu):
        raise UsageError(f"kernel {name!r} needs {', '.join(kernel.features)}, which {gpu.name} lacks; "
                         f"available: {names}")
    return kernel


def survey(backend: str, chosen: str = "wgpu") -> tuple[dict[str, list[Any]], list[tuple[Kernel, Needs, list[Any]]]]:
    """For ``info``: the adapters of ``backend`` each installed engine sees
    (engines.SIDE_BY_SIDE, and the ``chosen`` one)
    ({engine: [AdapterInfo]}, or a one-line reason in place of the list) and,
    per kernel, (kernel, what it needs (gpu/render/frame.py), the adapters
    that can run it)."""
    from ..errors import GpuError
    from . import engines
    from .device import BACKENDS, list_adapters

    seen: dict[str, Any] = {}
    for engine in dict.fromkeys((*engines.SIDE_BY_SIDE, chosen)):
        if not engines.installed(engine):
            seen[engine] = f"not installed ({'pip install onnxop[dawn]' if engine == 'dawn' else 'pip install wgpu'})"
            continue
        try:
            found = list_adapters(engine)
        except GpuError as e:
            seen[engine] = e.message
            continue
        seen[engine] = [a for a in found if backend == "auto" or a.backend in BACKENDS[backend][1]]
    every = [a for found in seen.values() if isinstance(found, list) for a in found]
    rows = []
    for kernel in KERNELS.values():
        need = kernel.needs
        rows.append((kernel, need, [a for a in every if not need.missing(a.features, a.limits)]))
    return seen, rows
