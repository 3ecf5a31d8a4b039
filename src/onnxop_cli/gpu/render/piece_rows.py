"""The pieces kernels by runs (gpu/pieces.py chooses them), through the one
frame on gpu/render/pieces.py's schedule and layout. A piece whose inner axis is contiguous,
``rows`` rows of ``len_bits`` bits; output word w of a row holds the source
bits from w * 32 - dst_bit + src_bit (two words joined by a funnel shift).
``words``: VECS whole vec4s of one row an invocation, plain stores;
``edges``: a row an invocation, its other words on its own bits (atomics).
A row keeps the source in [keep_lo, keep_hi) and the fill pattern (word w
is fill[w & 3]) elsewhere: mode 0 copy, 1 fill, 2 (3) upper (lower)
triangle, col the inner axis, row the index along tri_row (or folded into
tri_k). Bit offsets are u32 / i32 (gpu/pieces.py: LIMIT_BITS, TRI_K).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..layout import Struct
from .frame import Binding, Frame
from .indices import table_row
from .pieces import U, decompose, first, when
from .schedule import Units

ROWS_PARAMS = Struct("Params", (
    *((n, U) for n in ("count", "groups_x", "rank", "at", "bits", "src_base", "dst_base", "len_bits", "chunks",
                       "rows", "mode", "tri_k")),
    ("fill", "vec4<u32>"), *((n, U) for n in ("tri_row", "pad0", "pad1", "pad2"))))
ROWS_AXIS = Struct("Axis", tuple((n, U) for n in ("dim", "src", "dst", "pad0")))
ROWS = ("words", "edges")

_ROWS = Struct("Row", tuple((n, U) for n in ("src_bit", "dst_bit", "tri"))).wgsl() + """
fn row_at(r: u32) -> Row {
    var rest = r;
    var s = params.src_base;
    var d = params.dst_base;
    var row = 0u;
""" + decompose("row_axis", "        s = s + i * a.src;\n        d = d + i * a.dst;\n"
                + when("k - 1u == params.tri_row", "row = i")) + """\
    return Row(s * params.bits, d * params.bits, row);
}

fn keep_of(row: Row) -> vec2<u32> {
    let lo = row.dst_bit;
    let hi = lo + params.len_bits;
    if (params.mode == 0u) {
        return vec2<u32>(lo, hi);
    }
    if (params.mode == 1u) {
        return vec2<u32>(lo, lo);
    }
    let len = i32(params.len_bits / params.bits);
    let b = bitcast<i32>(params.tri_k) + i32(row.tri);
    if (params.mode == 2u) {
        return vec2<u32>(lo + u32(clamp(b, 0, len)) * params.bits, hi);
    }
    return vec2<u32>(lo, lo + u32(clamp(b + 1, 0, len)) * params.bits);
}

// word w's bits in band bits [lo, hi)
fn range_mask(w: u32, lo: u32, hi: u32) -> u32 {
    let b0 = max(lo, w * 32u);
    let b1 = min(hi, w * 32u + 32u);
    if (b1 <= b0) {
        return 0u;
    }
    let n = b1 - b0;
    if (n >= 32u) {
        return 0xffffffffu;
    }
    return ((1u << n) - 1u) << (b0 - w * 32u);
}

fn src_word(k: i32) -> u32 {
    let i = u32(max(k, 0));
    return select(0u, src[i >> 2u][i & 3u], k >= 0);
}

// output word w's bits of the row (those outside the row are garbage)
fn word_of(row: Row, w: u32) -> u32 {
    let at = i32(w * 32u - row.dst_bit + row.src_bit);
    let k = at >> 5u;
    let sh = u32(at) & 31u;
    let lo = src_word(k) >> sh;
    let hi = select(0u, src_word(k + 1) << (32u - sh), sh != 0u);
    return lo | hi;
}

// the whole vec4s of row: [va, vb)
fn vec_range(row: Row) -> vec2<u32> {
    let a = (row.dst_bit + 31u) >> 5u;
    let b = (row.dst_bit + params.len_bits) >> 5u;
    return vec2<u32>((a + 3u) >> 2u, b >> 2u);
}
"""


def _pick() -> str:
    """Five consecutive words from two vec4s a, b, from word r (0..3) of a."""
    lanes = ("a.x", "a.y", "a.z", "a.w", "b.x", "b.y", "b.z", "b.w")
    rows = "".join(f"    let s{j} = select(select(select({lanes[j]}, {lanes[j + 1]}, r == 1u), {lanes[j + 2]}, "
                   f"r == 2u), {lanes[j + 3]}, r == 3u);\n" for j in range(5))
    return (f"fn pick(a: vec4<u32>, b: vec4<u32>, r: u32) -> array<u32, 5> {{\n{rows}"
            "    return array<u32, 5>(s0, s1, s2, s3, s4);\n}\n")


_WORDS_MAIN = first("t") + """    let r = t / params.chunks;
    let row = row_at(r);
    let range = vec_range(row);
    let v0 = range.x + (t - r * params.chunks) * VECS;
    if (v0 >= range.y) {
        return;
    }
    let v1 = min(v0 + VECS, range.y);
    if (params.mode == 1u) {
        for (var v = v0; v < v1; v = v + 1u) {
            dst[v] = params.fill;
        }
        return;
    }
    let keep = keep_of(row);
    let at = v0 * 128u - row.dst_bit + row.src_bit;
    let sh = at & 31u;
    let k0 = at >> 5u;
    let off = k0 & 3u;
    var q = k0 >> 2u;
    var a = src[q];
    for (var v = v0; v < v1; v = v + 1u) {
        let b = src[q + 1u];
        let s = pick(a, b, off);
        var out = vec4<u32>(s[0], s[1], s[2], s[3]);
        if (sh != 0u) {
            let up = 32u - sh;
            out = (out >> vec4<u32>(sh)) | (vec4<u32>(s[1], s[2], s[3], s[4]) << vec4<u32>(up));
        }
        if (keep.x > v * 128u || keep.y < v * 128u + 128u) {  // a triangle's edge crosses the vec4
            let w = v * 4u;
            let m = vec4<u32>(""" + ", ".join(f"range_mask(w{f' + {j}u' if j else ''}, keep.x, keep.y)"
                                           for j in range(4)) + """);
            out = (out & m) | (params.fill & ~m);
        }
        dst[v] = out;
        a = b;
        q = q + 1u;
    }
"""

_EDGES = """fn put(w: u32, x: u32, lo: u32, hi: u32) {
    let m = range_mask(w, lo, hi);
    if (m == 0u) {
        return;
    }
    atomicAnd(&dst_bits[w], ~m);
    atomicOr(&dst_bits[w], x & m);
}

// band word w of the row: the source's bits where kept, the fill's elsewhere
fn edge_word(row: Row, w: u32, keep: vec2<u32>) -> u32 {
    let f = params.fill[w & 3u];
    if (params.mode == 1u) {
        return f;
    }
    let m = range_mask(w, keep.x, keep.y);
    if (m == 0u) {
        return f;
    }
    return (word_of(row, w) & m) | (f & ~m);
}
"""

_EDGES_MAIN = first("r") + """    let row = row_at(r);
    let lo = row.dst_bit;
    let hi = row.dst_bit + params.len_bits;
    let w_lo = lo >> 5u;
    let w_end = (hi + 31u) >> 5u;
    let range = vec_range(row);
    var head_end = w_end;
    var tail = w_end;
    if (range.x < range.y) {
        head_end = range.x * 4u;
        tail = range.y * 4u;
    }
    let keep = keep_of(row);
""" + "".join(f"    for (var w = {a}; w < {b}; w = w + 1u) {{\n        put(w, edge_word(row, w, keep), lo, hi);\n"
              "    }\n" for a, b in (("w_lo", "head_end"), ("tail", "w_end")))


@dataclass(frozen=True)
class Rows(Frame):
    """A pieces-by-runs kernel: ``words`` (whole vec4s of rows, VECS an invocation) or ``edges`` (the rest
    of each row, a row an invocation)."""

    kernel: str
    schedule: Units
    PARAMS = ROWS_PARAMS

    def __post_init__(self) -> None:
        if self.kernel not in ROWS:
            raise ValueError(f"no rows kernel {self.kernel}")

    @property
    def label(self) -> str:  # type: ignore[override]
        s = self.schedule
        return f"pieces rows {self.kernel}[wg={s.wg}" + (f",vecs={s.per}]" if self.kernel == "words" else "]")

    @property
    def bindings(self) -> tuple[Binding, ...]:  # type: ignore[override]
        # binding 2 is the band as each kernel stores it: vec4s, or words by atomics on its own bits
        dst = (Binding(2, "dst", "read_write", "vec4<u32>") if self.kernel == "words"
               else Binding(2, "dst_bits", "read_write", "atomic<u32>"))
        return (Binding(0, "src", "read", "vec4<u32>"), dst, Binding(3), Binding(4, "axes", "read", "vec4<u32>"))

    def parts(self) -> list[str]:
        return [table_row("row_axis", ROWS_AXIS), _ROWS, _pick() if self.kernel == "words" else _EDGES]

    def main(self) -> str:
        return _WORDS_MAIN if self.kernel == "words" else _EDGES_MAIN


WORDS, EDGES = Rows("words", Units("VECS", 4)), Rows("edges", Units("VECS"))
