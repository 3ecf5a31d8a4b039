"""The blocked transpose of the strided gather (gpu/render/strided.py says
what the view's kernels share; gpu/tiled.py sends it boxes).

``Blocked`` (``Elements``, meant for CPU adapters: a storage access is a
loop over the SIMD lanes there): 4 x 4 blocks of 32-bit elements loaded as
four vec4 rows along ``a`` (the box axis of source stride 1), transposed in
registers, stored as four vec4 along ``l`` (the innermost output axis): one
access per 4 elements, WG blocks along ``a`` a workgroup. The host sends it
only boxes whose offsets are whole vec4 words. It takes the whole box from
the bound source (u32 offsets) and decomposes the outer index (the box axes
other than a and l) once per workgroup: u32 division is a loop over the
lanes on a CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..layout import Struct
from .schedule import Elements
from .view import BOX, BSWAP4, PADS, View

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
        return """    let g = wg.y * params.groups_x + wg.x;
    if (g >= params.groups) {
        return;  // the same for the whole workgroup: a barrier after it stays uniform
    }
    let span = g % params.spans_a;
    let rest = g / params.spans_a;
    let lb = rest % params.blocks_l;
    var o = rest / params.blocks_l;
    let ab = span * WG + lid;
    if (ab >= params.blocks_a) {
        return;
    }
    let last = params.rank - 1u;
    let a = params.a;
    var sb = params.base;
    var db = params.first_word;
    var inner = dim(last);  // output elements per step of axis j
    var inner_a = 0u;
    for (var k = last; k > params.axis0; k = k - 1u) {
        let j = k - 1u;
        let d = dim(j);
        if (j == a) {
            inner_a = inner;
        } else {
            let i = o % d;
            o = o / d;
            sb = sb + i * view_axis(params.at + j).stride_lo;
            db = db + i * inner;
        }
        inner = inner * d;
    }
""" + _BLOCKED


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
