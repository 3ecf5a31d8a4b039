// ScatterND with reduction none by whole slices (gpu/scatter.py, where
// gpu/slices.py finds the slices whole words): after the data is copied to
// `out`, update slice p (`width` words of `updates`) replaces the slice its
// index tuple names.
//
//   claim: one invocation per index tuple adds 1 to its target slice's
//          counter; a counter found non-zero means two tuples name one
//          slice (status[1] = 1): the host refuses the scatter before the
//          apply runs or anything is read back. Whatever order the
//          invocations run in, the same tuples collide.
//   apply: the words, WORDS per invocation; distinct targets (claim found
//          none twice), so each word of `out` has one writer and the
//          result does not depend on the order.
//
// The index tuples are read from `norm` (indices.wgsl checked and wrapped
// them, all 64 bits), or, RAW, from the raw int64 index tensor (row-major,
// as stored) in `norm`, each index checked here as indexed_slices.wgsl
// checks it: no separate check pass. The RAW claim reads every tuple; a bad
// index keeps the smallest position in status[0] (atomicMin) and the host
// refuses the scatter before the apply runs; it leaves each tuple's target
// word in `starts` for the RAW apply. The table is indexed_slices.wgsl's: axes[0 .. outer]
// an Axis per leading update axis, then per lookup a Lookup (lib/index_table.wgsl;
// stride in words, claim: its stride in slices).
//
// By hand: the generator (gpu/render/elementwise.py) has no index tensor and no
// claims; here duplicate targets are found by atomic counters before any
// slice is written.
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 256u;
const WORDS: u32 = 16u;
#specialise STEP: u32  // 0 claim, 1 apply (gpu/scatter.py)
#specialise RAW: bool  // the indices are the raw int64 ones

struct Params {
    words: u32,     // update words (claim: index tuples)
    groups_x: u32,
    width: u32,     // words per slice
    outer: u32,     // leading update axes
    nlook: u32,     // indices per tuple
    iswap: u32,     // RAW: 1: big-endian indices
    cmode: u32,     // RAW: indices.wgsl's mode (0 wrap, 2 0 .. d-1)
    pad0: u32,
}

@group(0) @binding(0) var<storage, read> updates: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;
@group(0) @binding(3) var<storage, read> axes: array<vec4<u32>>;  // lib/index_table.wgsl
@group(0) @binding(4) var<storage, read> norm: array<u32>;
@group(0) @binding(5) var<storage, read_write> status: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> claims: array<atomic<u32>>;  // per data slice
// RAW: tuple p's first word in `out`, written by the claim, read by the apply (no tuple read twice)
@group(0) @binding(7) var<storage, read_write> starts: array<u32>;
@group(0) @binding(8) var<storage, read> raw: array<vec2<u32>>;  // RAW: `norm` again, an index a load (lib/index_check.wgsl)

#include "lib/index_table.wgsl"

#include "lib/index_check.wgsl"

// Slice p's target: (word of its first word, slice number), its tuple read
// from `norm` as indices.wgsl wrote it, or (RAW) raw and checked.
fn aim(p: u32) -> vec2<u32> {
    var rest = p;
    var ip = 0u;
    for (var k = params.outer; k > 0u; k = k - 1u) {
        let ax = axis(k - 1u);
        ip = ip + (rest % ax.dim) * ax.istride;
        rest = rest / ax.dim;
    }
    var t = vec2<u32>(0u);
    for (var j = 0u; j < params.nlook; j = j + 1u) {
        let lk = lookup(params.outer + j);
        var v: u32;
        if (RAW) {
            v = index(ip + lk.ioff, lk.bound);
        } else {
            v = norm[ip + lk.ioff];
        }
        t = t + v * vec2<u32>(lk.stride, lk.claim);
    }
    return t;
}

// Slice p's first word in `out`: RAW, as claim left it in `starts` (no tuple read twice).
fn first_word(p: u32) -> u32 {
    if (RAW) {
        return starts[p];
    }
    return aim(p).x;
}

fn claim(wg: vec3<u32>, lid: u32) {
    let p = (wg.y * params.groups_x + wg.x) * WG + lid;
    if (p >= params.words) {
        return;
    }
    let t = aim(p);
    if (RAW) {
        starts[p] = t.x;
    }
    if (atomicAdd(&claims[t.y], 1u) != 0u) {
        atomicStore(&status[1], 1u);
    }
}

fn apply(wg: vec3<u32>, lid: u32) {
    let q0 = ((wg.y * params.groups_x + wg.x) * WG + lid) * WORDS;
    if (q0 >= params.words) {
        return;
    }
    let width = params.width;
    var p = q0 / width;
    var k = q0 - p * width;
    var b = first_word(p);
    let end = min(q0 + WORDS, params.words);
    for (var q = q0; q < end; q = q + 1u) {
        if (k == width) {
            p = p + 1u;
            k = 0u;
            b = first_word(p);
        }
        out[b + k] = updates[q];
        k = k + 1u;
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if (STEP == 0u) {
        claim(wg, lid);
    } else {
        apply(wg, lid);
    }
}
