"""The tests' readers of WGSL text. Only tests read WGSL back: the host packs from the declarations and
asks a kernel's frame what it needs; these hold both to the text the kernel compiles. ``parse``: a
struct's layout (a kernel's declared Struct, gpu/layout.py); ``needs_of``: the features and limits the
text uses (a frame's ``needs``, gpu/render/frame.py); ``shader_names`` and ``part_names``: the shipped
files gpu/shaders.py loads."""

from __future__ import annotations

import re
from importlib import resources
from typing import Sequence

from onnxop_cli.gpu.layout import Layout, Struct
from onnxop_cli.gpu.render.frame import FEATURES, Needs

def shader_names() -> list[str]:
    """Every shipped ``.wgsl`` kernel (the parts in ``lib/`` are not kernels)."""
    root = resources.files("onnxop_cli.shaders")
    return sorted(p.name for p in root.iterdir() if p.name.endswith(".wgsl"))


def part_names() -> list[str]:
    """Every shipped part (``lib/<name>.wgsl``)."""
    root = resources.files("onnxop_cli.shaders").joinpath("lib")
    return sorted(f"lib/{p.name}" for p in root.iterdir() if p.name.endswith(".wgsl"))


_STRUCT = re.compile(r"^struct\s+(\w+)\s*\{(.*?)^\}", re.MULTILINE | re.DOTALL)
_MEMBER = re.compile(r"^\s*(\w+)\s*:\s*([\w<>, ]+?)\s*,?\s*(?://.*)?$")


def read(source: str, struct_name: str, shader: str = "?") -> Struct:
    """``struct struct_name`` of WGSL ``source`` as a Struct (the structs of ``source`` its members are of
    read too); its members may be scalars, vectors or arrays of them."""
    for m in _STRUCT.finditer(source):
        if m.group(1) != struct_name:
            continue
        members = []
        for line in m.group(2).splitlines():
            line = line.strip()
            if not line or line.startswith("//"):
                continue
            mm = _MEMBER.match(line)
            if mm is None:
                raise ValueError(f"{shader}: cannot read the member line {line!r} of struct {struct_name}")
            members.append((mm.group(1), mm.group(2).strip()))
        declared = structs(source)
        inner = dict.fromkeys(kind for _, kind in members if kind in declared)
        return Struct(struct_name, tuple(members), tuple(read(source, kind, shader) for kind in inner))
    raise ValueError(f"{shader} has no struct {struct_name}")


def parse(source: str, struct_name: str, shader: str = "?") -> Layout:
    """The host layout of ``struct struct_name`` in WGSL ``source``."""
    return read(source, struct_name, shader).layout


def structs(source: str) -> Sequence[str]:
    """The names of the structs ``source`` declares."""
    return [m.group(1) for m in _STRUCT.finditer(source)]


_TYPE_BYTES = {"u32": 4, "i32": 4, "f32": 4, "f16": 2, "u64": 8, "i64": 8}  # the uniform arrays' scalar types


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
    """The features and limits WGSL ``text`` needs: the types it names, its workgroup size, its uniform
    and storage bindings."""
    code = re.sub(r"//[^\n]*", "", text)  # comments may name types
    consts = _consts(code)
    features = [f for f, word in FEATURES.items() if word.search(code)]
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
