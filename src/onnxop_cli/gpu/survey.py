"""For ``info``: which adapters of which engines can run each kernel (what
each kernel needs, gpu/render/frame.py, against what each adapter has)."""

from __future__ import annotations

from typing import Any

from .render.frame import Needs


def survey(backend: str, chosen: str = "wgpu") -> tuple[dict[str, list[Any]], list[tuple[Any, Needs, list[Any]]]]:
    """For ``info``: the adapters of ``backend`` each installed engine sees
    (engines.SIDE_BY_SIDE, and the ``chosen`` one)
    ({engine: [AdapterInfo]}, or a one-line reason in place of the list) and,
    per kernel, (kernel, needs, the adapters that can run it)."""
    from ..errors import GpuError
    from . import engines, kernels
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
    for kernel in kernels.KERNELS.values():
        need = kernel.needs
        rows.append((kernel, need, [a for a in every if not need.missing(a.features, a.limits)]))
    return seen, rows
