"""One program path for every kernel: compile (cached), bind, dispatch.

A :class:`Program` is a rendered kernel's WGSL (``code``, ``shader`` its label) and how its bindings are laid
out: ``kinds``, one buffer binding type per binding in order (``"uniform+offset"``: a uniform with a dynamic
offset). Kernels of equal kinds share bind groups: WebGPU takes a bind group for any pipeline whose layout
has the same entries (gpu/gather.py's transpose kernels, gpu/pieces.py's runs kernels).

``program.on(gpu)`` is the :class:`Compiled` kernel, its pipeline compiled once per device (kept in the
Gpu's ``_pipelines`` by label and kinds); ``compiled`` compiles a rendered kernel (gpu/render/) the same
way, its WGSL rendered only then (rendering reads parts from the package's files: not at import); ``bind`` makes a bind group of buffers or (buffer, offset, size) entries, and
``dispatch`` (a pass of its own) or ``record`` (into an open pass) runs ``groups`` workgroups, folded into
an (x, y) grid at the dispatch limit (buffers.grid): a kernel's Params name
the x extent (``grid_x``) so it can rebuild the flat group index.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from .buffers import grid
from .device import Gpu
from .engines.base import ShaderStage

DYNAMIC = "+offset"  # a kind's suffix: the binding takes a dynamic offset


def entries(kinds: Sequence[str]) -> list[dict]:
    """The bind group layout entries of ``kinds`` (binding i: kinds[i])."""
    out = []
    for i, kind in enumerate(kinds):
        buffer: dict[str, Any] = {"type": kind.removesuffix(DYNAMIC)}
        if kind.endswith(DYNAMIC):
            buffer["has_dynamic_offset"] = True
        out.append({"binding": i, "visibility": ShaderStage.COMPUTE, "buffer": buffer})
    return out


def grid_x(groups: int, max_dim: int) -> int:
    """The x extent of the grid ``dispatch`` folds ``groups`` into (at least 1)."""
    return grid(max(groups, 1), max_dim)[0]


class Program:
    """A kernel and its binding layout (see the module's docstring); ``code`` its WGSL, or what renders it."""

    def __init__(self, shader: str, kinds: Sequence[str] = (), *, code: str | Callable[[], str]) -> None:
        self.shader, self.kinds, self._code = shader, tuple(kinds), code

    @property
    def code(self) -> str:
        return self._code() if callable(self._code) else self._code

    def on(self, gpu: Gpu) -> Compiled:
        """This program compiled for ``gpu`` (once: the device keeps it; WebGPU's failures a GpuError
        naming the kernel and the adapter)."""
        key = (self.shader, self.kinds)
        found = gpu._pipelines.get(key)
        if found is None:
            device, label = gpu.device, self.shader
            with gpu.errors(f"compiling {label}"):
                layout = device.create_bind_group_layout(label=label, entries=entries(self.kinds))
                module = device.create_shader_module(label=label, code=self.code)
                found = gpu._pipelines[key] = (device.create_compute_pipeline(
                    label=label,
                    layout=device.create_pipeline_layout(label=label, bind_group_layouts=[layout]),
                    compute={"module": module, "entry_point": "main"},
                ), layout)
        return Compiled(gpu, *found)


def rendered(kernel: Any, kinds: Sequence[str] | None = None) -> Program:
    """A rendered kernel (a gpu/render/ Frame: ``label``, ``kinds``, ``wgsl()``) as a Program, on ``kinds``
    (another kernel's layout) when given, rendered when first compiled."""
    return Program(kernel.label, kinds or kernel.kinds, code=kernel.wgsl)


def compiled(gpu: Gpu, kernel: Any, kinds: Sequence[str] | None = None) -> Compiled:
    """``rendered(kernel, kinds)`` compiled for ``gpu`` (once: the device caches it)."""
    return rendered(kernel, kinds).on(gpu)


class Compiled:
    """A program's pipeline and bind group layout on one device."""

    def __init__(self, gpu: Gpu, pipeline: Any, layout: Any) -> None:
        self.gpu, self.pipeline, self.layout = gpu, pipeline, layout

    def bind(self, resources: Sequence[Any]) -> Any:
        """A bind group: binding i is ``resources[i]``, a whole buffer or a
        (buffer, offset, size) range of one."""
        return self.gpu.device.create_bind_group(layout=self.layout, entries=[
            {"binding": i, "resource": _range(r)} for i, r in enumerate(resources)
        ])

    def dispatch(self, encoder: Any, groups: int, max_dim: int, bind_group: Any,
                 dynamic_offsets: Sequence[int] = ()) -> None:
        """``groups`` workgroups in a compute pass of their own (none when 0)."""
        if groups == 0:
            return
        compute = encoder.begin_compute_pass()
        self.record(compute, groups, max_dim, bind_group, dynamic_offsets)
        compute.end()

    def record(self, compute: Any, groups: int, max_dim: int, bind_group: Any,
               dynamic_offsets: Sequence[int] = ()) -> None:
        """``groups`` workgroups recorded into the open pass ``compute`` (none when 0)."""
        if groups == 0:
            return
        gx, gy = grid(groups, max_dim)
        compute.set_pipeline(self.pipeline)
        if dynamic_offsets:
            compute.set_bind_group(0, bind_group, list(dynamic_offsets))
        else:
            compute.set_bind_group(0, bind_group)
        compute.dispatch_workgroups(gx, gy, 1)


def _range(resource: Any) -> dict:
    if isinstance(resource, tuple):
        buffer, offset, size = resource
        return {"buffer": buffer, "offset": offset, "size": size}
    return {"buffer": resource, "offset": 0, "size": resource.size}
