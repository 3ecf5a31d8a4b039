// Gather by whole slabs of 16-byte vectors (Gather, GatherND): indexed_slices.wgsl
// where every slice and every stride is a whole number of vec4<u32> (the
// host, gpu/slices.py's ``vec4``, checks): the same table, index reading and
// checking (all 64 bits, the smallest bad position in status[0]), each
// invocation copying VECS vectors instead of WORDS words -- a quarter of the
// loads, stores and bounds checks Mesa's CPU drivers run per byte.
// Strides in `axes` stay in words (the table is indexed_slices.wgsl's); the
// host passes `words` and `width` in vectors.
//
// `whole` makes an output of one band from a source of one buffer, reading
// and checking the raw indices (the host's fused case, tuned: VECS vectors
// an invocation). Any other runs `windowed` (gpu/gather_windows.py): `first`
// is the band's first output vector; `normed` 1: the indices were checked
// and wrapped before (indices.wgsl), `raw` is then that u32 buffer seen as
// pairs. A source larger than one binding runs it once per window [win0, wend)
// (source vectors; windows start on whole vectors, so every output vector
// has its source in exactly one): an invocation takes `chunk` vectors, and
// each slab's part of them is skipped with one test when its source lies
// outside the window, copied straight when inside, vector by vector (each
// tested) when it straddles an edge.
//
// By hand: the generator (gpu/render/elementwise.py) copies elements; here
// whole vec4 slabs, an index tuple read once per slab.
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 256u;
const VECS: u32 = 4u;
#specialise WINDOWED: bool  // `windowed`, else `whole` (gpu/slice_gathers.py)

struct Params {
    words: u32,     // output vectors
    groups_x: u32,  // workgroups per row of the dispatch grid
    width: u32,     // vectors per slice
    outer: u32,     // leading output axes
    nlook: u32,     // indices per tuple
    iswap: u32,     // 1: big-endian indices
    cmode: u32,     // indices.wgsl's mode (0 wrap, 1 0 .. d, 2 0 .. d-1)
    normed: u32,    // 1: `raw` holds indices.wgsl's checked u32 offsets
    first: u32,     // the band's first output vector
    win0: u32,      // windowed: the window's first source vector
    wend: u32,      // windowed: one past its last
    chunk: u32,     // windowed: vectors per invocation
}

@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@group(0) @binding(2) var<uniform> params: Params;
@group(0) @binding(3) var<storage, read> axes: array<vec4<u32>>;  // lib/index_table.wgsl
@group(0) @binding(4) var<storage, read> raw: array<vec2<u32>>;  // the int64 index tensor as stored
@group(0) @binding(5) var<storage, read_write> status: array<atomic<u32>>;  // first bad position

#include "lib/index_check.wgsl"

#include "lib/slice_walk.wgsl"

// `index`, or (normed) indices.wgsl's checked offset at `pos`.
fn offset(pos: u32, d: u32) -> u32 {
    if (params.normed != 0u) {
        let n = raw[pos >> 1u];
        return select(n.x, n.y, (pos & 1u) != 0u);
    }
    return index(pos, d);
}

// `base` for `windowed`, its indices read by `offset`.
fn base_of(a: At, w: Row) -> u32 {
    var off = a.off + offset(a.ip + w.look0.ioff, w.look0.bound) * w.look0.stride;
    for (var t = 1u; t < params.nlook; t = t + 1u) {
        let lk = lookup(params.outer + t);
        off = off + offset(a.ip + lk.ioff, lk.bound) * lk.stride;
    }
    return off;
}

// One band of an output of one band, the source one buffer, the indices
// read raw and checked (the host's fused case): VECS vectors an invocation.
fn whole(wg: vec3<u32>, lid: u32) {
    let q0 = ((wg.y * params.groups_x + wg.x) * WG + lid) * VECS;
    if (q0 >= params.words) {
        return;
    }
    let width = params.width;
    let w = row();
    var p = q0 / width;
    var k = q0 - p * width;
    var a = at(p);
    var b = base(a, w) / 4u;
    let end = min(q0 + VECS, params.words);
    for (var q = q0; q < end; q = q + 1u) {
        if (k == width) {
            p = p + 1u;
            k = 0u;
            a = next(a, w, p);
            b = base(a, w) / 4u;
        }
        dst[q] = src[b + k];
        k = k + 1u;
    }
}

// Any band, from one window of the source (or the whole, [0, all)): `chunk`
// vectors an invocation, a slab's part outside the window skipped.
fn windowed(wg: vec3<u32>, lid: u32) {
    let chunk = params.chunk;
    let q0 = ((wg.y * params.groups_x + wg.x) * WG + lid) * chunk;
    if (q0 >= params.words) {
        return;
    }
    let width = params.width;
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
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if (WINDOWED) {
        windowed(wg, lid);
    } else {
        whole(wg, lid);
    }
}
