"""A kernel's uniform parameters, declared once: the WGSL struct is rendered
from the declaration and the host's bytes are packed from it by field name,
so the two cannot drift apart (no positional ``struct.pack`` mirrored by hand;
onnxruntime's ShaderHelper declares uniforms the same way)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Mapping, Sequence

# WGSL type -> (u32 words, alignment in bytes) in a uniform buffer
_TYPES = {"u32": (1, 4), "vec2<u32>": (2, 8), "vec4<u32>": (4, 16)}


@dataclass(frozen=True)
class Struct:
    name: str
    fields: tuple[tuple[str, str], ...]  # (field name, WGSL type), in order

    def __post_init__(self) -> None:
        for name, kind in self.fields:
            if kind not in _TYPES:
                raise ValueError(f"{self.name}.{name}: type {kind!r} is not one of {', '.join(_TYPES)}")

    def _layout(self) -> list[tuple[str, int, int]]:
        """(name, byte offset, words) of each field, as WGSL lays them out."""
        out, at = [], 0
        for name, kind in self.fields:
            words, align = _TYPES[kind]
            at += -at % align
            out.append((name, at, words))
            at += 4 * words
        return out

    @property
    def size(self) -> int:
        """Bytes of the struct (a multiple of 16, as a uniform buffer's struct is)."""
        layout = self._layout()
        end = layout[-1][1] + 4 * layout[-1][2] if layout else 0
        return end + -end % 16

    def wgsl(self) -> str:
        body = "".join(f"    {name}: {kind},\n" for name, kind in self.fields)
        return f"struct {self.name} {{\n{body}}}\n"

    def pack(self, values: Mapping[str, int | Sequence[int]]) -> bytes:
        """The struct's bytes: each field from ``values`` by name (a vector's
        from a sequence of its words); a field left out is 0, a name the
        struct does not have is refused."""
        unknown = set(values) - {name for name, _ in self.fields}
        if unknown:
            raise KeyError(f"{self.name} has no field {', '.join(sorted(unknown))}")
        raw = bytearray(self.size)
        for name, at, words in self._layout():
            value = values.get(name, [0] * words)
            items = [value] if isinstance(value, int) else list(value)
            if len(items) != words:
                raise ValueError(f"{self.name}.{name} takes {words} words, got {len(items)}")
            struct.pack_into(f"<{words}I", raw, at, *(v & 0xFFFFFFFF for v in items))
        return bytes(raw)
