"""The pieces kernels (Concat, Split, Pad, Tile, Trilu, fills, Where's pieces) through the one frame, bound by
gpu/pieces.py on one layout (src, mask, dst, params at a dynamic offset, axes, other).

``General``: a piece (core/pieces.py) is a box of ``rank`` axes (rows axes[at ..]); element i goes to band element
dst_base + sum i_k * dst_k from window element src_base + sum i_k * src_k, or is ``fill`` (mode 1). pred 1 takes
the 8-bit mask's element, 2 (3) the upper (lower) triangle col - row >= (<=) tri_k; where it fails the element is
filled (otherwise 1), kept (0) or read from ``other`` (has_other: Where's select piece, its strides in rows at + 16
..). Strides are two's complement u32 (the host keeps windows and bands in one binding, so final offsets are
exact). ELEMS elements an invocation, the index decomposed once then walked with adds; elements under 32 bits are
written by atomicAnd / atomicOr on their own bits, which commute. swap: a big-endian source's byte-swap unit.

``Rows`` (by runs; gpu/pieces.py chooses them): a piece whose inner axis is contiguous, ``rows`` rows of
``len_bits`` bits; output word w of a row holds the source bits from w * 32 - dst_bit + src_bit (two words joined
by a funnel shift). ``words``: VECS whole vec4s of one row an invocation, plain stores; ``edges``: a row an
invocation, its other words on its own bits (atomics). A row keeps the source in [keep_lo, keep_hi) and the fill
pattern (word w is fill[w & 3]) elsewhere: mode 0 copy, 1 fill, 2 (3) upper (lower) triangle, col the inner axis,
row the index along tri_row (or folded into tri_k). Bit offsets are u32 / i32 (gpu/piece_records.py: LIMIT_BITS,
TRI_K).

Not gpu/render/elementwise.py: pieces write strided boxes into a band, sharing words with neighbours.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..layout import Struct
from ..shaders import shader_source
from .frame import Binding, Frame, first
from .indices import table_row
from .piece_wgsl import SWAPPED, decompose, pick, source, value, when
from .schedule import Units

U = "u32"
PARAMS = Struct("Params", (
    *((n, U) for n in ("count", "groups_x", "rank", "at", "bits", "swap", "mode", "pred", "otherwise", "src_base",
                       "dst_base", "mask_base", "tri_k", "tri_row", "tri_col", "pad0")),
    ("fill", "vec4<u32>"), *((n, U) for n in ("has_other", "other_base", "other_swap", "pad1"))))
AXIS = Struct("Axis", tuple((n, U) for n in ("dim", "src", "dst", "mask")))
OTHER = Struct("Other", tuple((n, U) for n in ("stride", "pad0", "pad1", "pad2")))


_STEPS = (("s", "src"), ("d", "dst"), ("m", "mask"))  # Loc's offsets and their Axis strides

_GENERAL = SWAPPED + Struct("Loc", tuple((n, U) for n in ("s", "d", "m", "o", "row", "col", "i"))).wgsl() + """
fn locate(l: u32) -> Loc {
    var rest = l;
    var loc = Loc(params.src_base, params.dst_base, params.mask_base, params.other_base, 0u, 0u, 0u);
""" + decompose("piece_axis", "".join(f"        loc.{v} = loc.{v} + i * a.{f};\n" for v, f in _STEPS)
                + when("params.has_other == 1u", "loc.o = loc.o + i * other_axis(params.at + 15u + k).stride")
                + when("k - 1u == params.tri_row", "loc.row = i") + when("k - 1u == params.tri_col", "loc.col = i")
                + when("k == params.rank", "loc.i = i")) + """    return loc;
}

fn write(loc: Loc) {
    var take = true;
    if (params.pred == 1u) {
        take = ((mask[loc.m >> 2u] >> ((loc.m & 3u) * 8u)) & 0xffu) != 0u;
    } else if (params.pred >= 2u) {
        let diff = i32(loc.col) - i32(loc.row);
        let k = bitcast<i32>(params.tri_k);
        take = select(diff <= k, diff >= k, params.pred == 2u);
    }
    var fill = params.mode == 1u;
    var from_other = false;
    if (!take) {
        if (params.has_other == 1u) {
            from_other = true;
        } else if (params.otherwise == 0u) {
            return;
        } else {
            fill = true;
        }
    }
    let bits = params.bits;
    if (bits >= 32u) {
        let lg = countTrailingZeros(bits) - 5u;
        let n = 1u << lg;
        for (var q = 0u; q < n; q = q + 1u) {
""" + value("            ", "params.fill[q]", "other_word(loc.o, q, lg)", "src_word(loc.s, q, lg)") + """\
            atomicStore(&dst[(loc.d << lg) + q], x);
        }
        return;
    }
""" + value("    ", "params.fill.x & ((1u << bits) - 1u)", "other_small(loc.o, bits)", "src_small(loc.s, bits)") + """\
    let lg = 5u - countTrailingZeros(bits);
    let shift = (loc.d & ((1u << lg) - 1u)) * bits;
    let w = loc.d >> lg;
    atomicAnd(&dst[w], ~(((1u << bits) - 1u) << shift));
    atomicOr(&dst[w], x << shift);
}

// a select piece's element of 1 << lg whole words, neither source swapped: no fill, no keep
fn select_words(loc: Loc, lg: u32) {
    let take = ((mask[loc.m >> 2u] >> ((loc.m & 3u) * 8u)) & 0xffu) != 0u;
    let n = 1u << lg;
    for (var q = 0u; q < n; q = q + 1u) {
        let a = src[(loc.s << lg) + q];
        let b = other[(loc.o << lg) + q];
        atomicStore(&dst[(loc.d << lg) + q], select(b, a, take));
    }
}
"""

_GENERAL_MAIN = first("l0", "ELEMS") + """    var loc = locate(l0);
    var last = Axis(params.count, 0u, 0u, 0u);
    var last_o = 0u;
    if (params.rank > 0u) {
        last = piece_axis(params.at + params.rank - 1u);
        if (params.has_other == 1u) {
            last_o = other_axis(params.at + 15u + params.rank).stride;
        }
    }
    let end = min(l0 + ELEMS, params.count);
    let fast = params.has_other == 1u && params.bits >= 32u && params.swap == 0u && params.other_swap == 0u;
    let lg = select(0u, countTrailingZeros(params.bits) - 5u, params.bits >= 32u);
    for (var l = l0; l < end; l = l + 1u) {
        if (l != l0) {
            if (loc.i + 1u < last.dim) {
                loc.i = loc.i + 1u;
""" + "".join(f"                loc.{v} = loc.{v} + last.{f};\n" for v, f in _STEPS) + """\
                loc.o = loc.o + last_o;
""" + when("params.tri_col == params.rank - 1u", "loc.col = loc.col + 1u", " " * 16) + when(
    "params.tri_row == params.rank - 1u", "loc.row = loc.row + 1u", " " * 16) + """            } else {
                loc = locate(l);
            }
        }
        if (fast) {
            select_words(loc, lg);
        } else {
            write(loc);
        }
    }
"""


@dataclass(frozen=True)
class General(Frame):
    """The general pieces kernel over ``schedule``."""

    schedule: Units = Units("ELEMS", 8)  # ELEMS elements an invocation
    PARAMS = PARAMS
    LABEL = "pieces general[wg={s.wg},elems={s.per}]"
    bindings = (Binding(0, "src", "read", U), Binding(1, "mask", "read", U),
                Binding(2, "dst", "read_write", "atomic<u32>"), Binding(3),
                Binding(4, "axes", "read", "vec4<u32>"), Binding(5, "other", "read", U))

    def parts(self) -> list[str]:
        return [table_row("piece_axis", AXIS), table_row("other_axis", OTHER), shader_source("lib/bswap.wgsl"),
                source("src", "src", "swap"), source("other", "other", "other_swap"), _GENERAL]

    def main(self) -> str:
        return _GENERAL_MAIN


GENERAL = General()


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
    def label(self) -> str:
        s = self.schedule
        return f"pieces rows {self.kernel}[wg={s.wg}" + (f",vecs={s.per}]" if self.kernel == "words" else "]")

    @property
    def bindings(self) -> tuple[Binding, ...]:  # type: ignore[override]
        # binding 2 is the band as each kernel stores it: vec4s, or words by atomics on its own bits
        dst = (Binding(2, "dst", "read_write", "vec4<u32>") if self.kernel == "words"
               else Binding(2, "dst_bits", "read_write", "atomic<u32>"))
        return (Binding(0, "src", "read", "vec4<u32>"), dst, Binding(3), Binding(4, "axes", "read", "vec4<u32>"))

    def parts(self) -> list[str]:
        return [table_row("row_axis", ROWS_AXIS), _ROWS, pick() if self.kernel == "words" else _EDGES]

    def main(self) -> str:
        return _WORDS_MAIN if self.kernel == "words" else _EDGES_MAIN


WORDS, EDGES = Rows("words", Units("VECS", 4)), Rows("edges", Units("VECS"))
