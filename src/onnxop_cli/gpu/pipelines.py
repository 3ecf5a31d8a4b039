"""The compute pipelines a Gpu compiles: each once per device, by label.

``Gpu`` (gpu/device.py) is a ``PipelineCache``: ``gpu.pipeline(shader)`` for
a shader with the layout WebGPU derives, ``pipeline_with_layout`` for one
that needs an explicit layout (dynamic offsets), ``pipeline_on_layout`` for
a second kernel on that layout, so one bind group serves both.
"""

from __future__ import annotations

from typing import Any, Callable

from .faults import gpu_errors


class PipelineCache:
    """Compiled pipelines kept in ``_pipelines``; the class using it has
    ``device`` (the engine's device) and ``name`` (the adapter's, for errors)."""

    _pipelines: dict[str, Any]
    device: Any

    def pipeline(self, shader: str, code: str | None = None) -> Any:
        """The compute pipeline of ``shader`` (a file under shaders/, or with
        ``code`` a rendered kernel's label), on the layout WebGPU derives;
        compiled once."""
        return self._compiled(shader, shader, lambda: self.device.create_compute_pipeline(
            label=shader, layout="auto", compute={"module": self._module(shader, code), "entry_point": "main"}))

    def pipeline_with_layout(self, shader: str, entries: list[dict], code: str | None = None) -> tuple[Any, Any]:
        """(pipeline, bind group layout) for a kernel that needs an explicit
        layout (dynamic offsets), compiled once; ``shader`` and ``code`` as
        for :meth:`pipeline` (a rendered kernel's label is unique per text)."""

        def make() -> tuple[Any, Any]:
            layout = self.device.create_bind_group_layout(label=shader, entries=entries)
            return self._on(shader, self._module(shader, code), layout), layout

        return self._compiled(f"{shader}:explicit", shader, make)

    def pipeline_on_layout(self, shader: str, sharing: str, code: str | None = None) -> Any:
        """The pipeline for ``shader`` (and ``code``, as for :meth:`pipeline`)
        on the explicit bind group layout of ``sharing`` (compiled by
        :meth:`pipeline_with_layout` first), so one bind group serves both
        kernels; compiled once."""
        return self._compiled(f"{shader}:on:{sharing}", shader, lambda: self._on(
            shader, self._module(shader, code), self._pipelines[f"{sharing}:explicit"][1]))

    def _compiled(self, key: str, label: str, make: Callable[[], Any]) -> Any:
        """``_pipelines[key]``, made by ``make`` (WebGPU failures a GpuError
        naming ``label`` and the adapter) the first time."""
        found = self._pipelines.get(key)
        if found is None:
            with gpu_errors(f"compiling {label}", self.name):
                found = self._pipelines[key] = make()
        return found

    def _module(self, shader: str, code: str | None = None) -> Any:
        from .shaders import shader_source

        return self.device.create_shader_module(label=shader, code=shader_source(shader) if code is None else code)

    def _on(self, label: str, module: Any, layout: Any) -> Any:
        return self.device.create_compute_pipeline(
            label=label,
            layout=self.device.create_pipeline_layout(label=label, bind_group_layouts=[layout]),
            compute={"module": module, "entry_point": "main"},
        )
