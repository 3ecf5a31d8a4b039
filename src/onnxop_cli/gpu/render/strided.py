"""The strided gathers: dst[e] = src[view(e)], output row-major and
little-endian, rendered through the one frame. Three kernels read one view
(the axes table: per output axis its extent and the source's stride along
it, a 64-bit two's complement integer, one vec4 record per axis) and bind
one layout (src, dst, Params at a dynamic offset, axes), so one bind group
serves all three (gpu/gather.py):

``Gather`` (the generic kernel, on the whole-word schedule ``Words``)
    one kernel for every layout change: Fortran order, big-endian input,
    Transpose (permuted strides), Expand (stride 0), Slice (an offset and
    signed strides), Tile and DepthToSpace (more axes). The host
    (gpu/tiling.py) cuts the output into bands of one binding and each band
    into boxes: a box fixes the outer indices, takes a range of axis
    ``axis0`` and all of the axes after it, so it is one contiguous run of
    the band. One dispatch writes one box from one upload of source elements
    (a window of the source, or runs of it packed), through the box's own
    strides into that upload (``axes``, from entry ``at``); ``base`` is the
    upload element of the box's first element. Elements whose source falls
    outside the upload are left for another dispatch (``keep``). Offsets
    are 64-bit in u32 pairs (vec2: lo, hi): a source can exceed 4 Gi
    elements, and strides can be negative; within a window the offset is a
    u32, so loads index with ``.x``. Each invocation writes WORDS
    consecutive whole u32 words, so no two invocations share a word: an
    element of 32-128 bits is whole words; 2-16-bit elements are assembled
    32 / bits to a word (ONNX packs sub-byte types low bits first), a word
    shared with another box or window read first and only this dispatch's
    elements replaced (dispatches run one after another). ``swap``: 0, or
    the byte-swap unit in bytes (2, 4 or 8) of a big-endian source.

``Tiled`` (``Tiles``: TILE x TILE / W tiles through workgroup memory)
    a box whose innermost output axis ``l`` has a large source stride, read
    along the box axis ``a`` whose source stride is +-1 (consecutive
    invocations read consecutive words), and after a barrier written along
    ``l``: both sides contiguous, as a GPU wants for coalescing. Tile rows
    are PITCH = TILE + 1 words apart, so the column reads touch 32 banks.
    Elements of 32, 64 or 128 bits (W = 1, 2, 4 words); the whole box lies
    in the bound source, so offsets are u32 and a negative stride wraps.

``Blocked`` (``Elements``, 64 invocations: 4 x 4 blocks of 32-bit elements)
    for CPU adapters, where each storage access is one scalar access per
    SIMD lane and workgroup memory is ordinary memory: an invocation loads
    four 16-byte words (4 elements along ``a`` from 4 rows along ``l``),
    swaps rows and columns in registers and stores four 16-byte words (4
    elements along ``l``): one access per 4 elements, as the flat copy
    makes. The host (gpu/tiled.py) sends a box only when every offset is a
    whole word: the l extent a multiple of 4, the source stride of ``a`` 1
    and of every other box axis a multiple of 4, the box and its source on a
    word. A last block along ``a`` may be partial: rows past it are not
    stored (their loads stay in the buffer under WebGPU's bounds checks).

Tiled and Blocked walk the box axes other than ``a`` and ``l`` (the outer
index, uniform in a workgroup: decomposed once, as u32 division is a loop
over the lanes on a CPU) with one loop (``_outer``).

By hand before (shaders/gather.wgsl, transpose_tiled.wgsl,
transpose_blocked.wgsl, lib/view_axes.wgsl): the elementwise generator reads
an input row-major or broadcast; a view's signed strides, windows, byte
swaps, tiles and blocks are these kernels'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..layout import Struct
from ..shaders import shader_source
from .frame import Binding, Frame
from .schedule import Elements, Words, head

# (src, dst, Params, axes): one layout for all three (gpu/gather.py binds Params at a dynamic offset)
KINDS = ("read-only-storage", "storage", "uniform+offset", "read-only-storage")
AXIS = Struct("Axis", (("dim", "u32"), ("stride_lo", "u32"), ("stride_hi", "u32"), ("pad0", "u32")))
BOX = (  # the box every kernel writes: fields of each Params
    ("rank", "u32"),   # entries of `axes`
    ("axis0", "u32"),  # the box's first axis; axes before it are fixed
    ("dim0", "u32"),   # the box's extent along axis0
)
PADS = (("pad0", "u32"), ("pad1", "u32"), ("pad2", "u32"))

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
TILED = Struct("Params", (
    ("groups", "u32"),      # workgroups that work: outer * tiles_a * tiles_l
    ("groups_x", "u32"),
    ("first_word", "u32"),  # the box's first dst word
    *BOX,
    ("at", "u32"),
    ("lg", "u32"),          # log2 of W, the 32-bit words per element (0, 1, 2)
    ("swap", "u32"),        # 0, or the byte-swap unit: 4 or 8
    ("a", "u32"),           # the tile's read axis (source stride 1 or -1)
    ("tiles_a", "u32"),
    ("tiles_l", "u32"),
    ("base", "u32"),        # source element of the box's first element, in the window
    *PADS,
))
BLOCKED = Struct("Params", (
    ("groups", "u32"),      # workgroups that work: outer * blocks_l * spans_a
    ("groups_x", "u32"),
    ("first_word", "u32"),  # the box's first dst element (a multiple of 4)
    *BOX,
    ("at", "u32"),
    ("a", "u32"),           # the read axis (source stride 1)
    ("blocks_a", "u32"),    # blocks along a: dim(a) / 4, rounded up
    ("blocks_l", "u32"),    # blocks along l: dim(l) / 4
    ("spans_a", "u32"),     # workgroups along a: blocks_a / WG, rounded up
    ("base", "u32"),
    ("swap", "u32"),        # 0, or 4: reverse each element's bytes
    *PADS,
))


@dataclass(frozen=True)
class Tiles:
    """TILE words per tile row (elements along l), rows PITCH words apart, WG invocations."""

    wg: int = 256
    tile: int = 32
    CONSTS: ClassVar = (("WG", "wg", ""), ("TILE", "tile", "words per tile row; elements along l"),
                        ("ROWS", "rows", "tile rows one pass of the workgroup covers (WG / TILE)"),
                        ("PITCH", "pitch", "words between tile rows: TILE + 1 against bank conflicts"))

    @property
    def rows(self) -> int:
        return self.wg // self.tile

    @property
    def pitch(self) -> int:
        return self.tile + 1


_VIEW = """// Row r of `axes` as an Axis: one vec4 load per row (lib/index_table.wgsl says why).
fn view_axis(r: u32) -> Axis {
    let a = axes[r];
    return Axis(a.x, a.y, a.z, a.w);
}

// The stride of axes[i] as (low, high) words.
fn stride64(i: u32) -> vec2<u32> {
    let a = view_axis(i);
    return vec2<u32>(a.stride_lo, a.stride_hi);
}

fn dim(k: u32) -> u32 {
    return select(view_axis(params.at + k).dim, params.dim0, k == params.axis0);
}
"""

BSWAP4 = """fn bswap(x: vec4<u32>) -> vec4<u32> {
    return (x << vec4<u32>(24u)) | ((x & vec4<u32>(0xff00u)) << vec4<u32>(8u))
        | ((x >> vec4<u32>(8u)) & vec4<u32>(0xff00u)) | (x >> vec4<u32>(24u));
}
"""


class View(Frame):
    """A kernel of the view: its words (``u32`` or ``vec4<u32>``), the axes table at binding 3."""

    WORD: ClassVar[str] = "u32"

    @property
    def bindings(self) -> tuple[Binding, ...]:  # type: ignore[override]
        return (Binding(0, "src", "read", self.WORD), Binding(1, "dst", "read_write", self.WORD), Binding(2),
                Binding(3, "axes", "read", "vec4<u32>"))

    @property
    def kinds(self) -> tuple[str, ...]:
        return KINDS

    def view(self) -> list[str]:
        return [AXIS.wgsl(), _VIEW]


def _outer(db: str) -> str:
    """The outer index ``o``, decomposed over the box axes other than a and l
    (both kernels): the source element ``sb`` and output element ``db`` (from
    ``db``) at (a, l) = (0, 0), and ``inner_a``, output elements per step of a."""
    return f"""    var sb = params.base;
    var db = {db};
    var inner = dim(last);  // output elements per step of axis j
    var inner_a = 0u;
    for (var k = last; k > params.axis0; k = k - 1u) {{
        let j = k - 1u;
        let d = dim(j);
        if (j == a) {{
            inner_a = inner;
        }} else {{
            let i = o % d;
            o = o / d;
            sb = sb + i * view_axis(params.at + j).stride_lo;
            db = db + i * inner;
        }}
        inner = inner * d;
    }}
"""


_LAST = "    let last = params.rank - 1u;\n    let a = params.a;\n"


def _group() -> str:
    return """    let g = wg.y * params.groups_x + wg.x;
    if (g >= params.groups) {
        return;  // the same for the whole workgroup: a barrier after it stays uniform
    }
"""


@dataclass(frozen=True)
class Gather(View):
    """The generic strided gather (``Words`` schedule, variant ``gather``)."""

    schedule: Words = Words("gather")
    PARAMS = GATHER
    label = "strided gather"

    def parts(self) -> list[str]:
        return [*self.view(), _CURSOR, shader_source("lib/bswap.wgsl")]

    def main(self) -> str:
        return head() + _GATHER


@dataclass(frozen=True)
class Tiled(View):
    """The tiled transpose (``Tiles``)."""

    schedule: Tiles = Tiles()
    PARAMS = TILED
    label = "strided transpose tiled"

    def parts(self) -> list[str]:
        s = self.schedule
        return [*self.view(), f"var<workgroup> tile: array<u32, {s.tile * s.pitch}>;  // TILE * PITCH\n",
                shader_source("lib/bswap.wgsl")]

    def main(self) -> str:
        return _group() + """    let lg = params.lg;
""" + _LAST + """    let tl = g % params.tiles_l;
    let rest = g / params.tiles_l;
    let ta = rest % params.tiles_a;
    var o = rest / params.tiles_a;
""" + _outer("0u") + _TILED


@dataclass(frozen=True)
class Blocked(View):
    """The blocked transpose (``Elements``, 64 invocations)."""

    schedule: Elements = Elements(64)
    PARAMS = BLOCKED
    label = "strided transpose blocked"
    WORD = "vec4<u32>"

    def parts(self) -> list[str]:
        return [*self.view(), BSWAP4]

    def main(self) -> str:
        return _group() + """    let span = g % params.spans_a;
    let rest = g / params.spans_a;
    let lb = rest % params.blocks_l;
    var o = rest / params.blocks_l;
    let ab = span * WG + lid;
    if (ab >= params.blocks_a) {
        return;
    }
""" + _LAST + _outer("params.first_word") + _BLOCKED


KERNELS = {"generic": Gather(), "tiled": Tiled(), "blocked": Blocked()}

_CURSOR = """fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

// x * s mod 2^64, with x a u32 and s 64-bit: the full product of the low
// words from 16-bit halves, plus the high word's product (its own high bits
// fall off the top).
fn mul64(x: u32, s: vec2<u32>) -> vec2<u32> {
    let a0 = x & 0xffffu;
    let a1 = x >> 16u;
    let b0 = s.x & 0xffffu;
    let b1 = s.x >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    let lo = (p00 & 0xffffu) | (mid << 16u);
    let hi = a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
    return vec2<u32>(lo, hi + x * s.y);
}

// A box element, its source offset in the window and its index along the
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
        s = add64(s, mul64(rest % d, stride64(params.at + k - 1u)));
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
        let lo = (1u << lg) - 1u;
        // big-endian: the unit's words in reverse (swap / 4 is 1 or 2 words)
        let flip = select(0u, params.swap / 4u - 1u, params.swap >= 4u);
        var c = cursor_at(((params.first_word + w0) >> lg) - params.e0);
        for (var k = 0u; k < WORDS; k = k + 1u) {
            if (w0 + k >= params.words) {
                break;
            }
            let w = params.first_word + w0 + k;
            if ((w >> lg) - params.e0 != c.l) {
                c = cursor_next(c, r);
            }
            if (!in_window(c.s)) {
                continue;
            }
            let piece = src[(c.s.x << lg) + ((w & lo) ^ flip)];
            dst[w] = select(piece, bswap32(piece), params.swap >= 4u);
        }
        return;
    }
    // 2- to 16-bit elements: each word is assembled from 32 / bits elements.
    let per = 32u / bits;
    let lg = 5u - countTrailingZeros(bits);  // log2 of elements per word
    let mask = (1u << bits) - 1u;
    let end = params.e0 + params.count;
    // the first box element among this invocation's words
    var c = cursor_at(max((params.first_word + w0) << lg, params.e0) - params.e0);
    // Neighbouring elements often share a source word (unit strides, slices
    // of small steps): load each word once while they do.
    var loaded = 0xffffffffu;
    var source = 0u;
    for (var k = 0u; k < WORDS; k = k + 1u) {
        if (w0 + k >= params.words) {
            break;
        }
        let w = params.first_word + w0 + k;
        var word = 0u;
        if (params.keep != 0u || (w << lg) < params.e0 || ((w + 1u) << lg) > end) {
            word = dst[w];
        }
        for (var j = 0u; j < per; j = j + 1u) {
            let e = (w << lg) + j;
            let shift = j * bits;
            if (e >= params.band) {
                word = word & ~(mask << shift);
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
                var x = (source >> ((c.s.x & (per - 1u)) * bits)) & mask;
                if (params.swap == 2u) {
                    x = ((x & 0xffu) << 8u) | (x >> 8u);
                }
                word = (word & ~(mask << shift)) | (x << shift);
            }
        }
        dst[w] = word;
    }
"""

_TILED = """    let da = dim(a);
    let dl = dim(last);
    let sa = view_axis(params.at + a).stride_lo;     // 1 or 0xffffffff (-1)
    let sl = view_axis(params.at + last).stride_lo;
    let per_a = TILE >> lg;             // elements along a per tile
    let a0 = ta * per_a;
    let l0 = tl * TILE;
    let wmask = (1u << lg) - 1u;
    let flip = select(0u, params.swap / 4u - 1u, params.swap >= 4u);

    // Read: row r of the tile is l = l0 + r; its words are elements a0.. along a.
    let x = lid % TILE;
    let y = lid / TILE;  // constant divisors: shifts
    let ia = a0 + (x >> lg);
    let q = x & wmask;
    let swapped = params.swap >= 4u;
    // Trip counts the same in every invocation: Mesa's CPU drivers run 8
    // invocations in one SIMD register, and a loop whose count differs per
    // lane runs as a masked loop.
    for (var k = 0u; k < TILE / ROWS; k = k + 1u) {
        let r = y + k * ROWS;
        let il = l0 + r;
        if (ia < da && il < dl) {
            let s = sb + ia * sa + il * sl;
            let piece = src[(s << lg) + (q ^ flip)];
            tile[r * PITCH + x] = select(piece, bswap32(piece), swapped);
        }
    }
    workgroupBarrier();
    // Write: for each a, the tile's TILE elements along l are consecutive
    // output words; consecutive invocations write consecutive words.
    let row_shift = 5u + lg;  // log2 of the output words per a within the tile (TILE << lg)
    let row_mask = (1u << row_shift) - 1u;
    for (var k = 0u; k < TILE * TILE / WG; k = k + 1u) {
        let t = lid + k * WG;
        let al = t >> row_shift;  // no division: u32 division is a loop over the lanes on a CPU
        let within = t & row_mask;
        let ll = within >> lg;
        let qq = within & wmask;
        let ja = a0 + al;
        let jl = l0 + ll;
        if (ja < da && jl < dl) {
            let e = db + ja * inner_a + jl;
            dst[params.first_word + (e << lg) + qq] = tile[ll * PITCH + (al << lg) + qq];
        }
    }
"""

_BLOCKED = """    let sl4 = view_axis(params.at + last).stride_lo >> 2u;  // the l stride in words
    let s = (sb >> 2u) + ab + 4u * lb * sl4;
    var r0 = src[s];
    var r1 = src[s + sl4];
    var r2 = src[s + 2u * sl4];
    var r3 = src[s + 3u * sl4];
    if (params.swap == 4u) {
        r0 = bswap(r0);
        r1 = bswap(r1);
        r2 = bswap(r2);
        r3 = bswap(r3);
    }
    let ia4 = inner_a >> 2u;  // output words per step along a
    let d = (db >> 2u) + 4u * ab * ia4 + lb;
    let rows = dim(a) - 4u * ab;  // 4 except in a last, partial block
    dst[d] = vec4<u32>(r0.x, r1.x, r2.x, r3.x);
""" + "".join(f"""    if (rows > {k}u) {{
        dst[d + {f"{k}u * " if k > 1 else ""}ia4] = vec4<u32>(r0.{c}, r1.{c}, r2.{c}, r3.{c});
    }}
""" for k, c in ((1, "y"), (2, "z"), (3, "w")))
