"""Gathers of whole slices (GatherND, Gather), rendered: output slice p is ``width`` units copied from the
data from the word

    sum_k o_k * dstride_k  +  sum_t index(ip + ioff_t) * lstride_t

(o: slice p's multi-index over the ``outer`` leading output axes, an Axis of gpu/index_table.py each,
strides in words; ip = sum_k o_k * istride_k its tuple's position; lookup t a Lookup at axes[outer + t]).
``plan`` takes this only where every slice and stride is whole words; the walk (``row``, ``next``,
``base``) reads a tuple once per slice, never per element. Variants:

``words``: u32 words, WORDS an invocation, one band of one window.
``whole``: 16-byte vectors (``Slices.vec4``), VECS an invocation, one band of one buffer: a quarter of the
    loads, stores and bounds tests per byte. Strides stay in words; ``words`` and ``width`` count vectors.
``windowed``: vectors of any band (``first``: its first), ``chunk`` an invocation, from the window
    [win0, wend) of the source (gpu/indexed_buffers.py; windows start on whole vectors): a slab's part
    outside is one test, inside copied straight, across an edge vector by vector. ``normed`` 1: the index
    check (gpu/render/indexed.py) checked them before, ``raw`` its u32 offsets seen as pairs.

Raw int64 indices are checked as read (indices.py's checked_index, all 64 bits): a bad one keeps the
smallest position in status[0] and reads 0; every slice has a unit, so every index is read, and the host
reads nothing back then.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..index_table import TABLE_AXIS, TABLE_LOOKUP, Table
from ..layout import Struct
from .frame import Binding, Frame, first
from .indices import SLICE_FIELDS, SLICE_PARAMS, checked_index, row, slice_copy, table, walk
from .schedule import Units

VECS_PARAMS = Struct("Params", (*SLICE_FIELDS, *((n, "u32") for n in (
    "normed",  # 1: `raw` holds the index check's (gpu/render/indexed.py) checked u32 offsets
    "first",   # the band's first output vector
    "win0",    # windowed: the window's first source vector
    "wend",    # windowed: one past its last
    "chunk",   # windowed: vectors per invocation
))))
VARIANTS = ("words", "whole", "windowed")
CHUNK = 64  # windowed: vectors an invocation (Mesa 22.3's; 16 and 4 won on neither Mesa: performance-adapters.md)
SCHEDULES = {"words": Units("WORDS", 16), "vec4": Units("VECS", 4, "vec4<u32>")}  # what an invocation copies


@dataclass(frozen=True)
class SliceGather(Frame):
    """The whole-slice gather's ``variant`` (one of VARIANTS)."""

    variant: str

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"no whole-slice gather {self.variant!r}")

    @property
    def schedule(self) -> Units:  # type: ignore[override]
        return SCHEDULES["words" if self.variant == "words" else "vec4"]

    @property
    def PARAMS(self) -> Struct:  # type: ignore[override]  # noqa: N802 - the frame's name
        return SLICE_PARAMS if self.variant == "words" else VECS_PARAMS

    @property
    def label(self) -> str:
        return f"slice gather {self.variant}[wg={self.schedule.wg},{self.schedule.name.lower()}={self.schedule.per}]"

    @property
    def bindings(self) -> tuple[Binding, ...]:  # type: ignore[override]
        word = self.schedule.word
        return (Binding(0, "src", "read", word), Binding(1, "dst", "read_write", word), Binding(2),
                Binding(3, "axes", "read", "vec4<u32>"), Binding(4, "raw", "read", "vec2<u32>"),
                Binding(5, "status", "read_write", "atomic<u32>"))

    def parts(self) -> list[str]:
        parts = [*checked_index(), *table(), walk("p", "params.outer", ("off", "ip", "last")), _WALK,
                 _base("base", "index", look1=True)]
        return parts + [_OFFSET, _base("base_of", "offset", look1=False)] if self.variant == "windowed" else parts

    def main(self) -> str:
        if self.variant == "windowed":
            return _WINDOWED
        s, vec = self.schedule, self.variant != "words"
        return slice_copy(s.name, "base(a, w)" + (" / 4u" if vec else ""), "dst[q] = src[b + k]", walk=True)


def _base(name: str, read: str, look1: bool) -> str:
    """The data word where the slice at `a` starts, its tuple read by ``read`` (``index``: read and checked);
    ``look1``: lookup 1 from the Row (``base``, the one the walk runs), else from the table (``base_of``)."""
    def rest(t0: int, pad: str) -> str:
        return (f"{pad}for (var t = {t0}u; t < params.nlook; t = t + 1u) {{\n"
                f"{pad}    let lk = lookup(params.outer + t);\n"
                f"{pad}    off = off + {read}(a.ip + lk.ioff, lk.bound) * lk.stride;\n{pad}}}\n")

    body = rest(1, "    ") if not look1 else (
        f"    if (params.nlook > 1u) {{\n"
        f"        off = off + {read}(a.ip + w.look1.ioff, w.look1.bound) * w.look1.stride;\n"
        f"{rest(2, '        ')}    }}\n")
    return (f"fn {name}(a: At, w: Row) -> u32 {{\n    var off = a.off + {read}(a.ip + w.look0.ioff, w.look0.bound)"
            f" * w.look0.stride;\n{body}    return off;\n}}\n")


_WALK = row(pair=False) + """
// The next slice: one add along the last leading axis until it ends.
fn next(a: At, w: Row, p: u32) -> At {
    if (a.last + 1u < w.dim) {
        return At(a.off + w.dstride, a.ip + w.istride, a.last + 1u);
    }
    return at(p);
}
"""

_OFFSET = """// `index`, or (normed) the index check's (gpu/render/indexed.py) checked offset at `pos`.
fn offset(pos: u32, d: u32) -> u32 {
    if (params.normed != 0u) {
        let n = raw[pos >> 1u];
        return select(n.x, n.y, (pos & 1u) != 0u);
    }
    return index(pos, d);
}
"""

_WINDOWED = "    let chunk = params.chunk;\n" + first("q0", "chunk", "words") + """    let width = params.width;
    let w = row();
    let g0 = params.first + q0;
    var p = g0 / width;
    var k = g0 - p * width;
    var a = at(p);
    let end = min(q0 + chunk, params.words);
    let span = params.wend - params.win0;
    var q = q0;
    loop {
        if (q >= end) {
            break;
        }
        let n = min(width - k, end - q);  // this slab's vectors in this invocation
        let s = base_of(a, w) / 4u + k;
        if (s >= params.win0 && s + n <= params.wend) {
            let r = s - params.win0;
            for (var j = 0u; j < n; j = j + 1u) {
                dst[q + j] = src[r + j];
            }
        } else if (s < params.wend && s + n > params.win0) {  // across an edge of the window
            for (var j = 0u; j < n; j = j + 1u) {
                let r = s + j - params.win0;  // below the window wraps past span
                if (r < span) {
                    dst[q + j] = src[r];
                }
            }
        }
        q = q + n;
        k = 0u;
        p = p + 1u;
        a = next(a, w, p);
    }
"""

KERNELS = {v: SliceGather(v) for v in VARIANTS}


# The plan, for ScatterND's whole slices too (render/scatter_slices.py): the slice is the trailing output axes
# that read no index and are contiguous in the data; it and every other stride must be whole 32-bit words.

M = 0xFFFFFFFF  # strides as two's complement u32 words


@dataclass(frozen=True)
class Slices:
    width: int  # words per slice
    outer: int  # leading output axes
    blob: bytes  # the kernel's axes buffer
    strides: tuple[int, ...] = ()  # every data stride of the table (leading axes', lookups'), in words

    def vec4(self) -> bool:
        """Whether every slice and stride is whole 16-byte vectors, which the vec4 variants move (a quarter
        of the word copy's loads, stores and bounds tests: by construction, not a measured speed)."""
        return all(w % 4 == 0 for w in (self.width, *self.strides))

    @property
    def fields(self) -> dict[str, int]:
        """What a slice kernel's Params say of the plan (render/scatter_slices.py's, as these kernels')."""
        return {"width": self.width, "outer": self.outer, "nlook": len(self.blob) // 16 - self.outer}


def plan(table: Table, bits: int, bounds: tuple[int, ...]) -> Slices | None:
    """The slice plan of ``table`` for elements of ``bits``, or None. Only tables that ask for it
    (``extra["slices"]``: GatherND's and ScatterND's) take it."""
    if table.mode != 0 or not table.lookups or table.size == 0 or not table.extra.get("slices") or table.separable:
        return None
    rank = len(table.shape)
    k, run = rank, 1  # the slice: trailing axes with no index, contiguous in the data
    while k > 0 and table.index.strides[k - 1] == 0 and (table.shape[k - 1] == 1 or table.data.strides[k - 1] == run):
        run *= table.shape[k - 1]
        k -= 1
    slice_bits = math.prod(table.shape[k:]) * bits
    if slice_bits % 32:
        return None
    strides = [s for d, s in zip(table.shape[:k], table.data.strides[:k]) if d > 1] + [lk.stride for lk in table.lookups]
    if any((s * bits) % 32 for s in strides):
        return None
    axes = [{"dim": d, "dstride": ((s * bits) // 32) & M, "istride": i & M, "look": 0}
            for d, s, i in zip(table.shape[:k], table.data.strides[:k], table.index.strides[:k])]
    elems = math.prod(table.shape[k:])  # claim: a lookup's stride in slices (ScatterND's claims)
    looks = [{"stride": ((lk.stride * bits) // 32) & M, "ioff": lk.at, "bound": bounds[t % len(bounds)],
              "claim": (lk.stride // elems) & M} for t, lk in enumerate(table.lookups)]
    blob = TABLE_AXIS.layout.pack_rows(axes) + TABLE_LOOKUP.layout.pack_rows(looks)
    words = tuple(r["dstride"] for r in axes) + tuple(r["stride"] for r in looks)
    return Slices(slice_bits // 32, k, blob, words)
