"""The tests' reader of WGSL structs: a kernel's declared struct (gpu/layout.py's Struct) is held to the
struct its compiled text declares by reading that text back into a Struct (``parse``). Only tests read
WGSL: the host packs from the declarations."""

from __future__ import annotations

import re
from typing import Sequence

from onnxop_cli.gpu.layout import Layout, Struct

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
