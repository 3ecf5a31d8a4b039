// Indexed gather: dst[e] = src[offset(e)], the offset read partly from an
// index tensor. Gather, GatherElements, GatherND, ReverseSequence, and the
// copy that starts every scatter (no lookups), are tables for this one kernel.
//
// Output element e has multi-index o (row-major over `axes[0..rank]`). Its
// source element is
//     sum_k o_k * dstride_k  +  sum_t norm[ip + ioff_t] * dstride_t
// with ip = sum_k o_k * istride_k the position in the index tensor, and
// `norm` the indices as indices.wgsl checked and wrapped them (u32 element
// offsets along their axis). Lookup t is axes[rank + t], read as a Lookup
// (lib/index_table.wgsl: stride = its dstride, ioff, bound).
// mode 1 (ReverseSequence): L = norm[ip] is the batch's length; along the
// time axis (`rev_axis`, stride `rev_stride`) t < L reads L - 1 - t.
// mode 2 (TensorScatter, circular): along the time axis t reads
// (norm[ip] + t) % modulus.
// offsets 1: write each element's source offset (a u32), not the element:
// the scatter kernels' targets, computed by the same table.
// Offsets wrap modulo 2^32 and end within the source (the host keeps the
// source below 2^32 elements), so u32 arithmetic is exact.
//
// A source larger than one binding is bound one window at a time (`win0`
// its first source element, `wcount` its elements): a dispatch writes only
// the elements whose source lies in its window, so the windows of a band,
// dispatched one after another, write each element once; `rmw` (a band's
// windows after its first): 2- to 16-bit words are read first and only this
// window's elements replaced.
//
// The output goes in bands of at most one binding (e0 is the band's first
// element, a whole number of words). Each invocation writes WORDS whole
// words: elements of 32 bits and more are one 32-bit piece each; 2- to
// 16-bit elements are assembled 32 / bits to a word, low bits first as
// ONNX packs them (WGSL has no byte stores). swap: the byte-swap unit of a
// big-endian source (2, 4 or 8), else 0.
//
// One kernel per case of table (CASE: FLAT .. CIRCULAR below) and source
// of indices (INDEX: NORM, or I32 and I64, which read the raw indices and
// check them as they go, see `index`); gpu/indexed.py's VARIANTS names them.
// Both are constants the host sets, so the driver folds away the code of
// the others: Mesa's CPU drivers run every branch a
// lane could take, so code a case does not need still costs it.
//
// By hand: the generator (gpu/render/elementwise.py) reads no offsets from a
// tensor and keeps no status; here int64 indices are checked in all 64 bits,
// the first bad one kept by atomicMin.
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 256u;
const WORDS: u32 = 16u;

struct Params {
    words: u32,      // output words in this band
    groups_x: u32,   // workgroups per row of the dispatch grid
    e0: u32,         // the band's first output element
    band: u32,       // elements in the band
    bits: u32,       // 2, 4, 8, 16, 32, 64 or 128
    swap: u32,       // 0, 2, 4 or 8
    rank: u32,       // output axes
    nlook: u32,      // lookups per element
    mode: u32,       // 0: lookups, 1: reverse along rev_axis
    rev_axis: u32,
    rev_stride: u32,
    modulus: u32,    // mode 2
    offsets: u32,    // 1: write the offset, not the element
    win0: u32,       // the bound window's first source element
    wcount: u32,     // its elements; 0xffffffff: the whole source is bound
    rmw: u32,        // 1: keep the words' other elements (a band's later windows)
    iswap: u32,      // checked: 1 big-endian indices
    cmode: u32,      // checked: indices.wgsl's mode (0 wrap, 1 0 .. d, 2 0 .. d-1)
    bound: u32,      // checked, modes 1 and 2: the largest allowed length / position
    pad0: u32,
    pad1: u32,
    pad2: u32,
    pad3: u32,
    pad4: u32,
}

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read> norm: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
@group(0) @binding(3) var<uniform> params: Params;
// axes: per output axis one Axis, then per lookup one Lookup (lib/index_table.wgsl)
@group(0) @binding(4) var<storage, read> axes: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read> raw: array<vec2<u32>>;  // checked: the index tensor as stored
@group(0) @binding(6) var<storage, read_write> status: array<atomic<u32>>;  // checked: first bad position

#include "lib/index_table.wgsl"

#include "lib/bswap.wgsl"

// An output element's linear parts: source offset, index position, and
// the coordinates the walk needs (last axis, time axis).
struct At {
    e: u32,
    off: u32,
    ip: u32,
    last: u32,
    time: u32,
}

fn at(e: u32) -> At {
    var rest = e;
    var a = At(e, 0u, 0u, 0u, 0u);
    for (var k = params.rank; k > 0u; k = k - 1u) {
        let ax = axis(k - 1u);
        let i = rest % ax.dim;
        rest = rest / ax.dim;
        a.off = a.off + i * ax.dstride;
        a.ip = a.ip + i * ax.istride;
        if (k == params.rank) {
            a.last = i;
        }
        if (k - 1u == params.rev_axis) {
            a.time = i;
        }
    }
    return a;
}

// The last axis and the first lookup, loaded once per invocation: storage
// loads are what Mesa's CPU drivers are slowest at.
struct Row {
    dim: u32,         // 0: no fast step (rank 0)
    timed: u32,       // 1: the last axis is the time axis
    dstride: u32,
    istride: u32,
    look: Lookup,     // lookup 0
    look1: Lookup,    // lookup 1
}

fn row() -> Row {
    let r = params.rank;
    let nolook = Lookup(0u, 0u, 0u, 0u);
    var w = Row(0u, 0u, 0u, 0u, nolook, nolook);
    if (r > 0u) {
        let ax = axis(r - 1u);
        w = Row(ax.dim, select(0u, 1u, r - 1u == params.rev_axis), ax.dstride, ax.istride, nolook, nolook);
    }
    if (params.nlook > 0u) {
        w.look = lookup(r);
    }
    if (params.nlook > 1u) {
        w.look1 = lookup(r + 1u);
    }
    return w;
}

// The next element: one add along the last axis until its row ends.
fn next(a: At, w: Row) -> At {
    if (a.last + 1u < w.dim) {
        return At(a.e + 1u, a.off + w.dstride, a.ip + w.istride, a.last + 1u, a.time + w.timed);
    }
    return at(a.e + 1u);
}

// The index at position `pos` of the index tensor, as an element offset
// along its axis (of `d` elements): what indices.wgsl wrote, or (`check`)
// the raw int32 or int64 index checked here as indices.wgsl checks it, all
// 64 bits; a bad one keeps the smallest position in status[0] (atomicMin,
// so the order the invocations run in does not matter) and reads 0. The
// host checks this way only an output of one band whose every index some
// element reads, so every index is checked before the band is read back.
fn index(pos: u32, d: u32, check: u32) -> u32 {
    if (check == NORM) {
        return norm[pos];
    }
    var lo: u32;
    var hi: u32;
    if (check == I64) {
        let x = raw[pos];  // one load for both words
        lo = x.x;
        hi = x.y;
        if (params.iswap != 0u) {
            let t = bswap32(lo);
            lo = bswap32(hi);
            hi = t;
        }
    } else {
        let x = raw[pos >> 1u];
        lo = select(x.x, x.y, (pos & 1u) != 0u);
        if (params.iswap != 0u) {
            lo = bswap32(lo);
        }
        hi = select(0u, 0xffffffffu, (lo >> 31u) != 0u);  // sign-extended
    }
    var ok: bool;
    var v = lo;
    if (params.cmode == 0u) {
        // 0 <= x < d, or -d <= x < 0 (hi all ones, lo >= 2^32 - d)
        let neg = hi == 0xffffffffu && lo != 0u && (0u - lo) <= d;
        ok = (hi == 0u && lo < d) || neg;
        v = select(lo, lo + d, neg);
    } else {
        ok = hi == 0u && (lo < d || (params.cmode == 1u && lo == d));
    }
    if (!ok) {
        atomicMin(&status[0], pos);
        v = 0u;
    }
    return v;
}

const NORM: u32 = 0u;  // indices as indices.wgsl wrote them
const I32: u32 = 1u;   // raw int32 indices, checked here
const I64: u32 = 2u;   // raw int64 indices, checked here

const FLAT: u32 = 0u;      // mode 0, no lookup: a copy, a re-layout
const ONE: u32 = 1u;       // mode 0, one lookup: Gather, GatherElements
const LOOKUPS: u32 = 2u;   // mode 0, any number: GatherND, ScatterND
const REVERSE: u32 = 3u;   // mode 1: ReverseSequence
const CIRCULAR: u32 = 4u;  // mode 2: TensorScatter, circular
#specialise CASE: u32   // the table's case: FLAT .. CIRCULAR
#specialise INDEX: u32  // the indices: NORM, I32 or I64

fn source(a: At, w: Row, kind: u32, check: u32) -> u32 {
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
        let t = (index(a.ip, params.bound, check) + a.time) % params.modulus;
        off = off + (t - a.time) * params.rev_stride;
    }
    return off;
}

fn body(wg: vec3<u32>, lid: u32, kind: u32, check: u32) {
    let w0 = ((wg.y * params.groups_x + wg.x) * WG + lid) * WORDS;
    if (w0 >= params.words) {
        return;
    }
    let bits = params.bits;
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
        let lo = (1u << lg) - 1u;
        let flip = select(0u, params.swap / 4u - 1u, params.swap >= 4u);
        // along a last axis on which no index moves, the source moves by its
        // stride alone: the index is read (and checked) once per run of the row
        let same = kind == FLAT || (w.istride == 0u && w.timed == 0u);
        var a = at(params.e0 + (w0 >> lg));
        var s = source(a, w, kind, check);
        // in windows: a run within one row whose sources all lie outside this
        // window writes nothing here (another window's dispatch writes it).
        // Its ends are valid source offsets, so u32 arithmetic gives them.
        let elems = ((min(w0 + WORDS, params.words) - 1u) >> lg) - (w0 >> lg);  // elements after the first
        if (params.wcount != 0xffffffffu && same && a.last + elems < w.dim) {
            let end = s + elems * w.dstride;
            if (max(s, end) < params.win0 || min(s, end) >= params.win0 + params.wcount) {
                return;
            }
        }
        for (var k = 0u; k < WORDS; k = k + 1u) {
            let q = w0 + k;
            if (q >= params.words) {
                break;
            }
            let e = params.e0 + (q >> lg);
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
                let piece = src[(rel << lg) + ((q & lo) ^ flip)];
                dst[q] = select(piece, bswap32(piece), params.swap >= 4u);
            }
        }
        return;
    }
    let per = 32u / bits;
    let lg = 5u - countTrailingZeros(bits);  // log2 of elements per word
    let mask = (1u << bits) - 1u;
    let end = params.e0 + params.band;
    var a = at(params.e0 + (w0 << lg));
    for (var k = 0u; k < WORDS; k = k + 1u) {
        let q = w0 + k;
        if (q >= params.words) {
            break;
        }
        var word = 0u;
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
            let rel = source(a, w, kind, check) - params.win0;  // below the window wraps past wcount
            if (rel < params.wcount) {
                var x = (src[rel >> lg] >> ((rel & (per - 1u)) * bits)) & mask;
                if (params.swap == 2u) {
                    x = ((x & 0xffu) << 8u) | (x >> 8u);
                }
                let shift = j * bits;
                word = (word & ~(mask << shift)) | (x << shift);
            }
        }
        dst[q] = word;
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    body(wg, lid, CASE, INDEX);
}
