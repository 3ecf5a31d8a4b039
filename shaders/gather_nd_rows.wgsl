// GatherND by runs of 16 or 64 slices, where each index tuple is one pair of
// int64 read as one vec4 load (gpu/nd_rows.py checks: indexed_slices.wgsl's
// table with two lookups at tuple offsets 0 and 1, every leading index
// stride even, slices of one or two words). Each invocation walks the table
// once, then steps its run of slices by adds along the last leading axis and
// stores whole vec4s -- against indexed_slices.wgsl's two vec2 index loads,
// step test and scalar store per word. Along a row, eight tuples are read and
// checked before their eight data words: the random data loads, the kernel's
// slowest, then follow one another (1.14x the kernel reading each tuple just
// before its word, Mesa 22.3).
//
// A dispatch covers slices [first, count) and `raw` holds its tuples from the
// int64 index `ibase` on: gpu/nd_rows.py uploads a large index tensor a band
// at a time (a whole one: first 0, ibase 0).
//
// Table (strides in words, lib/index_table.wgsl): axes[0 .. outer] an Axis
// per leading output axis; axes[outer], axes[outer + 1] a Lookup for each
// of the tuple's two indices (lstride: its stride). Slice p starts at the data word
//     sum_k o_k * dstride_k + index(ip) * lstride_0 + index(ip + 1) * lstride_1.
//
// The raw int64 indices are checked and wrapped here as indexed_slices.wgsl
// does in its wrap mode (GatherND's), all 64 bits: a bad one keeps the smallest position in status[0]
// (each invocation's smallest, once, by atomicMin) and reads 0; the host reads nothing back then. Every slice is
// read, so every index is checked.
//
// By hand: the generator (gpu/render/elementwise.py) has no index tensor; here
// a run of slices shares one table walk and its tuples are vec4 loads.
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 256u;
#specialise WORDS: u32  // words a slice: 1 or 2 (gpu/nd_rows.py)
const RUN: u32 = 16u;  // slices per invocation, at least (params.run: RUN or LONG_RUN)
const LONG_RUN: u32 = 64u;  // along leading rows of LONG_ROW slices or more (gpu/nd_rows.py)

struct Params {
    count: u32,     // slices: this dispatch's end
    groups_x: u32,  // workgroups per row of the dispatch grid
    outer: u32,     // leading output axes
    iswap: u32,     // 1: big-endian indices
    first: u32,     // this dispatch's first slice (the slices before it are another's)
    ibase: u32,     // the int64 index raw[0] holds: raw holds this dispatch's tuples only
    run: u32,       // slices per invocation: RUN or LONG_RUN
    pad2: u32,
}

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@group(0) @binding(2) var<uniform> params: Params;
@group(0) @binding(3) var<storage, read> axes: array<vec4<u32>>;  // lib/index_table.wgsl
@group(0) @binding(4) var<storage, read> raw: array<vec4<u32>>;  // the int64 tuples as stored, one a vector
@group(0) @binding(5) var<storage, read_write> status: array<atomic<u32>>;  // first bad position

#include "lib/index_fold.wgsl"

#include "lib/slice_at.wgsl"

// The last leading axis (dim 0: none) and the two lookups, loaded once.
struct Row {
    dim: u32,
    dstride: u32,
    istride: u32,
    look0: Lookup,
    look1: Lookup,
}

fn row() -> Row {
    var w = Row(0u, 0u, 0u, lookup(params.outer), lookup(params.outer + 1u));
    if (params.outer > 0u) {
        let ax = axis(params.outer - 1u);
        w.dim = ax.dim;
        w.dstride = ax.dstride;
        w.istride = ax.istride;
    }
    return w;
}

// The data word where the slice whose tuple sits at `ip` starts, past `off`.
fn base(off: u32, ip: u32, w: Row, bad: ptr<function, u32>) -> u32 {
    let x = raw[(ip - params.ibase) >> 1u];
    return off + folded(x.x, x.y, ip, w.look0.bound, bad) * w.look0.stride
         + folded(x.z, x.w, ip + 1u, w.look1.bound, bad) * w.look1.stride;
}

// The data words of slices h .. h + 7 of a run along one leading row that starts at `a`: all eight tuples
// read before any data word is, so the data loads (random, the kernel's slowest) follow one another.
// A loop, not eight calls in one expression: SwiftShader (Chromium's WebGPU on the CPU) compiles a
// straight run of these calls in time that grows far faster than their number (four: 11 s, eight: over
// 390 s, until the GPU process is killed); the loop is one call's code and compiles in a fraction of a second.
fn eight(a: At, w: Row, h: u32, bad: ptr<function, u32>) -> array<u32, 8> {
    var b: array<u32, 8>;
    for (var k = 0u; k < 8u; k = k + 1u) {
        b[k] = base(a.off + (h + k) * w.dstride, a.ip + (h + k) * w.istride, w, bad);
    }
    return b;
}

// Slice p's data word (0 past the end: nothing read, nothing checked), and a moved to slice p + 1.
struct Step {
    a: At,
    o: u32,
}

fn take(a: At, w: Row, p: u32, bad: ptr<function, u32>) -> Step {
    var s = Step(a, 0u);
    if (p >= params.count) {
        return s;
    }
    s.o = base(a.off, a.ip, w, bad);
    if (a.last + 1u < w.dim) {
        s.a = At(a.off + w.dstride, a.ip + w.istride, a.last + 1u);
    } else {
        s.a = at(p + 1u);
    }
    return s;
}

fn start(wg: vec3<u32>, lid: u32) -> u32 {
    return params.first + ((wg.y * params.groups_x + wg.x) * WG + lid) * params.run;
}

fn words1(wg: vec3<u32>, lid: u32) {
    let p0 = start(wg, lid);
    if (p0 >= params.count) {
        return;
    }
    let w = row();
    var a = at(p0);
    var bad = 0xffffffffu;
    if (a.last + params.run <= w.dim && p0 + params.run <= params.count) {  // the run along one leading row: adds only
        for (var h = 0u; h < params.run; h = h + 8u) {
            let b = eight(a, w, h, &bad);
            let v0 = src[b[0]];
            let v1 = src[b[1]];
            let v2 = src[b[2]];
            let v3 = src[b[3]];
            let v4 = src[b[4]];
            let v5 = src[b[5]];
            let v6 = src[b[6]];
            let v7 = src[b[7]];
            dst[(p0 + h) >> 2u] = vec4<u32>(v0, v1, v2, v3);
            dst[((p0 + h) >> 2u) + 1u] = vec4<u32>(v4, v5, v6, v7);
        }
        report(bad);
        return;
    }
    for (var u = 0u; u < params.run / 4u; u = u + 1u) {  // one output vector: four slices
        let p = p0 + 4u * u;
        if (p >= params.count) {
            break;
        }
        let s0 = take(a, w, p, &bad);
        let s1 = take(s0.a, w, p + 1u, &bad);
        let s2 = take(s1.a, w, p + 2u, &bad);
        let s3 = take(s2.a, w, p + 3u, &bad);
        a = s3.a;
        dst[p >> 2u] = vec4<u32>(src[s0.o], src[s1.o], src[s2.o], src[s3.o]);
    }
    report(bad);
}

fn words2(wg: vec3<u32>, lid: u32) {
    let p0 = start(wg, lid);
    if (p0 >= params.count) {
        return;
    }
    let w = row();
    var a = at(p0);
    var bad = 0xffffffffu;
    if (a.last + params.run <= w.dim && p0 + params.run <= params.count) {  // the run along one leading row: adds only
        for (var h = 0u; h < params.run; h = h + 8u) {
            let b = eight(a, w, h, &bad);
            let o = (p0 + h) >> 1u;
            dst[o] = vec4<u32>(src[b[0]], src[b[0] + 1u], src[b[1]], src[b[1] + 1u]);
            dst[o + 1u] = vec4<u32>(src[b[2]], src[b[2] + 1u], src[b[3]], src[b[3] + 1u]);
            dst[o + 2u] = vec4<u32>(src[b[4]], src[b[4] + 1u], src[b[5]], src[b[5] + 1u]);
            dst[o + 3u] = vec4<u32>(src[b[6]], src[b[6] + 1u], src[b[7]], src[b[7] + 1u]);
        }
        report(bad);
        return;
    }
    for (var u = 0u; u < params.run / 2u; u = u + 1u) {  // one output vector: two slices
        let p = p0 + 2u * u;
        if (p >= params.count) {
            break;
        }
        let s0 = take(a, w, p, &bad);
        let s1 = take(s0.a, w, p + 1u, &bad);
        a = s1.a;
        dst[p >> 1u] = vec4<u32>(src[s0.o], src[s0.o + 1u], src[s1.o], src[s1.o + 1u]);
    }
    report(bad);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    switch WORDS {
        case 1u: { words1(wg, lid); }
        default: { words2(wg, lid); }  // 2u
    }
}
