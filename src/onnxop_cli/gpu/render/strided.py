"""The strided gathers, dst[e] = src[view(e)] row-major and little-endian:
the kernels of one view and one layout (gpu/render/view.py), so one bind
group serves them all (gpu/gather.py). One dispatch writes one box of a
band (gpu/tiling.py: a range of axis ``axis0`` and all of the axes after
it) from one upload, through the box's own strides (``axes`` from entry
``at``; ``base`` the upload element of its first element).

``Gather`` (generic, ``Words``): every layout change (Fortran order,
big-endian, Transpose, Expand's stride 0, Slice's signed strides, Tile,
DepthToSpace). Offsets are 64-bit u32 pairs (a source can exceed 4 Gi
elements); elements outside the upload are left for another dispatch
(``keep``). Each invocation writes WORDS whole words, so no two share one:
2-16-bit elements are assembled 32 / bits to a word (low bits first, as ONNX
packs), a word shared with another box or window read first. ``swap``: the
byte-swap unit (2, 4, 8) of a big-endian source, or 0.

``Blocked``, the transpose, is gpu/render/transpose.py's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..layout import Struct
from ..shaders import shader_source
from .piece_wgsl import SWAPPED
from .schedule import Words, head, loop
from .transpose import Blocked
from .view import BOX, View

GATHER = Struct("Params", (
    ("words", "u32"),       # output u32 words this dispatch writes, from first_word
    ("groups_x", "u32"),    # workgroups per row of the dispatch grid
    ("first_word", "u32"),  # the box's first dst word
    ("e0", "u32"),          # the box's first element in the band
    ("count", "u32"),       # elements in the box
    ("band", "u32"),        # elements in the band: bits past it (the last word's padding) are 0
    ("bits", "u32"),        # element width: 2, 4, 8, 16, 32, 64 or 128
    ("swap", "u32"),        # 0, or the byte-swap unit: 2, 4 or 8
    *BOX,
    ("window", "u32"),      # source elements in the bound window
    ("keep", "u32"),        # 1: the box reaches outside the window; keep what dst holds there
    ("at", "u32"),          # this dispatch's entries in `axes` start here
    ("base", "vec2<u32>"),  # source element of the box's first element, minus the window's first
))


@dataclass(frozen=True)
class Gather(View):
    """The generic strided gather (``Words`` schedule, variant ``gather``)."""

    schedule: Words = Words("gather")
    PARAMS = GATHER
    LABEL = "strided gather"

    def parts(self) -> list[str]:
        return [*self.view(), shader_source("lib/int64_ops.wgsl"), _CURSOR, shader_source("lib/bswap.wgsl"), SWAPPED]

    def main(self) -> str:
        return head() + _GATHER


# ``blocked`` on 64 invocations (Mesa 22.3's): choose.py's ``transpose`` question measures it with generic. 16 and
# 32 won on neither Mesa; wider, invocations past the read axis's blocks idle (256 ran a read axis of 64 elements
# at 0.38x of 64's speed, docs/performance-adapters.md)
KERNELS = {"generic": Gather(), "blocked": Blocked()}

_CURSOR = """// A box element, its source offset in the window and its index along the
// last axis. Walking to the next element is one add until a row ends; only
// then is the index decomposed again (divisions are the kernel's main cost).
struct Cursor {
    l: u32,
    s: vec2<u32>,
    i: u32,
}

fn cursor_at(l: u32) -> Cursor {
    var rest = l;
    var s = params.base;
    for (var k = params.rank; k > params.axis0; k = k - 1u) {
        let d = dim(k - 1u);
        s = add64(s, mul64(vec2<u32>(rest % d, 0u), stride64(params.at + k - 1u)));
        rest = rest / d;
    }
    return Cursor(l, s, l % dim(params.rank - 1u));
}

// The last axis, loaded once per invocation: storage loads are what Mesa's
// CPU drivers are slowest at.
struct Row {
    dim: u32,
    stride: vec2<u32>,
}

fn row() -> Row {
    let last = params.rank - 1u;
    return Row(dim(last), stride64(params.at + last));
}

fn cursor_next(c: Cursor, r: Row) -> Cursor {
    if (c.i + 1u < r.dim) {
        return Cursor(c.l + 1u, add64(c.s, r.stride), c.i + 1u);
    }
    return cursor_at(c.l + 1u);
}

fn in_window(s: vec2<u32>) -> bool {
    return s.y == 0u && s.x < params.window;
}
"""

_GATHER = """    let bits = params.bits;
    let r = row();
    // Element widths are powers of two, so a word's element and its place
    // in it are a shift and a mask: u32 division is no SIMD instruction on a
    // CPU adapter, and costs a loop over the lanes there.
    if (bits >= 32u) {
        // Each word is one 32-bit piece q of one element.
        let lg = countTrailingZeros(bits) - 5u;  // log2 of words per element
        var c = cursor_at(((params.first_word + w0) >> lg) - params.e0);
""" + loop("        ", 1, "k", "i") + """            let w = params.first_word + i;
            if ((w >> lg) - params.e0 != c.l) {
                c = cursor_next(c, r);
            }
            if (!in_window(c.s)) {
                continue;
            }
            dst[w] = word_swapped(src[word_at(c.s.x, w, lg, params.swap)], params.swap);
        }
        return;
    }
    // 2- to 16-bit elements: each word is assembled from 32 / bits elements.
    let per = 32u / bits;
    let lg = 5u - countTrailingZeros(bits);  // log2 of elements per word
    let end = params.e0 + params.count;
    // the first box element among this invocation's words
    var c = cursor_at(max((params.first_word + w0) << lg, params.e0) - params.e0);
    // Neighbouring elements often share a source word (unit strides, slices
    // of small steps): load each word once while they do.
    var loaded = 0xffffffffu;
    var source = 0u;
""" + loop("    ", 1, "k", "i") + """        let w = params.first_word + i;
        var word = 0u;
        if (params.keep != 0u || (w << lg) < params.e0 || ((w + 1u) << lg) > end) {
            word = dst[w];
        }
        for (var j = 0u; j < per; j = j + 1u) {
            let e = (w << lg) + j;
            if (e >= params.band) {
                word = put(word, 0u, j, bits);
                continue;
            }
            if (e < params.e0 || e >= end) {
                continue;
            }
            if (e - params.e0 != c.l) {
                c = cursor_next(c, r);
            }
            if (in_window(c.s)) {
                if (c.s.x >> lg != loaded) {
                    loaded = c.s.x >> lg;
                    source = src[loaded];
                }
                word = put(word, small_of(source, c.s.x, bits, params.swap), j, bits);
            }
        }
        dst[w] = word;
    }
"""
