"""Gather of 1- or 2-word units along lines (``unit``), on the whole-word schedule: out[line, j] =
src[base(line) + index(j) * lstride], ``base`` walking the leading output axes (``axes``), index(j) the
index tensor's j-th entry (gpu/indexed_variants.py's ``lines`` plans them). Each invocation writes WORDS
words as vec4 stores (a storage access is a loop over the lanes on Mesa's CPU drivers, so a vec4 costs
about what a scalar does); where its units lie in one line it reads their indices as vec4 loads, four at a
time, else one at a time. The indices are the raw int32 (``kind`` I32) or int64 (I64) ones, checked as read
as the index check (gpu/render/indexed.py) checks them; an invocation keeps its smallest bad position in
status[0] (one atomicMin), reading offset 0 for it. Indices the index check already wrapped run as int32,
mode 0 (the host takes this kernel only for an axis below 2^31). Bands of one binding (u0 their first
unit, a multiple of 128); dst has room for the last vec4 past ``words``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..layout import Struct
from .frame import Frame
from .indices import AXIS, REPORT, VEC4_BINDINGS, table_row
from .schedule import Words, head
from .view import BSWAP4

I32, I64 = 1, 2  # the raw indices' kinds
PARAMS = Struct("Params", (
    ("words", "u32"),     # output words in this band
    ("groups_x", "u32"),  # workgroups per row of the dispatch grid
    ("u0", "u32"),        # the band's first unit
    ("m", "u32"),         # units per line: the indices
    ("outer", "u32"),     # leading output axes: entries of `axes`
    ("lstride", "u32"),   # the gathered axis' data stride, in words
    ("iswap", "u32"),     # 1: big-endian indices
    ("cmode", "u32"),     # 0 wrap, 1 0 .. d, 2 0 .. d-1
    ("bound", "u32"),     # d: the gathered axis' size
    ("pad0", "u32"),
    ("pad1", "u32"),
    ("pad2", "u32"),
))


@dataclass(frozen=True)
class Lines(Frame):
    """Gather along lines of ``unit``-word units, indices of ``kind`` (I32 or I64)."""

    unit: int
    kind: int
    schedule: Words = Words("lines")
    PARAMS = PARAMS
    bindings = VEC4_BINDINGS

    @property
    def label(self) -> str:
        return f"gather lines unit={self.unit} kind={'I64' if self.kind == I64 else 'I32'}"

    def parts(self) -> list[str]:
        return [f"const I32: u32 = {I32}u;\nconst I64: u32 = {I64}u;\nconst KIND: u32 = {self.kind}u;\n",
                table_row("axis", AXIS), BSWAP4, _INDICES, REPORT, _words(self.unit)]

    def main(self) -> str:
        return f"    words{self.unit}(wg, lid, KIND);\n"


LINES = {(unit, kind): Lines(unit, kind) for unit in (1, 2) for kind in (I32, I64)}

_INDICES = """// Indices (low words, high words, native order) checked: offsets along
// the axis, wrapped; 0 for a bad one, whose position (`pos` + its lane)
// lowers `bad`, with no branch and no atomic (`report` once instead).
fn checked(lo: vec4<u32>, hi: vec4<u32>, pos: u32, bad: ptr<function, u32>) -> vec4<u32> {
    let d = vec4<u32>(params.bound);
    let zero = vec4<u32>(0u);
    let ones = vec4<u32>(0xffffffffu);
    let neg = (hi == ones) & (lo != zero) & ((zero - lo) <= d) & vec4<bool>(params.cmode == 0u);
    let ok = ((hi == zero) & ((lo < d) | ((lo == d) & vec4<bool>(params.cmode == 1u)))) | neg;
    let at = select(vec4<u32>(pos) + vec4<u32>(0u, 1u, 2u, 3u), ones, ok);
    *bad = min(*bad, min(min(at.x, at.y), min(at.z, at.w)));
    return select(zero, select(lo, lo + d, neg), ok);
}

// int64 indices as stored (low words, high words) in native order.
fn wide(lo: vec4<u32>, hi: vec4<u32>, pos: u32, bad: ptr<function, u32>) -> vec4<u32> {
    let swap = params.iswap != 0u;
    return checked(select(lo, bswap(hi), swap), select(hi, bswap(lo), swap), pos, bad);
}

// int32 indices as stored, sign-extended.
fn narrow(x: vec4<u32>, pos: u32, bad: ptr<function, u32>) -> vec4<u32> {
    let lo = select(x, bswap(x), params.iswap != 0u);
    let hi = select(vec4<u32>(0u), vec4<u32>(0xffffffffu), (lo >> vec4<u32>(31u)) != vec4<u32>(0u));
    return checked(lo, hi, pos, bad);
}

// The first vector `quad` reads for indices from j on.
fn first(j: u32, kind: u32) -> vec4<u32> {
    return raw[select(j >> 2u, j >> 1u, kind == I64)];
}

// Indices j .. j+3, checked, from `carry` (the vector they start in,
// loaded by `first` or the previous quad) and the next one or two, which
// the next quad starts in: lanes shifted by selects where j is not on a
// whole vector, with no branch (Mesa's CPU drivers run both sides of one).
// Where they end on a vector's end, the load past them is clamped into the
// buffer and unused.
fn quad(j: u32, kind: u32, carry: ptr<function, vec4<u32>>, bad: ptr<function, u32>) -> vec4<u32> {
    let last = arrayLength(&raw) - 1u;
    let a = *carry;
    if (kind == I64) {
        let h = j >> 1u;
        let y = raw[min(h + 1u, last)];
        let z = raw[min(h + 2u, last)];
        *carry = z;
        let odd = (j & 1u) != 0u;
        let lo = select(vec4<u32>(a.x, a.z, y.x, y.z), vec4<u32>(a.z, y.x, y.z, z.x), odd);
        let hi = select(vec4<u32>(a.y, a.w, y.y, y.w), vec4<u32>(a.w, y.y, y.w, z.y), odd);
        return wide(lo, hi, j, bad);
    }
    let r = j & 3u;
    let b = raw[min((j >> 2u) + 1u, last)];
    *carry = b;
    let v = select(select(select(vec4<u32>(a.w, b.xyz), vec4<u32>(a.zw, b.xy), r == 2u), vec4<u32>(a.yzw, b.x),
                          r == 1u), a, r == 0u);
    return narrow(v, j, bad);
}

// Index j alone, checked.
fn one(j: u32, kind: u32, bad: ptr<function, u32>) -> u32 {
    if (kind == I64) {
        let x = raw[j >> 1u];
        let odd = (j & 1u) != 0u;  // the pair's words: x.xy or x.zw
        return wide(vec4<u32>(select(x.x, x.z, odd)), vec4<u32>(select(x.y, x.w, odd)), j, bad).x;
    }
    return narrow(vec4<u32>(raw[j >> 2u][j & 3u]), j, bad).x;
}

// The data word where line `line` starts (its leading axes' offsets).
fn line_base(line: u32) -> u32 {
    var rest = line;
    var off = 0u;
    for (var k = params.outer; k > 1u; k = k - 1u) {
        let ax = axis(k - 1u);
        off = off + (rest % ax.dim) * ax.stride;
        rest = rest / ax.dim;
    }
    if (params.outer > 0u) {
        off = off + rest * axis(0).stride;  // the first axis: no division
    }
    return off;
}

// An invocation's place: its unit's line, position in it, and the line's data word.
struct Place {
    j: u32,
    line: u32,
    base: u32,
}

fn place(u: u32) -> Place {
    let line = u / params.m;
    return Place(u - line * params.m, line, line_base(line));
}

// The place of the unit after p's.
fn step(p: Place) -> Place {
    if (p.j + 1u < params.m) {
        return Place(p.j + 1u, p.line, p.base);
    }
    return Place(0u, p.line + 1u, line_base(p.line + 1u));
}

"""


def _words(unit: int) -> str:
    """``words{unit}``: WORDS output words of ``unit``-word units (1 or 2)."""
    units, first = ("WORDS", "w0") if unit == 1 else ("UNITS", "(w0 >> 1u)")
    if unit == 1:
        vector = "            dst[(w0 >> 2u) + q] = vec4<u32>(src[o.x], src[o.y], src[o.z], src[o.w]);\n"
        single = "                v[c] = src[p.base + one(p.j, kind, &bad) * L];\n"
    else:
        vector = """            let d = (w0 >> 2u) + 2u * q;
            dst[d] = vec4<u32>(src[o.x], src[o.x + 1u], src[o.y], src[o.y + 1u]);
            dst[d + 1u] = vec4<u32>(src[o.z], src[o.z + 1u], src[o.w], src[o.w + 1u]);
"""
        single = """                let o = p.base + one(p.j, kind, &bad) * L;
                v[2u * c] = src[o];
                v[2u * c + 1u] = src[o + 1u];
"""
    return f"""// WORDS words of {unit}-word units.
fn words{unit}(wg: vec3<u32>, lid: u32, kind: u32) {{
{head()}{"    const UNITS: u32 = WORDS / 2u;" + chr(10) if unit == 2 else ""}    var p = place(params.u0 + {first});
    let L = params.lstride;
    var bad = 0xffffffffu;
    if (p.j + {units} <= params.m && w0 + WORDS <= params.words) {{  // within one line: vectors
        let b = vec4<u32>(p.base);
        var carry = first(p.j, kind);
        for (var q = 0u; q < {units} / 4u; q = q + 1u) {{
            let o = b + quad(p.j + 4u * q, kind, &carry, &bad) * L;
{vector}        }}
        report(bad);
        return;
    }}
    for (var q = 0u; q < WORDS / 4u; q = q + 1u) {{
        let w = w0 + 4u * q;
        if (w >= params.words) {{
            break;
        }}
        var v = vec4<u32>(0u);
        for (var c = 0u; c < {4 // unit}u; c = c + 1u) {{
            if (w + {"c" if unit == 1 else "2u * c"} < params.words) {{
{single}                p = step(p);
            }}
        }}
        dst[w >> 2u] = v;
    }}
    report(bad);
}}
"""
