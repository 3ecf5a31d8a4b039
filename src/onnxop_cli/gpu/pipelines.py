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

    def pipeline(self, shader: str, constants: dict[str, int | bool] | None = None) -> Any:
        """The compute pipeline for ``shaders/<shader>`` (its ``#specialise``
        constants set to ``constants``, gpu/shaders.py), compiled once."""
        from .shaders import variant_label

        label = variant_label(shader, constants)
        return self._compiled(label, label, lambda: self.device.create_compute_pipeline(
            label=label, layout="auto", compute={"module": self._module(shader, constants), "entry_point": "main"}))

    def pipeline_with_layout(self, shader: str, entries: list[dict], constants: dict[str, int | bool] | None = None,
                             code: str | None = None) -> tuple[Any, Any]:
        """(pipeline, bind group layout) for a shader that needs an explicit
        layout (dynamic offsets), compiled once. ``code``: a rendered kernel's
        WGSL (gpu/render/elementwise.py), ``shader`` then its label (unique
        per kernel); else the shader file's, ``constants`` as for :meth:`pipeline`."""
        from .shaders import variant_label

        label = variant_label(shader, constants)

        def make() -> tuple[Any, Any]:
            module = self._module(shader, constants, code)
            layout = self.device.create_bind_group_layout(label=label, entries=entries)
            return self._on(label, module, layout), layout

        return self._compiled(f"{label}:explicit", label, make)

    def pipeline_on_layout(self, shader: str, sharing: str, constants: dict[str, int | bool] | None = None,
                           code: str | None = None) -> Any:
        """The pipeline for ``shader`` (``constants`` and ``code`` as for :meth:`pipeline_with_layout`)
        on the explicit bind group layout of ``sharing`` (compiled by
        :meth:`pipeline_with_layout` first), so one bind group serves both
        kernels; compiled once."""
        from .shaders import variant_label

        label = variant_label(shader, constants)
        return self._compiled(f"{label}:on:{sharing}", label, lambda: self._on(
            label, self._module(shader, constants, code), self._pipelines[f"{sharing}:explicit"][1]))

    def _compiled(self, key: str, label: str, make: Callable[[], Any]) -> Any:
        """``_pipelines[key]``, made by ``make`` (WebGPU failures a GpuError
        naming ``label`` and the adapter) the first time."""
        found = self._pipelines.get(key)
        if found is None:
            with gpu_errors(f"compiling {label}", self.name):
                found = self._pipelines[key] = make()
        return found

    def _module(self, shader: str, constants: dict[str, int | bool] | None, code: str | None = None) -> Any:
        from .shaders import shader_source, variant_label

        text = shader_source(shader, **(constants or {})) if code is None else code
        return self.device.create_shader_module(label=variant_label(shader, constants), code=text)

    def _on(self, label: str, module: Any, layout: Any) -> Any:
        return self.device.create_compute_pipeline(
            label=label,
            layout=self.device.create_pipeline_layout(label=label, bind_group_layouts=[layout]),
            compute={"module": module, "entry_point": "main"},
        )
