"""Kernel parameters declared once, packed by name.

A rendered kernel declares its ``Params`` (and the records of its tables) as a :class:`Struct`: its WGSL
text (``wgsl()``) and its host layout (``layout``) come from the same (field, type) pairs, laid out by
WGSL's rules for host-shareable structs (each member at the next multiple of its alignment; the struct's
size a multiple of its largest alignment). The host packs by field name::

    PARAMS.pack(groups=g, groups_x=gx)        AXIS.layout.pack_rows([{"dim": d, "stride": s}, ...])

so the bytes cannot drift from the struct: a field the host does not name is
an error (but ``pad*`` fields, which are zero), so is a name the struct lacks,
and so is a value that does not fit (the tests read each kernel's WGSL back, tests/wgsl_text.py, and
hold the declarations to it). A ``u32`` takes 0 .. 2**32-1 or a negative int32 (two's complement: the
kernels read signed strides from u32 words); a ``vec2<u32>`` takes a 64-bit integer (low word first,
negatives as two's complement) or two words; a ``vecN<u32>`` or an ``array<u32, N>`` takes N words.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable

_SCALARS = {"u32": "I", "i32": "i", "f32": "f"}


@dataclass(frozen=True)
class Field:
    name: str
    offset: int  # bytes from the struct's start
    scalar: str  # "u32", "i32" or "f32"
    count: int  # scalars (4 bytes each, one after another): 1, N for vecN or array<scalar, N>, 4N for array<vec4, N>
    align: int
    size: int
    inner: "Layout | None" = None  # a member that is a struct of the same shader: given as a dict


@dataclass(frozen=True)
class Layout:
    shader: str
    struct: str
    fields: tuple[Field, ...]
    size: int
    align: int = 4

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def pack(self, **values: object) -> bytes:
        """The struct's bytes, every field by name (``pad*`` fields may be left out: zero)."""
        unknown = [n for n in values if n not in self.names]
        if unknown:
            raise KeyError(f"{self.shader} {self.struct} has no field {unknown[0]!r} (its fields: "
                           f"{', '.join(self.names)})")
        out = bytearray(self.size)
        for f in self.fields:
            if f.name not in values:
                if f.name.lstrip("_").startswith("pad"):
                    continue
                raise KeyError(f"{self.shader} {self.struct}: field {f.name!r} is not given")
            if f.inner is not None:
                given = values[f.name]
                if not isinstance(given, dict):
                    raise TypeError(f"{self.shader} {self.struct}.{f.name} is a {f.inner.struct}: give a dict")
                out[f.offset:f.offset + f.size] = f.inner.pack(**given)
                continue
            words = _words(f, values[f.name], self)
            for k, w in enumerate(words):
                struct.pack_into("<" + _SCALARS[f.scalar], out, f.offset + 4 * k, w)
        return bytes(out)

    def pack_rows(self, rows: "Iterable[dict[str, object]]") -> bytes:
        """An ``array<Struct>``'s bytes: each row packed by name, one after another
        (a host-shareable struct's size is already a multiple of its alignment,
        so the array's stride)."""
        return b"".join(self.pack(**row) for row in rows)


def _words(f: Field, value: object, where: Layout) -> list:
    if f.scalar == "f32":
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        if len(items) != f.count:
            raise ValueError(f"{where.shader} {where.struct}.{f.name}: {f.count} values, got {len(items)}")
        return [float(v) for v in items]
    if isinstance(value, (list, tuple)):
        items = [int(v) for v in value]
    elif f.count == 2 and f.scalar == "u32":  # a 64-bit integer in two words, low first
        v = int(value)  # type: ignore[call-overload]
        if not -(1 << 63) <= v < (1 << 64):
            raise ValueError(f"{where.shader} {where.struct}.{f.name}: {v} does not fit 64 bits")
        v &= (1 << 64) - 1
        items = [v & 0xFFFFFFFF, v >> 32]
    else:
        items = [int(value)]  # type: ignore[call-overload]
    if len(items) != f.count:
        raise ValueError(f"{where.shader} {where.struct}.{f.name}: {f.count} values, got {len(items)}")
    lo, hi = (-(1 << 31), 1 << 32) if f.scalar == "u32" else (-(1 << 31), 1 << 31)
    for v in items:
        if not lo <= v < hi:
            raise ValueError(f"{where.shader} {where.struct}.{f.name}: {v} does not fit a {f.scalar}")
    if f.scalar == "u32":
        return [v & 0xFFFFFFFF for v in items]
    return items


def _type(text: str) -> tuple[str, int, int, int]:
    """(scalar, count, align, size) of a WGSL member type."""
    text = text.replace(" ", "")
    if text in _SCALARS:
        return text, 1, 4, 4
    m = re.fullmatch(r"vec([234])<(u32|i32|f32)>", text)
    if m:
        n = int(m.group(1))
        align = 8 if n == 2 else 16
        return m.group(2), n, align, 4 * n
    m = re.fullmatch(r"array<(u32|i32|f32|vec4<(?:u32|i32|f32)>),(\d+)u?>", text)
    if m:
        inner, n = m.group(1), int(m.group(2))
        if inner.startswith("vec4"):
            return inner[5:8], 4 * n, 16, 16 * n
        return inner, n, 4, 4 * n
    raise ValueError(f"member type {text!r} has no host layout here")


@dataclass(frozen=True)
class Struct:
    """A kernel's struct, declared once: ``wgsl()`` is its WGSL text and ``layout`` how the host packs it
    by name, both from the same (field, type) pairs."""

    name: str
    fields: tuple[tuple[str, str], ...]  # (field name, WGSL type), in order
    members: tuple["Struct", ...] = ()  # the structs its fields are of, declared before it

    def wgsl(self) -> str:
        body = "".join(f"    {name}: {kind},\n" for name, kind in self.fields)
        return "".join(m.wgsl() + "\n" for m in self.members) + f"struct {self.name} {{\n{body}}}\n"

    @cached_property  # once per struct: every band's pack reads it
    def layout(self) -> Layout:
        inner = {m.name: m.layout for m in self.members}
        fields: list[Field] = []
        offset = 0
        largest = 4
        for name, kind in self.fields:
            sub = inner.get(kind)
            if sub is not None:
                scalar, count, align, size = "struct", 0, sub.align, sub.size
            else:
                scalar, count, align, size = _type(kind)
            offset = -(-offset // align) * align
            fields.append(Field(name, offset, scalar, count, align, size, sub))
            offset += size
            largest = max(largest, align)
        return Layout(f"generated {self.name}", self.name, tuple(fields), -(-offset // largest) * largest, largest)

    @property
    def size(self) -> int:
        return self.layout.size

    def pack(self, **values: object) -> bytes:
        return self.layout.pack(**values)
