"""ReverseSequence by whole-word blocks (gpu/indexed_variants.py plans it),
on the whole-word schedule's head: the data is (d0, d1, inner...), batch
and time the first two axes, row-major, each (d0, d1) step a block of
``width`` words. An invocation copies WORDS consecutive words, reading and
checking its batch entry's length once per entry it meets and stepping the
block coordinates by adds (the element kernel, the indexed gather's (gpu/render/indexed.py)
``reverse``, divides and walks its table per element). A length outside
[0, bound] (all 64 bits) keeps the smallest bad entry in status[0] and
reads 0; the host then reads nothing back.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..layout import Struct
from .frame import Binding, Frame
from .indices import checked_index
from .schedule import Words, head

# words: output words; width: words per block; d0, d1: the first two axes' sizes; time0: 1 when the time axis is
# axis 0 (batch axis 1), 0 the reverse; iswap: 1 for big-endian lengths; bound: the largest allowed length
PARAMS = Struct("Params", tuple((n, "u32") for n in ("words", "groups_x", "width", "d0", "d1", "time0", "iswap",
                                                     "bound")))

_MAIN = head() + """    let width = params.width;
    let d1 = params.d1;
    let time0 = params.time0 != 0u;
    let tstride = select(1u, d1, time0);  // blocks per time step
    var p = w0 / width;  // the block
    var k = w0 - p * width;  // the word in it
    var c0 = p / d1;
    var c1 = p - c0 * d1;
    var b = select(c0, c1, time0);
    var len = index(b, params.bound);  // 0 <= len <= bound, all 64 bits
    let end = min(w0 + WORDS, params.words);
    for (var q = w0; q < end; q = q + 1u) {
        if (k == width) {
            k = 0u;
            p = p + 1u;
            c1 = c1 + 1u;
            if (c1 == d1) {
                c1 = 0u;
                c0 = c0 + 1u;
            }
            let nb = select(c0, c1, time0);
            if (nb != b) {
                b = nb;
                len = index(b, params.bound);
            }
        }
        let t = select(c1, c0, time0);
        var sp = p;
        if (t < len) {
            sp = p + (len - 1u - 2u * t) * tstride;  // u32 wrap: the sum is the mirrored block
        }
        dst[q] = src[sp * width + k];
        k = k + 1u;
    }
"""


@dataclass(frozen=True)
class Reverse(Frame):
    """ReverseSequence's block kernel over ``schedule``."""

    schedule: Words = Words("runs")
    PARAMS = PARAMS
    LABEL = "reverse-sequence runs[wg={s.wg},words={s.words}]"
    bindings = (Binding(0, "src", "read", "u32"), Binding(1, "dst", "read_write", "u32"), Binding(2),
                Binding(3, "raw", "read", "vec2<u32>"), Binding(4, "status", "read_write", "atomic<u32>"))

    def parts(self) -> list[str]:
        return checked_index("1u")  # batch entry b's length, as the index check reads an int64 index

    def main(self) -> str:
        return _MAIN


REVERSE = Reverse()
