"""The one way shaders are loaded: from the ``onnxop_cli.shaders`` package.

The top-level ``shaders/`` folder is mapped to that package by pyproject.toml,
so the same lookup works from a source checkout, an editable install and the
wheel. Shader text is cached; the label given to WebGPU is the file name, so a
WGSL compile error names the file.

WGSL has no include, and kernels that read the same index tensors or walk the
same tables repeated the same functions word for word. A line

    #include "lib/index_check.wgsl"

is replaced by that part's text (itself resolved the same way) when a shader
is loaded. Parts live in ``shaders/lib/``: they are not kernels (no entry
point; they use the bindings and ``Params`` fields their header names, which
the including shader declares), so ``shader_names`` does not list them. The
directive is not WGSL: a shader read any other way fails to compile, loudly.

One entry point per shader (``main``); where a kernel comes in variants (a
reduction's arithmetic and width, an index type, a pass), the shader names
the constants the host chooses:

    #specialise OP: u32

and ``shader_source(name, OP=3)`` renders ``const OP: u32 = 3u;`` there (u32,
i32 or bool). Every constant a shader declares must be given and none other,
else ValueError naming the shader. Plain text, so wgpu-native, Dawn and the
browser compile the same WGSL (no pipeline-overridable constants needed), and
the compiler folds the constants as it folded the old per-variant entry
points' literal arguments. ``shader_text`` is the unrendered text (includes
resolved, directives kept) for the host's readers: the ``Params`` struct
(gpu/layout.py), features (gpu/needs.py), plain constants (kernels.py).
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

_INCLUDE = re.compile(r'^#include "([A-Za-z0-9_./-]+\.wgsl)"[ \t]*$', re.MULTILINE)
_SPECIALISE = re.compile(r"^#specialise ([A-Z][A-Z0-9_]*): (u32|i32|bool)[ \t]*(?://.*)?$", re.MULTILINE)
_RANGE = {"u32": (0, 2**32), "i32": (-2**31, 2**31)}
_LITERAL = {"u32": lambda v: f"{v}u", "i32": lambda v: f"{v}i", "bool": lambda v: "true" if v else "false"}


def shader_source(name: str, **constants: int | bool) -> str:
    """The WGSL text of ``shaders/<name>``, its ``#include`` lines resolved
    and its ``#specialise`` constants set to ``constants``."""
    declared = specialised(name)
    missing, unknown = sorted(set(declared) - set(constants)), sorted(set(constants) - set(declared))
    if missing or unknown:
        raise ValueError(f"shader {name!r}: "
                         + "; ".join(([f"constants not given: {', '.join(missing)}"] if missing else [])
                                     + ([f"constants it does not declare: {', '.join(unknown)}"] if unknown else [])))
    for key, value in constants.items():
        if not _fits(declared[key], value):
            raise ValueError(f"shader {name!r}: constant {key} = {value!r} is not a {declared[key]}")
    # checked first: the cache's key cannot tell True from 1, but each constant takes one of them only
    return _rendered(name, tuple(sorted(constants.items())))


def variant_label(name: str, constants: dict[str, int | bool] | None = None) -> str:
    """``name`` with its constants, ``indexed_gather.wgsl[CASE=2,INDEX=1]``: the
    pipeline cache's key and the label WebGPU names in a compile error."""
    if not constants:
        return name
    return f"{name}[{','.join(f'{k}={int(v)}' for k, v in sorted(constants.items()))}]"


def specialised(name: str) -> dict[str, str]:
    """The constants ``shaders/<name>`` declares, each with its WGSL type."""
    return dict(_SPECIALISE.findall(shader_text(name)))


@lru_cache(maxsize=None)
def shader_text(name: str) -> str:
    """``shaders/<name>`` with its includes resolved, directives kept."""
    return _resolved(name, ())


@lru_cache(maxsize=None)
def _rendered(name: str, constants: tuple[tuple[str, int | bool], ...]) -> str:
    given = dict(constants)
    return _SPECIALISE.sub(
        lambda m: f"const {m.group(1)}: {m.group(2)} = {_LITERAL[m.group(2)](given[m.group(1)])};", shader_text(name))


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


def _fits(wgsl_type: str, value: object) -> bool:
    if wgsl_type == "bool":
        return isinstance(value, bool)
    lo, hi = _RANGE[wgsl_type]
    return isinstance(value, int) and not isinstance(value, bool) and lo <= value < hi
