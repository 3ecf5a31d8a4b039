// Pieces by runs: a piece whose innermost axis is contiguous in both its
// source window and the band (src and dst stride 1 -- Concat, Split and
// Pad's interior), copied as whole output words.
//
// gpu/runs.py chooses it (gpu/pieces.py binds the same buffers and layout).
// A piece is `rows` rows (the multi-index over its `rank` outer axes, from
// axes[at..], lib/pieces_rows.wgsl's Axis) of `len_bits` bits each; row
// r's bits start at bit
//     dst_bit = (dst_base + sum_k i_k * dst_stride_k) * bits   of the band,
//     src_bit = (src_base + sum_k i_k * src_stride_k) * bits   of the window,
// so output word w of the row holds the source bits from w * 32 - dst_bit +
// src_bit: two source words joined by a funnel shift when the two are not
// equally aligned modulo 32 bits (narrow types, or 4-bit packed), one word
// when they are (every 32-, 64- and 128-bit element).
//
// Two kernels over the row's words, on one bind group layout (the row
// arithmetic is lib/pieces_rows.wgsl):
//   this one, `words`: each invocation writes VECS consecutive vec4s (16-byte aligned
//     blocks) of the output that lie wholly inside one row -- plain stores,
//     no atomics, one vec4 load of the source per vec4 stored (the CPU
//     drivers' costliest instruction);
//   pieces_edges.wgsl: one invocation per row writes the row's other words (its first
//     and last up to 3 whole words, and the partial words it shares with
//     its neighbours) on its own bits only, with atomicAnd / atomicOr, as
//     pieces.wgsl does; those commute with the neighbours' writes.
// A row keeps the source's bits in [keep_lo, keep_hi) of it and takes the
// fill pattern (`fill`: band word w is fill[w & 3], the element's bits
// repeated -- every element width divides 128) on the rest (mode):
//   0: copy (the whole row kept); 1: fill (nothing kept, no source read);
//   2: upper triangle, columns col >= tri_k + row kept; 3: lower, col <= tri_k + row
// (col the innermost axis, row the index along outer axis tri_row, or 0
// where it is constant: folded into tri_k) -- ConstantOfShape, Pad's
// constant borders, EyeLike's zeros, Trilu.
// The two write disjoint words. Element arithmetic is u32 (two's complement
// strides, exact final offsets: the host keeps windows and bands below 2^32
// bits). Sources are little-endian (big-endian ones keep pieces.wgsl).
//
// By hand: the generator (gpu/render/elementwise.py) makes one word per
// invocation with no funnel shift; here VECS aligned vec4s of a row, two
// source words joined by a shift.
//
// needs: (nothing beyond WebGPU)

const VECS: u32 = 4u;  // consecutive output vec4s per invocation

#include "lib/pieces_rows.wgsl"

@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;

// five consecutive words from two vec4s, starting at word r (0..3) of the first
fn pick(a: vec4<u32>, b: vec4<u32>, r: u32) -> array<u32, 5> {
    let s0 = select(select(select(a.x, a.y, r == 1u), a.z, r == 2u), a.w, r == 3u);
    let s1 = select(select(select(a.y, a.z, r == 1u), a.w, r == 2u), b.x, r == 3u);
    let s2 = select(select(select(a.z, a.w, r == 1u), b.x, r == 2u), b.y, r == 3u);
    let s3 = select(select(select(a.w, b.x, r == 1u), b.y, r == 2u), b.z, r == 3u);
    let s4 = select(select(select(b.x, b.y, r == 1u), b.z, r == 2u), b.w, r == 3u);
    return array<u32, 5>(s0, s1, s2, s3, s4);
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = (wg.y * params.groups_x + wg.x) * WG + lid;
    if (t >= params.count) {
        return;
    }
    let r = t / params.chunks;
    let row = row_at(r);
    let range = vec_range(row);
    let v0 = range.x + (t - r * params.chunks) * VECS;
    if (v0 >= range.y) {
        return;
    }
    let v1 = min(v0 + VECS, range.y);
    if (params.mode == 1u) {  // a fill: the pattern's vec4, no source
        for (var v = v0; v < v1; v = v + 1u) {
            dst[v] = params.fill;
        }
        return;
    }
    let keep = keep_of(row);
    // source bit of the first vec4's bit 0, >= 0: the vec4 lies inside the row
    let at = v0 * 128u - row.dst_bit + row.src_bit;
    let sh = at & 31u;
    let k0 = at >> 5u;  // source word of the first output word
    let off = k0 & 3u;
    var q = k0 >> 2u;
    var a = src[q];
    for (var v = v0; v < v1; v = v + 1u) {
        let b = src[q + 1u];
        let s = pick(a, b, off);
        var out = vec4<u32>(s[0], s[1], s[2], s[3]);
        if (sh != 0u) {
            let up = 32u - sh;
            out = (out >> vec4<u32>(sh)) | (vec4<u32>(s[1], s[2], s[3], s[4]) << vec4<u32>(up));
        }
        if (keep.x > v * 128u || keep.y < v * 128u + 128u) {  // a triangle's edge crosses the vec4
            let w = v * 4u;
            let m = vec4<u32>(range_mask(w, keep.x, keep.y), range_mask(w + 1u, keep.x, keep.y),
                              range_mask(w + 2u, keep.x, keep.y), range_mask(w + 3u, keep.x, keep.y));
            out = (out & m) | (params.fill & ~m);
        }
        dst[v] = out;
        a = b;
        q = q + 1u;
    }
}
