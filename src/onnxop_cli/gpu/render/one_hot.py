"""OneHot on the whole-word schedule (gpu/render/schedule.py; the element schedule maps element to element
of one shape, OneHot writes a depth axis per index, packed into whole words): output element is on_value
where its depth coordinate equals the (wrapped) index of its (outer, inner) position, else off_value.

gpu/word_kernels.py streams the output in bands: a run of whole lines (``line`` = inner elements of one (outer,
depth) pair) or a stretch of one line (line NONE, depth coordinate d0). The band's indices lie in the window
``idx`` as stored (either byte order, any integer or float type the op takes) from element q0; band element e is at
``t = e / line + d0, r = e % line``: depth coordinate t % depth, index position (t / depth) * line + r + q0 (two
divisions an invocation, then adds). An index is read as ONNX casts it to int64 (floats truncated toward zero, NaN
and infinities out of range), wrapped once if negative; one outside [-depth, depth) matches nothing (all off, as
onnx.reference), and is decoded only when the position moves (``Span``: one position, or one line, needs no walk).

An invocation writes ``words`` whole words (vec4 stores), no two invocations a word, no atomics. Bodies
(``variant``, gpu/word_kernels.py's ``one_hot_variant``), each rendered alone so each holds its own fast
path: ``small`` (2-16 bits, bits past the band's last element 0), ``wide`` (32-128 bits, lines of one
element: the last axis), ``wide_lines`` (longer lines: one kernel with both wide fast paths ran the last
axis at 0.9x the gather kernel's GB/s against 1.2-1.6x, Mesa 22.3). Bindings: gpu/pieces.py's layout.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..layout import Struct
from ..shaders import shader_source
from .frame import Binding
from .schedule import WORD_FIELDS, OnWords, loop, packed, small_head, wide_head

PARAMS = Struct("Params", WORD_FIELDS + (  # bits: 2, 4, 8, 16, 32, 64 or 128
    ("line", "u32"),      # elements of one line (inner), or NONE: the band is inside one line
    ("depth", "u32"),
    ("d0", "u32"),        # lines from the window's first outer to the band's first line
    ("q0", "u32"),        # window element of the window's first position
    ("ibits", "u32"),     # index bits: 8, 16, 32 or 64
    ("kind", "u32"),      # 0 signed integer, 1 unsigned integer, 2 IEEE float
    ("swap", "u32"),      # 1: indices big-endian
    ("pad", "u32"),
    ("off", "vec4<u32>"),  # off_value repeated over four words (a wide element's word j at j % its words)
    ("on", "vec4<u32>"),
))


@dataclass(frozen=True)
class OneHot(OnWords):
    """OneHot's kernel over ``schedule``."""

    NAME = "one-hot"
    PARAMS = PARAMS
    bindings = (Binding(0, "idx", "read", "u32"), Binding(2, "dst", "read_write", "vec4<u32>"), Binding(3))

    def shared(self) -> list[str]:
        return [_NONE, shader_source("lib/bswap.wgsl"), _INDEX, _WALK]


_NONE = "const NONE: u32 = 0xffffffffu;\n"

_INDEX = """// the index at window position `pos`, wrapped into [0, depth), or NONE
fn index_at(pos: u32) -> u32 {
    let ib = params.ibits;
    let swap = params.swap == 1u;
    var lo = 0u;
    var hi = 0u;
    if (ib == 64u) {
        lo = idx[2u * pos];
        hi = idx[2u * pos + 1u];
        if (swap) {
            let t = bswap32(lo);
            lo = bswap32(hi);
            hi = t;
        }
    } else if (ib == 32u) {
        lo = idx[pos];
        if (swap) {
            lo = bswap32(lo);
        }
    } else {
        let lgp = select(2u, 1u, ib == 16u);  // log2 of indices per word
        let per = 1u << lgp;
        lo = (idx[pos >> lgp] >> ((pos & (per - 1u)) * ib)) & ((1u << ib) - 1u);
        if (swap && ib == 16u) {
            lo = ((lo >> 8u) | (lo << 8u)) & 0xffffu;
        }
    }
    let depth = params.depth;
    var neg = false;
    var mag = 0u;   // |index| (truncated toward zero), when it fits 32 bits
    var big = false;  // |index| >= 2**32, or not a number
    if (params.kind == 0u) {
        if (ib < 64u) {  // sign-extended to 64 bits
            let sh = 32u - ib;
            lo = bitcast<u32>(bitcast<i32>(lo << sh) >> sh);
            hi = select(0u, 0xffffffffu, (lo >> 31u) == 1u);
        }
        neg = (hi >> 31u) == 1u;
        mag = select(lo, 0u - lo, neg);
        big = select(hi, ~hi + select(0u, 1u, lo == 0u), neg) != 0u;  // the magnitude's high word
    } else if (params.kind == 1u) {
        mag = lo;
        big = hi != 0u;
    } else {
        // h: the index's top word, left-aligned (a double's low word lo below it): its sign, its exponent of
        // ebits, and the fraction's top bits under bit 31
        let ebits = select(select(11u, 8u, ib == 32u), 5u, ib == 16u);
        let h = select(select(lo << 16u, lo, ib == 32u), hi, ib == 64u);
        let emax = (1u << ebits) - 1u;
        let bias = emax >> 1u;
        let e = (h >> (31u - ebits)) & emax;
        let top = ((h << (1u + ebits)) >> 1u) | (select(0u, lo, ib == 64u) >> (32u - ebits));
        neg = (h >> 31u) == 1u;
        big = e == emax || e >= bias + 32u;
        // |x| < 1 truncates to 0; else the integer part is the significand's top (e - bias + 1) bits
        let p = min(e - min(e, bias), 31u);
        mag = select(0u, (0x80000000u | top) >> (31u - p), e >= bias);
    }
    if (big) {
        return NONE;
    }
    if (neg) {
        if (mag == 0u) {
            return 0u;
        }
        return select(NONE, depth - mag, mag <= depth);
    }
    return select(NONE, mag, mag < depth);
}
"""

_WALK = """// the walk over a band's elements
struct Walk {
    r: u32,     // place in the line
    d: u32,     // depth coordinate
    base: u32,  // window element of the line's first position
    pos: u32,   // the position last decoded (NONE: none yet)
    hot: u32,   // its wrapped index
}

fn walk_at(e: u32) -> Walk {
    let t = e / params.line + params.d0;
    let o = t / params.depth;
    return Walk(e % params.line, t % params.depth, o * params.line + params.q0, NONE, NONE);
}

fn walk_next(w: Walk) -> Walk {
    let r = w.r + 1u;
    let wrap = r == params.line;
    let d = w.d + select(0u, 1u, wrap);
    let dw = d == params.depth;
    return Walk(select(r, 0u, wrap), select(d, 0u, dw), w.base + select(0u, params.line, dw), w.pos, w.hot);
}

// whether the walk's element is on (decoding its position's index only when the position moved)
fn is_on(w: ptr<function, Walk>) -> bool {
    let pos = (*w).base + (*w).r;
    if (pos != (*w).pos) {
        (*w).pos = pos;
        (*w).hot = index_at(pos);
    }
    return (*w).hot == (*w).d;
}

// where an invocation's `span` elements from band element e0 lie: all at one position (lines of one
// element, consecutive depth coordinates from d), or all in one line (depth coordinate d, consecutive
// positions from pos), or neither (the walk)
struct Span {
    one_pos: bool,
    one_line: bool,
    d: u32,
    pos: u32,
}

fn span_at(e0: u32, span: u32) -> Span {
    var r0 = 0u;
    var t = e0 + params.d0;
    if (params.line != 1u) {  // uniform: lines of one element (the last axis) skip two divisions
        r0 = e0 % params.line;
        t = e0 / params.line + params.d0;
    }
    let d = t % params.depth;
    let pos = (t / params.depth) * params.line + params.q0 + r0;
    return Span(params.line == 1u && d + span <= params.depth, r0 + span <= params.line, d, pos);
}
"""


def _packed(pad: str, element: str) -> str:
    """Four words of sub-word elements from e (``element``: its bits at k, after the walk's checks), stored."""
    return (f"{pad}var out = vec4<u32>(0u);\n" + packed(pad, "out", f"{element}{pad}        e = e + 1u;\n", "k")
            + f"{pad}dst[w >> 2u] = out;\n")


def _small() -> str:
    """Elements of 2-16 bits: 32 / bits to a word."""
    return ("fn small(wg: vec3<u32>, lid: u32) {\n" + small_head() + """    let off = params.off.x & emask;
    let on = params.on.x & emask;
    var e = w0 << lg;
    let at = span_at(e, WORDS << lg);
    if (at.one_pos || at.one_line) {  // no walk: each element's depth coordinate and position at hand
        let hot = index_at(at.pos);   // one_pos: the one index
""" + loop("        ") + _packed("            ", """                    let i = e - (w0 << lg);  // elements from the invocation's first
                    var on_here = false;
                    if (at.one_pos) {
                        on_here = at.d + i == hot;
                    } else {
                        on_here = index_at(at.pos + i) == at.d;
                    }
                    v = v | select(0u, select(off, on, on_here) << (k * bits), e < params.elems);
""") + """        }
        return;
    }
    var walk = walk_at(e);
""" + loop("    ") + _packed("        ", """                if (e < params.elems) {
                    v = v | (select(off, on, is_on(&walk)) << (k * bits));
                    walk = walk_next(walk);
                }
""") + "    }\n}\n")


def _wide_body(name: str, fast: str) -> str:
    """Body ``name`` of elements of whole words: its own ``fast`` path (which returns, given ``at``: span_at of
    the invocation's elements), else the walk, each element on or off once for its words."""
    return (f"fn {name}(wg: vec3<u32>, lid: u32) {{\n" + wide_head() + """    let e0 = w0 >> lg;  // whole elements
    let at = span_at(e0, WORDS >> lg);
""" + fast + """    var walk = walk_at(e0);
    var hot = false;
""" + loop("    ") + """        var out = vec4<u32>(0u);
        for (var j = 0u; j < 4u; j = j + 1u) {
            let ww = w + j;
            let part = ww & lo;
            if (part == 0u && ww < params.words) {  // the next element: on or off, once for its words
                if (ww != w0) {
                    walk = walk_next(walk);
                }
                hot = is_on(&walk);
            }
            out[j] = select(params.off[part], params.on[part], hot);
        }
        dst[w >> 2u] = out;
    }
}
""")


def _wide() -> str:
    """Lines of one element (the last axis, inner 1)."""
    return _wide_body("wide", """    if (at.one_pos) {
        // lines of one element (the last axis): the invocation's elements are consecutive depth
        // coordinates of one position, compared four words at a time with its one index
        let hot = vec4<u32>(index_at(at.pos));
        for (var g = 0u; g < WORDS; g = g + 4u) {
            let k = (vec4<u32>(g) + vec4<u32>(0u, 1u, 2u, 3u)) >> vec4<u32>(lg);  // elements from e0
            dst[(w0 + g) >> 2u] = select(params.off, params.on, vec4<u32>(at.d) + k == hot);
        }
        return;
    }
""")


def _wide_lines() -> str:
    """Longer lines: an invocation inside one line reads each element's index once."""
    return _wide_body("wide_lines", """    if (at.one_line) {  // one depth coordinate, consecutive positions
        var hot = vec4<bool>(false);
""" + loop("        ") + """            for (var j = 0u; j < 4u; j = j + 1u) {
                if ((j & lo) == 0u) {
                    hot[j] = index_at(at.pos + ((g + j) >> lg)) == at.d;
                } else {
                    hot[j] = hot[j - 1u];
                }
            }
            dst[w >> 2u] = select(params.off, params.on, hot);
        }
        return;
    }
""")


OneHot.BODIES = {"small": _small, "wide": _wide, "wide_lines": _wide_lines}
