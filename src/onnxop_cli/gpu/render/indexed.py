"""The indexed gather and the index check, rendered through the one frame (hand-written inside it: the
element schedule, render/elementwise.py, reads no index and keeps no status).

``Gather``: dst[e] = src[offset(e)], the offset read partly from an index tensor: Gather, GatherElements,
GatherND, ReverseSequence, Resize (nearest) and the copy that starts every scatter are tables for this one
kernel (gpu/index_table.py's rows). Output element e has multi-index o (row-major over the table's axes);
its source element is

    sum_k o_k * dstride_k  +  sum_t norm[ip + ioff_t] * stride_t,   ip = sum_k o_k * istride_k

``norm`` the indices as ``Check`` wrote them (u32 offsets along their axis). Case ``axes`` (separable
lookups, Resize's per-axis tables): the lookup along axis k (its row named by the Axis row's ``look``) reads
norm[ioff + o_k] in place of norm[ip + ioff]; those of the leading axes are added to the offset once a row
(in ``at``), the last axis' one per element. Modes: 1 (ReverseSequence)
L = norm[ip] is the batch's length, time t < L reads L - 1 - t; 2 (TensorScatter, circular) t reads
(norm[ip] + t) % modulus. ``offsets`` 1 writes each element's source offset (the scatters' targets).
Offsets wrap modulo 2^32 and end within the source, so u32 arithmetic is exact. A source larger than a
binding is bound a window at a time (``win0``, ``wcount``; ``rmw``: a band's later windows keep the other
elements of their 2- to 16-bit words). WORDS whole words an invocation (2-16 bit elements packed low bits
first); ``swap``: a big-endian source's byte-swap unit. One render per ``CASES`` x ``INDEX``, constants
the driver folds (Mesa's CPU drivers run every branch a lane could take); the ``i32``/``i64`` variants
read and check the raw indices themselves.

``Check``: int32 or int64 indices checked against their axis (all 64 bits: 2^32 + 1 is out of range, never
index 1) and written as u32 offsets, negatives wrapped; index p of the chunk (at ``first``) checks against
bounds[((first + p) / inner) % period]. Either keeps the smallest bad position in status[0] (atomicMin);
modes: gpu/index_table.py's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..layout import Struct
from ..shaders import shader_source
from .frame import Binding, Frame, first
from .indices import in_range, index_fn, read_index, table, walk
from .piece_wgsl import SWAPPED
from .schedule import Elements, Words, head, loop

CASES = ("flat", "one", "lookups", "reverse", "circular", "axes")  # CASE: the table's case (FLAT .. AXES)
INDEX = ("norm", "i32", "i64")  # INDEX: indices as Check wrote them, or raw int32 / int64 checked here
RAW = ("one", "lookups", "reverse")  # the cases with raw readers (not flat, circular, axes: gpu/indexed.py _can_fuse)
VARIANTS = CASES + tuple(f"{c}_{i}" for c in RAW for i in INDEX[1:])
NO_BAD = 0xFFFFFFFF  # no bad index found (the status word's reset)

PARAMS = Struct("Params", tuple((name, "u32") for name in (
    "words", "groups_x", "e0", "band", "bits", "swap", "rank", "nlook", "mode", "rev_axis", "rev_stride",
    "modulus", "offsets", "win0", "wcount", "rmw", "iswap", "cmode", "bound", "pad0", "pad1", "pad2", "pad3",
    "pad4")))
CHECK_PARAMS = Struct("Params", tuple((name, "u32") for name in (
    "count", "wide", "groups_x", "period", "mode", "first", "swap", "inner")))


# (hi:lo, a signed 64-bit integer) mod d in 0 .. d-1, as Python's % (d > 0): its magnitude's remainder, a bit at a
# time from hi's remainder (2r + bit < 2d: one subtraction, exact in wrapping u32 even past 2^32), negated for a
# negative x. Check's MODULO mode: TensorScatter's circular write indices, any int64.
_MODULO = """fn modulo(lo: u32, hi: u32, d: u32) -> u32 {
    let neg = (hi >> 31u) != 0u;
    let mlo = select(lo, 0u - lo, neg);
    let mhi = select(hi, ~hi + select(0u, 1u, lo == 0u), neg);
    var r = mhi % d;
    for (var b = 32u; b > 0u; b = b - 1u) {
        let s = (r << 1u) | ((mlo >> (b - 1u)) & 1u);
        r = select(s, s - d, (r >> 31u) != 0u || s >= d);
    }
    return select(r, select(d - r, 0u, r == 0u), neg);
}
"""


@dataclass(frozen=True)
class Check(Frame):
    """The index check, one index an invocation."""

    schedule: Elements = Elements(wg=256)
    PARAMS = CHECK_PARAMS
    LABEL = "index check"
    bindings = (Binding(0, "raw", "read", "u32"), Binding(1, "norm", "read_write", "u32"),
                Binding(2, "status", "read_write", "atomic<u32>"), Binding(3), Binding(4, "bounds", "read", "u32"))

    def parts(self) -> list[str]:
        return [shader_source("lib/bswap.wgsl"), _MODULO]

    def main(self) -> str:
        return (first("p") + read_index("params.wide != 0u", "        lo = raw[2u * p];\n        hi = raw[2u * p + 1u];",
                 "        lo = raw[p];", "params.swap != 0u") + """    let at = params.first + p;
    let d = bounds[(at / params.inner) % params.period];
    if (params.mode == 3u) {  // MODULO: every index is valid
        norm[at] = modulo(lo, hi, d);
        return;
    }
""" + in_range("params.mode", "at", "return;") + "    norm[at] = v;\n")


@dataclass(frozen=True)
class Gather(Frame):
    """The indexed gather's variant ``schedule.variant``: a case of ``CASES``,
    ``_i32``/``_i64`` where it checks raw indices (``variant`` in gpu/indexed_variants.py)."""

    schedule: Words
    PARAMS = PARAMS
    LABEL = "indexed gather {s.variant}[wg={s.wg},words={s.words}]"
    bindings = (Binding(0, "src", "read", "u32"), Binding(1, "norm", "read", "u32"),
                Binding(2, "dst", "read_write", "u32"), Binding(3), Binding(4, "axes", "read", "vec4<u32>"),
                Binding(5, "raw", "read", "vec2<u32>"), Binding(6, "status", "read_write", "atomic<u32>"))

    def __post_init__(self) -> None:
        if self.schedule.variant not in VARIANTS:
            raise ValueError(f"no indexed gather variant {self.schedule.variant!r}")

    def parts(self) -> list[str]:
        case, _, index = self.schedule.variant.partition("_")
        consts = "".join(f"const {n.upper()}: u32 = {i}u;\n" for names in (INDEX, CASES) for i, n in enumerate(names))
        chosen = f"const CASE: u32 = {CASES.index(case)}u;\nconst INDEX: u32 = {INDEX.index(index or 'norm')}u;\n"
        return [consts + chosen, *table(), shader_source("lib/bswap.wgsl"), SWAPPED, _WALK, _INDEX, _SOURCE, _BODY]

    def main(self) -> str:
        return "    body(wg, lid, CASE, INDEX);\n"


def gather(variant: str) -> Gather:
    """The indexed gather's ``variant`` (a name of ``VARIANTS``) on its one schedule."""
    return Gather(Words(variant, wg=256, words=16))


# An output element's linear parts (source offset, index position, the last axis' and the time axis'
# coordinates), with the separable lookups of the leading axes (case AXES) in the offset; the last axis and
# the first two lookups (AXES: the last axis' one) loaded once per invocation (storage loads are what Mesa's
# CPU drivers are slowest at); `next` steps along the last axis with adds.
_ALONG = """        if (CASE == AXES && ax.look != 0u && k != params.rank) {
            let lk = lookup(params.rank + ax.look - 1u);
            a.off = a.off + index(lk.ioff + i, lk.bound, INDEX) * lk.stride;
        }
"""
_WALK = walk("e", "params.rank", ("e", "off", "ip", "last", "time"), each=_ALONG) + """
struct Row {
    dim: u32,
    timed: u32,
    dstride: u32,
    istride: u32,
    along: u32,  // AXES: the last axis has a separable lookup (`look`)
    look: Lookup,
    look1: Lookup,
}

fn row() -> Row {
    let r = params.rank;
    let nolook = Lookup(0u, 0u, 0u, 0u);
    var w = Row(0u, 0u, 0u, 0u, 0u, nolook, nolook);
    if (r > 0u) {
        let ax = axis(r - 1u);
        w = Row(ax.dim, select(0u, 1u, r - 1u == params.rev_axis), ax.dstride, ax.istride, 0u, nolook, nolook);
        if (CASE == AXES && ax.look != 0u) {
            w.along = 1u;
            w.look = lookup(r + ax.look - 1u);
        }
    }
    if (CASE != AXES && params.nlook > 0u) {
        w.look = lookup(r);
    }
    if (CASE != AXES && params.nlook > 1u) {
        w.look1 = lookup(r + 1u);
    }
    return w;
}

fn next(a: At, w: Row) -> At {
    if (a.last + 1u < w.dim) {
        return At(a.e + 1u, a.off + w.dstride, a.ip + w.istride, a.last + 1u, a.time + w.timed);
    }
    return at(a.e + 1u);
}
"""

# The index at `pos` as an offset along an axis of `d` elements: Check's, or (`check`) the raw one checked
# here, a bad one reading 0. The host checks this way only an output of one band whose every index is read.
_INDEX = index_fn("params.cmode", ", check: u32", "    if (check == NORM) {\n        return norm[pos];\n    }\n",
                  "check == I64", "        let x = raw[pos >> 1u];\n        lo = select(x.x, x.y, (pos & 1u) != 0u);")

_SOURCE = """fn source(a: At, w: Row, kind: u32, check: u32) -> u32 {
    var off = a.off;
    if (kind == ONE) {
        off = off + index(a.ip + w.look.ioff, w.look.bound, check) * w.look.stride;
    } else if (kind == LOOKUPS) {
        off = off + index(a.ip + w.look.ioff, w.look.bound, check) * w.look.stride
                  + index(a.ip + w.look1.ioff, w.look1.bound, check) * w.look1.stride;  // LOOKUPS has two or more
        for (var t = 2u; t < params.nlook; t = t + 1u) {
            let lk = lookup(params.rank + t);
            off = off + index(a.ip + lk.ioff, lk.bound, check) * lk.stride;
        }
    } else if (kind == REVERSE) {
        let len = index(a.ip, params.bound, check);
        if (a.time < len) {
            off = off + (len - 1u - 2u * a.time) * params.rev_stride;
        }
    } else if (kind == CIRCULAR) {
        let n = index(a.ip, params.bound, check);  // < modulus (Check's MODULO), as a.time is: one wrap at most
        let s = n + a.time;
        let t = select(s, s - params.modulus, s < n || s >= params.modulus);
        off = off + (t - a.time) * params.rev_stride;
    } else if (kind == AXES && w.along != 0u) {  // the leading axes' lookups are in a.off (at)
        off = off + index(w.look.ioff + a.last, w.look.bound, check) * w.look.stride;
    }
    return off;
}
"""

# Elements of 32 bits and more: along a last axis no index moves, the source moves by its stride alone (the
# index read once per run of the row), and in windows a run whose sources all lie outside this window writes
# nothing (another window's dispatch writes it). 2- to 16-bit elements: assembled 32 / bits to a word; a
# source below the window wraps past wcount.
_BODY = "fn body(wg: vec3<u32>, lid: u32, kind: u32, check: u32) {\n" + head() + """    let bits = params.bits;
    let w = row();
    if (params.offsets != 0u) {
        var a = at(params.e0 + w0);
        for (var k = 0u; k < WORDS; k = k + 1u) {
            if (w0 + k >= params.words) {
                break;
            }
            if (k > 0u) {
                a = next(a, w);
            }
            dst[w0 + k] = source(a, w, kind, check);
        }
        return;
    }
    if (bits >= 32u) {
        let lg = countTrailingZeros(bits) - 5u;  // log2 of words per element
        let same = kind == FLAT || (w.istride == 0u && w.timed == 0u && w.along == 0u);
        var a = at(params.e0 + (w0 >> lg));
        var s = source(a, w, kind, check);
        let elems = ((min(w0 + WORDS, params.words) - 1u) >> lg) - (w0 >> lg);  // elements after the first
        if (params.wcount != 0xffffffffu && same && a.last + elems < w.dim) {
            let end = s + elems * w.dstride;
            if (max(s, end) < params.win0 || min(s, end) >= params.win0 + params.wcount) {
                return;
            }
        }
""" + loop("        ", 1, "k", "q") + """            let e = params.e0 + (q >> lg);
            if (e != a.e) {
                let along = same && a.last + 1u < w.dim;
                a = next(a, w);
                if (along) {
                    s = s + w.dstride;
                } else {
                    s = source(a, w, kind, check);
                }
            }
            let rel = s - params.win0;
            if (rel < params.wcount) {
                dst[q] = word_swapped(src[word_at(rel, q, lg, params.swap)], params.swap);
            }
        }
        return;
    }
    let per = 32u / bits;
    let lg = 5u - countTrailingZeros(bits);  // log2 of elements per word
    let end = params.e0 + params.band;
    var a = at(params.e0 + (w0 << lg));
""" + loop("    ", 1, "k", "q") + """        var word = 0u;
        if (params.rmw != 0u) {
            word = dst[q];
        }
        for (var j = 0u; j < per; j = j + 1u) {
            let e = params.e0 + (q << lg) + j;
            if (e >= end) {
                break;
            }
            if (e != a.e) {
                a = next(a, w);
            }
            let rel = source(a, w, kind, check) - params.win0;
            if (rel < params.wcount) {
                word = put(word, small_of(src[rel >> lg], rel, bits, params.swap), j, bits);
            }
        }
        dst[q] = word;
    }
}
"""
