"""The blocked transpose of the strided gather (gpu/render/strided.py says
what the view's kernels share), and which of a gather's dispatches it takes.

The generic gather writes the output in order and reads wherever the index
map points. When the innermost output axis ``l`` has a large source stride
(a transpose that moves the innermost axis: 2-D ``1,0``, 3-D ``2,1,0`` and
``0,2,1``, Fortran order), each read is on a new cache line. ``Blocked``
(``Elements``, meant for CPU adapters: a storage access is a loop over the
SIMD lanes there) reads along the box axis ``a`` of source stride 1 and
writes along ``l``, both in order: 4 x 4 blocks of 32-bit elements loaded as
four vec4 rows along ``a``, transposed in registers, stored as four vec4
along ``l``, one access per 4 elements, WG blocks along ``a`` a workgroup.
It takes the whole box from the bound source (u32 offsets) and decomposes
the outer index (the box axes other than a and l) once per workgroup: u32
division is a loop over the lanes on a CPU.

It takes a dispatch by the box's strides alone (``Blocked.fields``):
32-bit elements, any byte swap by whole elements, the upload holding every
element it reads (``keep`` false, so offsets fit a u32), every offset on a
16-byte word, and an innermost axis read at least a cache line apart
(``MIN_STRIDE_BYTES``: below it the generic gather's reads already share
lines, no kernel can gain there) while another box axis has source stride
1. Everything else (slices, broadcasts, Tile, DepthToSpace with small
blocks) stays with the generic gather. Whether it runs on an adapter at all
is choose.py's ``transpose`` question (gather.variants asks it;
docs/performance-adapters.md has the figures).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..layout import Struct
from ..program import grid_x
from ..tiling import Dispatch
from .schedule import Elements
from .view import BOX, BSWAP4, PADS, View

MIN_STRIDE_BYTES = 64  # a cache line: below it the gather's reads already share lines

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
    LABEL = "strided transpose blocked[wg={s.wg}]"

    def parts(self) -> list[str]:
        return [*self.view(), BSWAP4]

    def fields(self, d: Dispatch, shape: tuple[int, ...], bits: int, swap: int) -> dict[str, int] | None:
        """The Params fields for dispatch ``d`` of a view of ``shape``, or None where the generic gather
        should write it (see the module's docstring)."""
        axes = range(d.box.axis, len(shape))
        if bits != 32 or swap not in (0, 4) or d.keep or len(axes) < 2 or d.box.e0 % 4 or d.base % 4:
            return None
        dims = {k: d.box.extent if k == d.box.axis else shape[k] for k in axes}
        strides, last = dict(zip(axes, d.strides)), axes[-1]
        if dims[last] % 4 or abs(strides[last]) * 4 < MIN_STRIDE_BYTES:
            return None
        units = [k for k in dims if k != last and strides[k] == 1 and dims[k] > 1]
        if not units:
            return None
        a = max(units, key=lambda k: (dims[k] % 4 == 0, dims[k]))  # a partial last block costs a little
        if any(strides[k] % 4 for k in dims if k != a and dims[k] > 1) or strides[last] < 0:
            return None
        blocks_a, blocks_l = -(-dims[a] // 4), dims[last] // 4
        spans_a = -(-blocks_a // self.schedule.wg)
        groups = d.box.count // (dims[a] * dims[last]) * blocks_l * spans_a
        return None if groups >= 1 << 32 else dict(groups=groups, first_word=d.box.e0, a=a, blocks_a=blocks_a,
                                                   blocks_l=blocks_l, spans_a=spans_a, swap=swap)

    def record(self, d: Dispatch, shape: tuple[int, ...], bits: int, swap: int, rank: int, at: int,
               max_dim: int) -> tuple[bytes, int] | None:
        """(the 64-byte Params record, workgroups) if this kernel takes dispatch ``d``, else None."""
        fields = self.fields(d, shape, bits, swap)
        if fields is None:
            return None
        groups = fields["groups"]
        return self.PARAMS.pack(groups_x=grid_x(groups, max_dim), rank=rank, axis0=d.box.axis, dim0=d.box.extent,
                                at=at, base=d.base & 0xFFFFFFFF, **fields), groups

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
""" + "".join(f"    var r{k} = src[s + {k}u * sl4];\n" for k in range(4)) + """    if (params.swap == 4u) {
""" + "".join(f"        r{k} = bswap(r{k});\n" for k in range(4)) + """    }
    let ia4 = inner_a >> 2u;  // output words per step along a
    let d = (db >> 2u) + 4u * ab * ia4 + lb;
    let rows = dim(a) - 4u * ab;  // 4 except in a last, partial block
    dst[d] = vec4<u32>(r0.x, r1.x, r2.x, r3.x);
""" + "".join(f"""    if (rows > {k}u) {{
        dst[d + {f"{k}u * " if k > 1 else ""}ia4] = vec4<u32>(r0.{c}, r1.{c}, r2.{c}, r3.{c});
    }}
""" for k, c in ((1, "y"), (2, "z"), (3, "w")))
