"""The view every strided kernel reads (gpu/render/strided.py, transpose.py):
one layout (src, dst, Params at a dynamic offset, axes) and the axes table,
per output axis its extent and the source's stride, 64-bit two's complement,
one vec4 record (``AXIS``, read by ``view_axis``)."""

from __future__ import annotations

from typing import ClassVar

from ..layout import Struct
from .frame import Binding, Frame
from .indices import table_row

# (src, dst, Params, axes): one layout for them all (gpu/gather.py binds Params at a dynamic offset)
KINDS = ("read-only-storage", "storage", "uniform+offset", "read-only-storage")
AXIS = Struct("Axis", (("dim", "u32"), ("stride_lo", "u32"), ("stride_hi", "u32"), ("pad0", "u32")))
BOX = (  # the box every kernel writes: fields of each Params
    ("rank", "u32"),   # entries of `axes`
    ("axis0", "u32"),  # the box's first axis; axes before it are fixed
    ("dim0", "u32"),   # the box's extent along axis0
)
PADS = (("pad0", "u32"), ("pad1", "u32"), ("pad2", "u32"))

_VIEW = """// The stride of axes[i] as (low, high) words.
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
        return [table_row("view_axis", AXIS), _VIEW]
