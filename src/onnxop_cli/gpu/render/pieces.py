"""The pieces kernels (Concat, Split, Pad, Tile, Trilu, fills, Where's
pieces) through the one frame: ``General`` here, ``Rows`` in piece_rows.py, bound by gpu/pieces.py on one layout
(src, mask, dst, params at a dynamic offset, axes, other).

``General``: a piece (core/pieces.py) is a box of ``rank`` axes (rows
axes[at ..]); element i goes to band element dst_base + sum i_k * dst_k
from window element src_base + sum i_k * src_k, or is ``fill`` (mode 1).
pred 1 takes the 8-bit mask's element, 2 (3) the upper (lower) triangle
col - row >= (<=) tri_k; where it fails the element is filled (otherwise
1), kept (0) or read from ``other`` (has_other: Where's select piece, its
strides in rows at + 16 ..). Strides are two's complement u32 (the host
keeps windows and bands in one binding, so final offsets are exact). ELEMS
elements an invocation, the index decomposed once then walked with adds;
elements under 32 bits are written by atomicAnd / atomicOr on their own
bits, which commute. swap: a big-endian source's byte-swap unit.

``Rows``: gpu/render/piece_rows.py.

Not gpu/render/elementwise.py: pieces write strided boxes into a band,
sharing words with neighbours.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..layout import Struct
from ..shaders import shader_source
from .frame import Binding, Frame
from .indices import table_row
from .schedule import Units

U = "u32"
PARAMS = Struct("Params", (
    *((n, U) for n in ("count", "groups_x", "rank", "at", "bits", "swap", "mode", "pred", "otherwise", "src_base",
                       "dst_base", "mask_base", "tri_k", "tri_row", "tri_col", "pad0")),
    ("fill", "vec4<u32>"), *((n, U) for n in ("has_other", "other_base", "other_swap", "pad1"))))
AXIS = Struct("Axis", tuple((n, U) for n in ("dim", "src", "dst", "mask")))
OTHER = Struct("Other", tuple((n, U) for n in ("stride", "pad0", "pad1", "pad2")))


def first(name: str, per: str = "") -> str:
    """The invocation's first unit ``name`` (times ``per``), and nothing past ``count``."""
    at = "(wg.y * params.groups_x + wg.x) * WG + lid"
    return (f"    let {name} = {f'({at}) * {per}' if per else at};\n"
            f"    if ({name} >= params.count) {{\n        return;\n    }}\n")


def decompose(axis: str, body: str) -> str:
    """Walk the outer axes from the last, index i along each (``body``: its 8-space lines)."""
    return (f"    for (var k = params.rank; k > 0u; k = k - 1u) {{\n        let a = {axis}(params.at + k - 1u);\n"
            f"        let i = rest % a.dim;\n        rest = rest / a.dim;\n{body}    }}\n")


def when(test: str, then: str, pad: str = "        ") -> str:
    return f"{pad}if ({test}) {{\n{pad}    {then};\n{pad}}}\n"


def _source(name: str, binding: str, swap: str) -> str:
    """Word q of element s (bits >= 32) and element s (bits < 32) of a source, its swap unit ``swap``."""
    return (f"fn {name}_word(s: u32, q: u32, lg: u32) -> u32 {{\n    return word_swapped({binding}[word_at(s, q, lg, "
            f"params.{swap})], params.{swap});\n}}\n\nfn {name}_small(s: u32, bits: u32) -> u32 {{\n"
            f"    let lg = 5u - countTrailingZeros(bits);\n    return small_of({binding}[s >> lg], s, bits, "
            f"params.{swap});\n}}\n")


def _value(pad: str, fill: str, other: str, src: str) -> str:
    """x: the fill, the other source's or the source's value."""
    return (f"{pad}var x = 0u;\n{pad}if (fill) {{\n{pad}    x = {fill};\n{pad}}} else if (from_other) {{\n"
            f"{pad}    x = {other};\n{pad}}} else {{\n{pad}    x = {src};\n{pad}}}\n")


_STEPS = (("s", "src"), ("d", "dst"), ("m", "mask"))  # Loc's offsets and their Axis strides

_GENERAL = """fn word_swapped(x: u32, swap: u32) -> u32 {
    return select(x, bswap32(x), swap >= 4u);
}

fn word_at(s: u32, q: u32, lg: u32, swap: u32) -> u32 {
    let flip = select(0u, swap / 4u - 1u, swap >= 4u);
    let lo = (1u << lg) - 1u;
    return (s << lg) + ((q & lo) ^ flip);
}

fn small_of(w: u32, s: u32, bits: u32, swap: u32) -> u32 {
    let per = 32u / bits;
    var x = (w >> ((s & (per - 1u)) * bits)) & ((1u << bits) - 1u);
    if (swap == 2u) {
        x = ((x & 0xffu) << 8u) | (x >> 8u);
    }
    return x;
}

""" + Struct("Loc", tuple((n, U) for n in ("s", "d", "m", "o", "row", "col", "i"))).wgsl() + """
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
""" + _value("            ", "params.fill[q]", "other_word(loc.o, q, lg)", "src_word(loc.s, q, lg)") + """\
            atomicStore(&dst[(loc.d << lg) + q], x);
        }
        return;
    }
""" + _value("    ", "params.fill.x & ((1u << bits) - 1u)", "other_small(loc.o, bits)", "src_small(loc.s, bits)") + """\
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
    bindings = (Binding(0, "src", "read", U), Binding(1, "mask", "read", U),
                Binding(2, "dst", "read_write", "atomic<u32>"), Binding(3),
                Binding(4, "axes", "read", "vec4<u32>"), Binding(5, "other", "read", U))

    @property
    def label(self) -> str:  # type: ignore[override]
        return f"pieces general[wg={self.schedule.wg},elems={self.schedule.per}]"

    def parts(self) -> list[str]:
        return [table_row("piece_axis", AXIS), table_row("other_axis", OTHER), shader_source("lib/bswap.wgsl"),
                _source("src", "src", "swap"), _source("other", "other", "other_swap"), _GENERAL]

    def main(self) -> str:
        return _GENERAL_MAIN


GENERAL = General()
