// Pieces by runs, the rest of each row: one invocation per row writes the
// row's words that pieces_runs.wgsl's whole vec4s leave (its first and last
// up to 3 whole words, and the partial words it shares with its neighbours)
// on its own bits only, with atomicAnd / atomicOr, as pieces.wgsl does; those
// commute with the neighbours' writes. Same buffers, layout and Params as
// pieces_runs.wgsl (see it; the row arithmetic is lib/pieces_rows.wgsl).
//
// By hand: the generator (gpu/render/elementwise.py) writes whole words; a
// row's edge words are shared with its neighbours (atomics on its own bits).
//
// needs: (nothing beyond WebGPU)

#include "lib/pieces_rows.wgsl"

@group(0) @binding(2) var<storage, read_write> dst_bits: array<atomic<u32>>;

fn put(w: u32, x: u32, lo: u32, hi: u32) {
    // bits [lo, hi) of the band, word w's share of them
    let m = range_mask(w, lo, hi);
    if (m == 0u) {
        return;
    }
    atomicAnd(&dst_bits[w], ~m);
    atomicOr(&dst_bits[w], x & m);
}

// band word w of the row: the source's bits where kept, the fill's elsewhere
fn edge_word(row: Row, w: u32, keep: vec2<u32>) -> u32 {
    let f = params.fill[w & 3u];
    if (params.mode == 1u) {
        return f;
    }
    let m = range_mask(w, keep.x, keep.y);
    if (m == 0u) {
        return f;
    }
    return (word_of(row, w) & m) | (f & ~m);
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let r = (wg.y * params.groups_x + wg.x) * WG + lid;
    if (r >= params.count) {
        return;
    }
    let row = row_at(r);
    let lo = row.dst_bit;
    let hi = row.dst_bit + params.len_bits;
    let w_lo = lo >> 5u;
    let w_end = (hi + 31u) >> 5u;
    let range = vec_range(row);
    var head_end = w_end;
    var tail = w_end;
    if (range.x < range.y) {
        head_end = range.x * 4u;
        tail = range.y * 4u;
    }
    let keep = keep_of(row);
    for (var w = w_lo; w < head_end; w = w + 1u) {
        put(w, edge_word(row, w, keep), lo, hi);
    }
    for (var w = tail; w < w_end; w = w + 1u) {
        put(w, edge_word(row, w, keep), lo, hi);
    }
}
