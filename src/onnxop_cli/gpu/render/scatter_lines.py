"""ScatterElements with a reduction, one line (or a few adjacent lines) an
invocation, one kernel per arithmetic and width (``Lines``: gpu/scatter_lines.py
picks it). The updates that differ only along the scatter axis are a line;
only they can name the elements of their data line, so one invocation
applying its line's updates in index order (along the axis) is
onnx.reference's order, on every run, and lines run in parallel with
disjoint targets.

``shared`` False: a word is written by one invocation alone, plain loads and
stores (the host makes it so for 8- and 16-bit elements: gpu/scatter_lines.py's
``group``, lines of whole words or a word's elements' worth of adjacent lines
an invocation). ``shared`` True (8- and 16-bit lines that share words
otherwise): an element is replaced by compare-exchange on its word, only its
bits changing, so the result does not depend on the order.

The arithmetic (``ARITH``, by name; the width follows the name: ``iadd``
32 bits, ``iadd64``, ``iadd16``, ``iadd8``; ``h*`` float16, ``bf*`` bfloat16,
``b*`` bool): fadd fmul (float32, lib/f32_reduce.wgsl: NaN operands as
numpy's scalar loop treats them), iadd imul (two's complement, wrapping:
signed and unsigned alike), fmax fmin (Python's max() and min(), the
reference's: the update replaces only if it compares greater (less); NaN on
either side compares false; -0 == +0; by bit pattern, so a subnormal is never
flushed), smax smin (signed), umax umin (unsigned), badd bmul (bool: or, and;
its max and min are umax8 umin8), hadd .. hmin and bfadd .. bfmin: add and
mul in f32 (lib/f16_convert.wgsl; exact), max and min on their bits. float64
has max and min only (the op refuses its add and mul: no f64 in WGSL).

Where the indices come from (``mode``): 0 ``targets`` holds each update's
data element; 1 each update's checked index along the axis; 2 the raw int64
index tensor (row-major), checked here with all 64 bits as indices.wgsl
does (lib/index_check.wgsl: a bad one keeps the smallest position in
status[0] by atomicMin; the host then discards the output). Line l starts
at update (l / inner) * line * inner + l % inner and steps by inner; its
data line (modes 1, 2) at (l / inner) * dlen * inner + l % inner.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import ClassVar

from ..layout import Struct
from ..shaders import shader_source
from .frame import Binding, Frame

PARAMS = Struct("Params", (
    ("count", "u32"),        # invocations (lines / group)
    ("groups_x", "u32"),
    ("mode", "u32"),         # 0 element offsets, 1 checked indices, 2 raw int64 indices
    ("default_nan", "u32"),  # f32 bits of inf - inf on the host
    ("nan_first", "u32"),    # 1: of two NaN operands the element's wins, 0: the update's
    ("line", "u32"),         # updates per line
    ("inner", "u32"),        # the updates' stride along the line
    ("dlen", "u32"),         # the data's axis length (modes 1, 2)
    ("iswap", "u32"),        # mode 2: 1: the int64 indices are big-endian
    ("cmode", "u32"),        # mode 2: indices.wgsl's mode (0 wrap, 2 0 .. d-1)
    ("group", "u32"),        # lines an invocation (count is invocations)
    ("pad1", "u32"),
))

_SIGNED = "select(a, b, (bitcast<i32>(b << (32u - BITS)) >> (32u - BITS)) {} (bitcast<i32>(a << (32u - BITS)) >> (32u - BITS)))"
# name -> (the combine of `BITS`-wide a and b, zero-extended, whose low BITS count; of 64-bit (low, high) a and b)
ARITH = {
    "fadd": ("f32_op(a, b, false)", None), "fmul": ("f32_op(a, b, true)", None),
    "iadd": ("a + b", "add64(a, b)"), "imul": ("a * b", "mul64(a, b)"),
    "fmax": ("fpick(a, b, true, 0x80000000u, 0x7f800000u)", "fpick64(a, b, true)"),
    "fmin": ("fpick(a, b, false, 0x80000000u, 0x7f800000u)", "fpick64(a, b, false)"),
    "smax": (_SIGNED.format(">"), "select(a, b, slt(a, b))"), "smin": (_SIGNED.format("<"), "select(a, b, slt(b, a))"),
    "umax": ("max(a, b)", "select(a, b, ult(a, b))"), "umin": ("min(a, b)", "select(a, b, ult(b, a))"),
    "badd": ("select(0u, 1u, (a | b) != 0u)", None), "bmul": ("select(0u, 1u, (a & b) != 0u)", None),
    **{f"{p}{k}": (f"{conv}(f32_op({a}, {b}, {str(k == 'mul').lower()}))", None)
       for p, conv, a, b in (("h", "float_to_half", "half_to_float(a)", "half_to_float(b)"),
                             ("bf", "float_to_bfloat16", "a << 16u", "b << 16u")) for k in ("add", "mul")},
    **{f"{p}{k}": (f"fpick(a, b, {str(k == 'max').lower()}, 0x8000u, {inf})", None)
       for p, inf in (("h", "0x7c00u"), ("bf", "0x7f80u")) for k in ("max", "min")},
}


def width(name: str) -> tuple[str, int]:
    """(the arithmetic, the element width) of a variant name: ``iadd16`` -> (``iadd``, 16); float16 and
    bfloat16 (``h*``, ``bf*``) 16 bits, bool (``b*``) 8, else 32 where the name has no width."""
    m = re.fullmatch(r"([a-z]+?)(8|16|64)?", name)
    if m is None or m.group(1) not in ARITH:
        raise ValueError(f"no scatter line kernel {name!r}")
    op = m.group(1)
    return op, int(m.group(2) or (16 if op[0] == "h" or op[:2] == "bf" else 8 if op[0] == "b" else 32))


VARIANTS = tuple(
    [*ARITH] + [f"{op}64" for op, (_, wide) in ARITH.items() if wide]
    + [f"{op}{b}" for b in (16, 8) for op in ("iadd", "imul", "smax", "smin", "umax", "umin")])

_FLOATS = """// float bits (of the width whose sign bit is `sign`) as an unsigned key in the floats' order (NaN excluded)
fn key(a: u32, sign: u32) -> u32 {
    return select(a | sign, ~a & (sign | (sign - 1u)), (a & sign) != 0u);
}

// Python's max(a, b) (greater) or min(a, b) on float bits: float32, float16
// or bfloat16 by their sign bit and infinity
fn fpick(a: u32, b: u32, greater: bool, sign: u32, inf: u32) -> u32 {
    let m = sign - 1u;
    let nan = (a & m) > inf || (b & m) > inf;
    let zeros = ((a | b) & m) == 0u;
    let ka = key(a, sign);
    let kb = key(b, sign);
    let wins = select((kb < ka), (kb > ka), greater);
    return select(a, b, wins && !nan && !zeros);
}
"""
_FLOATS64 = """// float64 bits, (low, high) words, as an unsigned key in their order (NaN excluded)
fn key64(a: vec2<u32>) -> vec2<u32> {
    return select(a | vec2<u32>(0u, 0x80000000u), ~a, (a.y >> 31u) != 0u);
}

// fpick on float64 bits
fn fpick64(a: vec2<u32>, b: vec2<u32>, greater: bool) -> vec2<u32> {
    let m = vec2<u32>(0xffffffffu, 0x7fffffffu);
    let inf = vec2<u32>(0u, 0x7ff00000u);
    let nan = ult(inf, a & m) || ult(inf, b & m);
    let zeros = all(((a | b) & m) == vec2<u32>(0u));
    let ka = key64(a);
    let kb = key64(b);
    let wins = select(ult(kb, ka), ult(ka, kb), greater);
    return select(a, b, wins && !nan && !zeros);
}
"""
_TARGET = """// The data element update u goes to (mode 2: its index checked: a bad one
// is recorded and reads as 0, and the host discards the output)
fn target_of(u: u32, base: u32) -> u32 {
    switch params.mode {
        case 0u: { return targets[u]; }
        case 1u: { return base + targets[u] * params.inner; }
        default: { return base + index(u, params.dlen) * params.inner; }
    }
}
"""
_STORE = {  # update u combined into element t: 64 and 32 bits, narrow owned words, narrow shared words
    64: """            let w = 2u * t;
            let r = combine(vec2<u32>(data[w], data[w + 1u]), vec2<u32>(updates[2u * u], updates[2u * u + 1u]));
            data[w] = r.x;
            data[w + 1u] = r.y;
""",
    32: "            data[t] = combine(data[t], updates[u]);\n",
    False: """            let old = data[w];
            let r = combine((old >> shift) & m, b) & m;
            data[w] = (old & ~(m << shift)) | (r << shift);
""",
    True: """            var old = atomicLoad(&data[w]);
            loop {
                let r = combine((old >> shift) & m, b) & m;
                let word = (old & ~(m << shift)) | (r << shift);
                let got = atomicCompareExchangeWeak(&data[w], old, word);
                if (got.exchanged) {
                    break;
                }
                old = got.old_value;
            }
""",
}
_NARROW = """            let w = t >> lg;
            let shift = (t & ((1u << lg) - 1u)) * BITS;
            let b = (updates[u >> lg] >> ((u & ((1u << lg) - 1u)) * BITS)) & m;
"""


@dataclass(frozen=True)
class LineSchedule:
    bits: int  # the element width: 8, 16, 32 or 64
    wg: int = 64
    CONSTS: ClassVar = (("WG", "wg", ""), ("BITS", "bits", "the element width"))


@dataclass(frozen=True)
class Lines(Frame):
    """The line kernel of the arithmetic ``name`` (a key of VARIANTS), on ``shared`` words (8 and 16 bits)."""

    name: str
    shared: bool = False
    PARAMS = PARAMS

    def __post_init__(self) -> None:
        if self.name not in VARIANTS or (self.shared and self.schedule.bits >= 32):
            raise ValueError(f"no scatter line kernel {self.name!r}{' on shared words' if self.shared else ''}")

    @property
    def schedule(self) -> LineSchedule:  # type: ignore[override]
        return LineSchedule(width(self.name)[1])

    @property
    def label(self) -> str:  # type: ignore[override]
        return f"scatter lines {self.name}{' shared' if self.shared else ''}[wg={self.schedule.wg}]"

    @property
    def bindings(self) -> tuple[Binding, ...]:  # type: ignore[override]
        return (Binding(0, "targets", "read", "u32"), Binding(1), Binding(2, "updates", "read", "u32"),
                Binding(3, "data", "read_write", "atomic<u32>" if self.shared else "u32"),
                Binding(4, "status", "read_write", "atomic<u32>"),
                Binding(5, "raw", "read", "vec2<u32>"))  # mode 2: `targets` again, an index a load

    def parts(self) -> list[str]:
        op, bits = width(self.name)
        expr = ARITH[op][bits == 64]
        libs = [lib for lib, used in (("f32_reduce", "f32_op" in expr), ("int64_ops", bits == 64),
                                      ("f16_convert", "half" in expr or "bfloat16" in expr)) if used]
        word = "vec2<u32>" if bits == 64 else "u32"
        return [*(shader_source(f"lib/{lib}.wgsl") for lib in libs),
                *([_FLOATS64] if "fpick64" in expr else [_FLOATS] if "fpick" in expr else []),
                f"fn combine(a: {word}, b: {word}) -> {word} {{\n    return {expr};\n}}\n",
                shader_source("lib/index_check.wgsl"), _TARGET, self.walk_line(bits)]

    def walk_line(self, bits: int) -> str:
        narrow = ("    let lg = 5u - countTrailingZeros(BITS);  // log2 of elements a word\n"
                  "    let m = (1u << BITS) - 1u;\n") if bits < 32 else ""
        store = _STORE[bits] if bits >= 32 else _NARROW + _STORE[self.shared]
        return f"""// Line l's updates, in index order
fn walk_line(l: u32) {{
    let inner = params.inner;
    let o = l / inner;
    let i = l - o * inner;
    var u = o * params.line * inner + i;
    let base = o * params.dlen * inner + i;
{narrow}    for (var j = 0u; j < params.line; j = j + 1u) {{
        let t = target_of(u, base);
{textwrap.indent(textwrap.dedent(store), " " * 8)}        u = u + inner;
    }}
}}
"""

    def main(self) -> str:
        return """    let g = (wg.y * params.groups_x + wg.x) * WG + lid;
    if (g >= params.count) {
        return;
    }
    for (var k = 0u; k < params.group; k = k + 1u) {
        walk_line(g * params.group + k);
    }
"""
