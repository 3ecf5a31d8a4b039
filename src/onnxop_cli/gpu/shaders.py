"""The one way shaders are loaded: from the ``onnxop_cli.shaders`` package.

The top-level ``shaders/`` folder is mapped to that package by pyproject.toml,
so the same lookup works from a source checkout, an editable install and the
wheel. Shader text is cached; the label given to WebGPU is the file name, so a
WGSL compile error names the file.

WGSL has no include, and kernels that read the same index tensors or walk the
same tables repeated the same functions word for word. A line

    #include "lib/bswap.wgsl"

is replaced by that part's text (itself resolved the same way) when a shader
is loaded. Parts live in ``shaders/lib/``: they are not kernels (no entry
point; they use the bindings and ``Params`` fields their header names, which
the including shader declares), so ``shader_names`` does not list them. The
directive is not WGSL: a shader read any other way fails to compile, loudly.

One entry point per shader (``main``). The kernels are rendered
(gpu/render/); what is left here is written by hand where a generator would
be worse (each file's header says why) and the parts the renderers include.
``shader_source`` is a file's text, its includes resolved, for the renderers
and gpu/nonzero.py.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

_INCLUDE = re.compile(r'^#include "([A-Za-z0-9_./-]+\.wgsl)"[ \t]*$', re.MULTILINE)


@lru_cache(maxsize=None)
def shader_source(name: str) -> str:
    """The WGSL text of ``shaders/<name>``, its ``#include`` lines resolved."""
    return _resolved(name, ())


def _resolved(name: str, chain: tuple[str, ...]) -> str:
    if name in chain:
        raise ValueError(f"shader {name!r} includes itself: {' -> '.join((*chain, name))}")
    path = resources.files("onnxop_cli.shaders")
    for part in name.split("/"):
        if part in ("", ".", ".."):
            raise ValueError(f"shader name {name!r}: only plain names below shaders/")
        path = path.joinpath(part)
    text = path.read_text(encoding="utf-8")
    return _INCLUDE.sub(lambda m: _resolved(m.group(1), (*chain, name)).rstrip("\n"), text)


def shader_names() -> list[str]:
    """Every shipped ``.wgsl`` kernel (the parts in ``lib/`` are not kernels)."""
    root = resources.files("onnxop_cli.shaders")
    return sorted(p.name for p in root.iterdir() if p.name.endswith(".wgsl"))


def part_names() -> list[str]:
    """Every shipped part (``lib/<name>.wgsl``)."""
    root = resources.files("onnxop_cli.shaders").joinpath("lib")
    return sorted(f"lib/{p.name}" for p in root.iterdir() if p.name.endswith(".wgsl"))

