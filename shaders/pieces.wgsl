// Pieces: one strided copy (or fill) of a box of elements into a band of the output.
//
// The kernel of the multi-input family (Concat, Split, Pad, Where, Trilu, ...):
// an operator's output is tiled by *pieces* (ops/family.py), each a box of
// `rank` axes whose element at multi-index i is written at
//     dst element  dst_base  + sum_k i_k * dst_stride_k   (in the band)
// and takes its value from
//     src element  src_base  + sum_k i_k * src_stride_k   (in the bound window)
// or from `fill` (mode 1). A predicate can choose per element (pred):
//     1: the mask (a bool tensor, 8-bit, its own window and strides) is true;
//     2: upper triangle: col - row >= tri_k;  3: lower: col - row <= tri_k
// (row and col are the indices along axes tri_row, tri_col of the piece).
// Where the predicate fails the element gets `fill` (otherwise 1), keeps
// what an earlier dispatch wrote (otherwise 0), or -- a select piece
// (has_other 1) -- is read from the second source `other` at
//     other element  other_base + sum_k i_k * other_stride_k
// (the strides in the Other rows axes[at + 16 + k]): Where is one select piece, X where
// the condition is true and Y elsewhere, each output element written once.
//
// Strides are two's complement u32: every offset is taken mod 2^32, and the
// host keeps each dispatch's window and band within one binding, so the final
// offsets are exact. ELEMS consecutive elements per invocation. Elements narrower than
// 32 bits share words with their neighbours (and with other pieces): they are
// written with atomicAnd / atomicOr on their own bits only, which commute, so
// the result does not depend on the order invocations run in.
//
// swap: 0, or the byte-swap unit in bytes (2, 4 or 8) of a big-endian source.
//
// By hand: the generator (gpu/render/elementwise.py) writes whole outputs in
// order; pieces write strided boxes into a band, sharing words with
// neighbours through atomicAnd / atomicOr.
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 256u;
const ELEMS: u32 = 8u;  // consecutive piece elements per invocation

struct Params {
    count: u32,      // elements in the piece
    groups_x: u32,   // workgroups per row of the dispatch grid
    rank: u32,       // entries of `axes`, from `at`
    at: u32,
    bits: u32,       // 2, 4, 8, 16, 32, 64 or 128
    swap: u32,
    mode: u32,       // 0: copy from src; 1: fill
    pred: u32,       // 0: none; 1: mask; 2: upper triangle; 3: lower triangle
    otherwise: u32,  // where pred fails: 0 keep dst, 1 fill
    src_base: u32,
    dst_base: u32,
    mask_base: u32,
    tri_k: u32,      // i32 bits
    tri_row: u32,
    tri_col: u32,
    pad0: u32,
    fill: vec4<u32>, // the fill value's words, low first
    has_other: u32,  // 1: where pred fails, read `other` (a select piece)
    other_base: u32,
    other_swap: u32,
    pad1: u32,
}

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read> mask: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<atomic<u32>>;
@group(0) @binding(3) var<uniform> params: Params;
// per axis of a piece, axes[at .. at + rank] (gpu/pieces_run.py packs them by these names)
struct Axis {
    dim: u32,
    src: u32,   // source stride, elements
    dst: u32,   // output stride, elements
    mask: u32,  // mask stride, elements
}
// per axis of a select piece, axes[at + 16 .. at + 16 + rank]: the same 16-byte rows, read by other_axis
struct Other {
    stride: u32,  // the second source's stride, elements
    pad0: u32,
    pad1: u32,
    pad2: u32,
}
@group(0) @binding(4) var<storage, read> axes: array<vec4<u32>>;  // rows read by piece_axis and other_axis: one vec4 load each (lib/index_table.wgsl says why)
@group(0) @binding(5) var<storage, read> other: array<u32>;

// Row r of `axes` read as an Axis, and as an Other.
fn piece_axis(r: u32) -> Axis {
    let a = axes[r];
    return Axis(a.x, a.y, a.z, a.w);
}

fn other_axis(r: u32) -> Other {
    let a = axes[r];
    return Other(a.x, a.y, a.z, a.w);
}

#include "lib/bswap.wgsl"

// Word q of source element s (bits >= 32), big-endian bytes reversed per unit.
fn word_swapped(x: u32, swap: u32) -> u32 {
    return select(x, bswap32(x), swap >= 4u);
}

// the word index of word q of element s, for a source of swap unit `swap`
fn word_at(s: u32, q: u32, lg: u32, swap: u32) -> u32 {
    let flip = select(0u, swap / 4u - 1u, swap >= 4u);
    let lo = (1u << lg) - 1u;
    return (s << lg) + ((q & lo) ^ flip);
}

fn src_word(s: u32, q: u32, lg: u32) -> u32 {
    return word_swapped(src[word_at(s, q, lg, params.swap)], params.swap);
}

fn other_word(s: u32, q: u32, lg: u32) -> u32 {
    return word_swapped(other[word_at(s, q, lg, params.other_swap)], params.other_swap);
}

// element s (bits < 32) out of its word w
fn small_of(w: u32, s: u32, bits: u32, swap: u32) -> u32 {
    let per = 32u / bits;
    var x = (w >> ((s & (per - 1u)) * bits)) & ((1u << bits) - 1u);
    if (swap == 2u) {
        x = ((x & 0xffu) << 8u) | (x >> 8u);
    }
    return x;
}

fn src_small(s: u32, bits: u32) -> u32 {
    let lg = 5u - countTrailingZeros(bits);  // log2 of elements per word
    return small_of(src[s >> lg], s, bits, params.swap);
}

fn other_small(s: u32, bits: u32) -> u32 {
    let lg = 5u - countTrailingZeros(bits);
    return small_of(other[s >> lg], s, bits, params.other_swap);
}

// Where element l of the piece lies: its source, destination and mask
// offsets, its triangle row and column, and its index along the last axis.
struct Loc {
    s: u32,
    d: u32,
    m: u32,
    o: u32,
    row: u32,
    col: u32,
    i: u32,
}

fn locate(l: u32) -> Loc {
    var rest = l;
    var loc = Loc(params.src_base, params.dst_base, params.mask_base, params.other_base, 0u, 0u, 0u);
    for (var k = params.rank; k > 0u; k = k - 1u) {
        let a = piece_axis(params.at + k - 1u);
        let i = rest % a.dim;
        rest = rest / a.dim;
        loc.s = loc.s + i * a.src;
        loc.d = loc.d + i * a.dst;
        loc.m = loc.m + i * a.mask;
        if (params.has_other == 1u) {
            loc.o = loc.o + i * other_axis(params.at + 15u + k).stride;
        }
        if (k - 1u == params.tri_row) {
            loc.row = i;
        }
        if (k - 1u == params.tri_col) {
            loc.col = i;
        }
        if (k == params.rank) {
            loc.i = i;
        }
    }
    return loc;
}

fn write(loc: Loc) {
    var take = true;
    if (params.pred == 1u) {
        take = ((mask[loc.m >> 2u] >> ((loc.m & 3u) * 8u)) & 0xffu) != 0u;
    } else if (params.pred >= 2u) {
        let diff = i32(loc.col) - i32(loc.row);
        let k = bitcast<i32>(params.tri_k);
        take = select(diff <= k, diff >= k, params.pred == 2u);
    }
    var fill = params.mode == 1u;
    var from_other = false;
    if (!take) {
        if (params.has_other == 1u) {
            from_other = true;
        } else if (params.otherwise == 0u) {
            return;
        } else {
            fill = true;
        }
    }
    let bits = params.bits;
    if (bits >= 32u) {
        let lg = countTrailingZeros(bits) - 5u;
        let n = 1u << lg;
        for (var q = 0u; q < n; q = q + 1u) {
            var x = 0u;
            if (fill) {
                x = params.fill[q];
            } else if (from_other) {
                x = other_word(loc.o, q, lg);
            } else {
                x = src_word(loc.s, q, lg);
            }
            atomicStore(&dst[(loc.d << lg) + q], x);
        }
        return;
    }
    var x = 0u;
    if (fill) {
        x = params.fill.x & ((1u << bits) - 1u);
    } else if (from_other) {
        x = other_small(loc.o, bits);
    } else {
        x = src_small(loc.s, bits);
    }
    let lg = 5u - countTrailingZeros(bits);
    let shift = (loc.d & ((1u << lg) - 1u)) * bits;
    let w = loc.d >> lg;
    atomicAnd(&dst[w], ~(((1u << bits) - 1u) << shift));
    atomicOr(&dst[w], x << shift);
}

// A select piece's element of 1 << lg whole words, neither source swapped:
// each word of X where the mask is true, else of Y -- no fill, no keep.
fn select_words(loc: Loc, lg: u32) {
    let take = ((mask[loc.m >> 2u] >> ((loc.m & 3u) * 8u)) & 0xffu) != 0u;
    let n = 1u << lg;
    for (var q = 0u; q < n; q = q + 1u) {
        let a = src[(loc.s << lg) + q];
        let b = other[(loc.o << lg) + q];
        atomicStore(&dst[(loc.d << lg) + q], select(b, a, take));
    }
}

// Each invocation writes ELEMS consecutive elements of the piece: the index
// is decomposed once (divisions are the main cost on CPU adapters), then
// walked along the last axis with adds until that axis wraps.
@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let l0 = ((wg.y * params.groups_x + wg.x) * WG + lid) * ELEMS;
    if (l0 >= params.count) {
        return;
    }
    var loc = locate(l0);
    var last = Axis(params.count, 0u, 0u, 0u);  // a rank-0 piece: one element
    var last_o = 0u;
    if (params.rank > 0u) {
        last = piece_axis(params.at + params.rank - 1u);
        if (params.has_other == 1u) {
            last_o = other_axis(params.at + 15u + params.rank).stride;
        }
    }
    let end = min(l0 + ELEMS, params.count);
    // a select piece of whole words read as they lie (Where of 32-, 64-, 128-bit types): its own loop
    let fast = params.has_other == 1u && params.bits >= 32u && params.swap == 0u && params.other_swap == 0u;
    let lg = select(0u, countTrailingZeros(params.bits) - 5u, params.bits >= 32u);
    for (var l = l0; l < end; l = l + 1u) {
        if (l != l0) {
            if (loc.i + 1u < last.dim) {
                loc.i = loc.i + 1u;
                loc.s = loc.s + last.src;
                loc.d = loc.d + last.dst;
                loc.m = loc.m + last.mask;
                loc.o = loc.o + last_o;
                if (params.tri_col == params.rank - 1u) {
                    loc.col = loc.col + 1u;
                }
                if (params.tri_row == params.rank - 1u) {
                    loc.row = loc.row + 1u;
                }
            } else {
                loc = locate(l);
            }
        }
        if (fast) {
            select_words(loc, lg);
        } else {
            write(loc);
        }
    }
}
