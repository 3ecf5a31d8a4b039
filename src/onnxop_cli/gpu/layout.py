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
negatives as two's complement) or two words; a ``vec4<u32>`` takes four words. No kernel declares other
member types (a struct member aside), so the host lays out no others.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable

@dataclass(frozen=True)
class Field:
    name: str
    offset: int  # bytes from the struct's start
    scalar: str  # "u32", or "struct"
    count: int  # words, one after another: 1, or N for vecN
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
            struct.pack_into(f"<{len(words)}I", out, f.offset, *words)
        return bytes(out)

    def pack_rows(self, rows: "Iterable[dict[str, object]]") -> bytes:
        """An ``array<Struct>``'s bytes: each row packed by name, one after another
        (a host-shareable struct's size is already a multiple of its alignment,
        so the array's stride)."""
        return b"".join(self.pack(**row) for row in rows)


def _words(f: Field, value: object, where: Layout) -> list[int]:
    if isinstance(value, (list, tuple)):
        items = [int(v) for v in value]
    elif f.count == 2:  # a 64-bit integer in two words, low first
        v = int(value)  # type: ignore[call-overload]
        if not -(1 << 63) <= v < (1 << 64):
            raise ValueError(f"{where.shader} {where.struct}.{f.name}: {v} does not fit 64 bits")
        v &= (1 << 64) - 1
        items = [v & 0xFFFFFFFF, v >> 32]
    else:
        items = [int(value)]  # type: ignore[call-overload]
    if len(items) != f.count:
        raise ValueError(f"{where.shader} {where.struct}.{f.name}: {f.count} values, got {len(items)}")
    for v in items:
        if not -(1 << 31) <= v < (1 << 32):
            raise ValueError(f"{where.shader} {where.struct}.{f.name}: {v} does not fit a {f.scalar}")
    return [v & 0xFFFFFFFF for v in items]


def _type(text: str) -> tuple[str, int, int, int]:
    """(scalar, count, align, size) of a WGSL member type: ``u32``, ``vec2<u32>`` or ``vec4<u32>``."""
    m = re.fullmatch(r"u32|vec([24])<u32>", text.replace(" ", ""))
    if m is None:
        raise ValueError(f"member type {text!r} has no host layout here")
    n = int(m.group(1) or 1)
    return "u32", n, 4 * n, 4 * n


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
