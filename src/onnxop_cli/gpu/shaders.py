"""The one way shaders are loaded: from the ``onnxop_cli.shaders`` package.

The top-level ``shaders/`` folder is mapped to that package by pyproject.toml,
so the same lookup works from a source checkout, an editable install and the
wheel. Shader text is cached; the label given to WebGPU is the file name, so a
WGSL compile error names the file.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=None)
def shader_source(name: str) -> str:
    """The WGSL text of ``shaders/<name>``."""
    return resources.files("onnxop_cli.shaders").joinpath(name).read_text(encoding="utf-8")


def shader_names() -> list[str]:
    """Every shipped ``.wgsl`` file."""
    root = resources.files("onnxop_cli.shaders")
    return sorted(p.name for p in root.iterdir() if p.name.endswith(".wgsl"))
