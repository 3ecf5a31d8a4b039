"""The transposes of the strided gather (gpu/render/strided.py says what the
three share; gpu/tiled.py sends them boxes).

``Tiled`` (``Tiles``): a box whose innermost output axis ``l`` has a large
source stride, read along the axis ``a`` of stride +-1 into a tile in
workgroup memory and written along ``l`` after a barrier: both sides
contiguous, as a GPU wants. Rows PITCH = TILE + 1 apart (no bank conflicts).

``Blocked`` (``Elements``, CPU adapters: a storage access is a loop over
the SIMD lanes there and workgroup memory ordinary memory): 4 x 4 blocks of
32-bit elements loaded as four vec4 rows along ``a``, transposed in
registers, stored as four vec4 along ``l``: one access per 4 elements, WG
blocks along ``a`` a workgroup. The host sends it only boxes whose offsets
are whole vec4 words.

Both take the whole box from the bound source (u32 offsets, a negative
stride wraps) and decompose the outer index (the box axes other than a and
l) once per workgroup (``_outer``): u32 division is a loop over the lanes
on a CPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..layout import Struct
from ..shaders import shader_source
from .schedule import Elements
from .view import BOX, BSWAP4, PADS, View

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

    def __post_init__(self) -> None:  # the body shifts by log2(TILE) = 5 and loops TILE * TILE / WG times
        if self.tile != 32 or self.wg % self.tile or (self.tile * self.tile) % self.wg:
            raise ValueError(f"no tile schedule {self}")

    @property
    def rows(self) -> int:
        return self.wg // self.tile

    @property
    def pitch(self) -> int:
        return self.tile + 1


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


_GROUP = """    let g = wg.y * params.groups_x + wg.x;
    if (g >= params.groups) {
        return;  // the same for the whole workgroup: a barrier after it stays uniform
    }
"""


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
        return _GROUP + """    let lg = params.lg;
""" + _LAST + """    let tl = g % params.tiles_l;
    let rest = g / params.tiles_l;
    let ta = rest % params.tiles_a;
    var o = rest / params.tiles_a;
""" + _outer("0u") + _TILED


@dataclass(frozen=True)
class Blocked(View):
    """The blocked transpose (``Elements``: WG invocations a workgroup, a block each along a; its default the
    first of choose.py's ``transpose`` candidates, gpu/render/strided.py names the others)."""

    schedule: Elements = Elements(64)
    PARAMS = BLOCKED
    WORD = "vec4<u32>"

    @property
    def label(self) -> str:  # type: ignore[override]
        return f"strided transpose blocked[wg={self.schedule.wg}]"

    def parts(self) -> list[str]:
        return [*self.view(), BSWAP4]

    def main(self) -> str:
        return _GROUP + """    let span = g % params.spans_a;
    let rest = g / params.spans_a;
    let lb = rest % params.blocks_l;
    var o = rest / params.blocks_l;
    let ab = span * WG + lid;
    if (ab >= params.blocks_a) {
        return;
    }
""" + _LAST + _outer("params.first_word") + _BLOCKED


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
