"""The one way shaders are loaded: from the ``onnxop_cli.shaders`` package.

The top-level ``shaders/`` folder is mapped to that package by pyproject.toml,
so the same lookup works from a source checkout, an editable install and the
wheel. Shader text is cached; the label given to WebGPU is the file name, so a
WGSL compile error names the file.

The kernels are rendered (gpu/render/); what is left here is written by hand
where a generator would be worse (each file's header says why): in
``shaders/lib/``, the parts a renderer puts in the kernels it
writes (no entry point; they use the bindings and ``Params`` fields their
header names, which the kernel declares, and the parts it names before them).
Only the tests list the files (tests/wgsl_text.py's ``shader_names``).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=None)
def shader_source(name: str) -> str:
    """The WGSL text of ``shaders/<name>`` (a kernel, or ``lib/<part>``)."""
    return resources.files("onnxop_cli.shaders").joinpath(*name.split("/")).read_text(encoding="utf-8")

