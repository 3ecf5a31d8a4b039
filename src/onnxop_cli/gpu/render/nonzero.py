"""NonZero's kernel (gpu/nonzero.py says what its two passes do): an element an invocation, counted
(pass 0) or ranked by a scan in workgroup memory and its coordinates written (pass 1)."""

from __future__ import annotations

from ..layout import Struct
from .frame import Binding, Frame
from .indices import AXIS, table_row, walk  # AXIS's stride: the storage's, in elements
from .schedule import Elements

PARAMS = Struct("Params", tuple((n, "u32") for n in (
    "count",       # elements
    "groups_x",    # workgroups per row of the dispatch grid
    "rank",
    "pass_",       # 0: count, 1: write
    "width",       # bytes of an element below a word (1, 2); 0: whole words
    "words",       # words of an element of whole words
    "part_words",  # words of a float part (words for a non-float)
    "sign_word",   # the word of a part that holds its sign bit
    "sign",        # what of that word (or of a sub-word element) counts
    "total",       # non-zero elements in all (pass 1)
    "_pad0", "_pad1")))

_PARTS = """var<workgroup> scan: array<u32, WG>;

fn nonzero(e: u32) -> u32 {
    let off = at(e).off;
    if (params.width != 0u) {
        let byte = off * params.width;
        let bits = (data[byte / 4u] >> ((byte % 4u) * 8u)) & ((1u << (params.width * 8u)) - 1u);
        return select(0u, 1u, (bits & params.sign) != 0u);
    }
    var any = 0u;
    for (var j = 0u; j < params.words; j = j + 1u) {
        var w = data[off * params.words + j];
        if (j % params.part_words == params.sign_word) {
            w = w & params.sign;
        }
        any = any | w;
    }
    return select(0u, 1u, any != 0u);
}
"""

_MAIN = """    let group = wg.y * params.groups_x + wg.x;
    if (group * WG >= params.count) {
        return;  // past the last group (the grid is a rectangle); uniform in the workgroup
    }
    let e = group * WG + lid;
    var flag = 0u;
    if (e < params.count) {
        flag = nonzero(e);
    }
    scan[lid] = flag;
    // inclusive scan of the flags (Hillis-Steele), every invocation taking part
    for (var step = 1u; step < WG; step = step * 2u) {
        workgroupBarrier();
        var add = 0u;
        if (lid >= step) {
            add = scan[lid - step];
        }
        workgroupBarrier();
        scan[lid] = scan[lid] + add;
    }
    workgroupBarrier();
    if (params.pass_ == 0u) {
        if (lid == WG - 1u) {
            counts[group] = scan[lid];
        }
        return;
    }
    if (flag == 0u) {
        return;
    }
    let i = counts[group] + scan[lid] - 1u;
    var rest = e;
    for (var k = params.rank; k > 0u; k = k - 1u) {
        let size = axis(k - 1u).dim;
        let o = 2u * ((k - 1u) * params.total + i);
        out[o] = rest % size;
        out[o + 1u] = 0u;
        rest = rest / size;
    }
"""


class NonZero(Frame):
    """The kernel of both passes, 256 invocations a workgroup: an element each, a count or a rank each group."""

    schedule = Elements(256)
    PARAMS = PARAMS
    bindings = (Binding(0, "data", "read", "u32"), Binding(1, "counts", "read_write", "u32"),
                Binding(2, "out", "read_write", "u32"), Binding(3), Binding(4, "axes", "read", "vec4<u32>"))
    LABEL = "nonzero"

    def parts(self) -> list[str]:
        return [table_row("axis", AXIS), walk("e", "params.rank", ("off", "last"), "stride"), _PARTS]

    def main(self) -> str:
        return _MAIN


KERNEL = NonZero()
