"""What a kernel needs from an adapter, read from its WGSL (survey.py lists
which adapters can run it).

A WGSL kernel is portable WebGPU when it needs nothing beyond the standard
and fits the default limits. Its text is the one declaration of what it
uses: 64-bit integers (``u64``/``i64``: a wgpu extension, feature
``shader-int64``, that Dawn's Tint refuses), ``f16`` (``shader-f16``), its
workgroup size and its uniform and storage bindings (limits). The copy
kernels' features (kernels.Kernel.features, what the chooser checks) are
read here, from their rendered WGSL; the hand-written body's ``// needs:`` line says the same for readers,
and tests/gpu/test_engines.py holds it to what the code uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

# bytes of the WGSL types the kernels' uniform arrays hold
_TYPE_BYTES = {"u32": 4, "i32": 4, "f32": 4, "f16": 2, "u64": 8, "i64": 8}


@dataclass(frozen=True)
class Needs:
    features: tuple[str, ...] = ()
    limits: dict[str, int] = field(default_factory=dict)  # name -> minimum

    def missing(self, features: Iterable[str], limits: dict[str, int]) -> list[str]:
        """What an adapter with these features and limits lacks ([]: it can run it)."""
        have = set(features)
        lacking = [f for f in self.features if f not in have]
        lacking += [f"{k} >= {v}" for k, v in self.limits.items() if k in limits and limits[k] < v]
        return lacking


def _consts(code: str) -> dict[str, int]:
    return {m[1]: int(m[2]) for m in re.finditer(r"const\s+(\w+)\s*:\s*[ui]32\s*=\s*(\d+)u?\s*;", code)}


def _value(text: str, consts: dict[str, int]) -> int:
    text = text.strip().rstrip("u")
    return consts[text] if text in consts else int(text)


def _type_bytes(wgsl_type: str, consts: dict[str, int]) -> int:
    m = re.fullmatch(r"array<(.+),\s*(\w+)>", wgsl_type.strip())
    if m:
        return _type_bytes(m[1], consts) * _value(m[2], consts)
    m = re.fullmatch(r"vec([234])<(\w+)>", wgsl_type.strip())
    if m:
        return int(m[1]) * _TYPE_BYTES[m[2]]
    return _TYPE_BYTES.get(wgsl_type.strip(), 0)  # a struct of parameters: small


def needs_of(text: str) -> Needs:
    """The features and limits WGSL ``text`` needs (a shader's, or a rendered kernel's)."""
    code = re.sub(r"//[^\n]*", "", text)  # comments may name types
    consts = _consts(code)
    features = []
    if re.search(r"\b[ui]64\b", code):
        features.append("shader-int64")
    if re.search(r"\bf16\b", code):
        features.append("shader-f16")
    limits: dict[str, int] = {}
    for m in re.finditer(r"@workgroup_size\(([^)]*)\)", code):
        dims = [_value(d, consts) for d in m[1].split(",") if d.strip()] + [1, 1]
        limits["max-compute-invocations-per-workgroup"] = max(
            limits.get("max-compute-invocations-per-workgroup", 0), dims[0] * dims[1] * dims[2]
        )
        limits["max-compute-workgroup-size-x"] = max(limits.get("max-compute-workgroup-size-x", 0), dims[0])
    uniforms = re.findall(r"var<uniform>\s*\w+\s*:\s*([^;]+);", code)
    if uniforms:
        limits["max-uniform-buffers-per-shader-stage"] = len(uniforms)
        size = max(_type_bytes(t, consts) for t in uniforms)
        if size:
            limits["max-uniform-buffer-binding-size"] = size
    storage = len(re.findall(r"var<storage", code))
    if storage:
        limits["max-storage-buffers-per-shader-stage"] = storage
    return Needs(tuple(features), limits)

