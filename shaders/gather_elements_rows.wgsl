// GatherElements by runs of 16 output elements: where the index tensor is
// row-major int64 (output element e reads index e), the elements are 32 or
// 64 bits and the data is little-endian in one binding (gpu/elements_rows.py
// checks), each invocation reads its 16 indices as 8 vec4 loads (two int64
// a load, all 64 bits checked), finds its elements' data offsets by one
// table walk and then adds along the last axis, and stores whole vec4s --
// against the element kernel's (indexed_gather.wgsl's `one_i64` variant) vec2 load,
// walk step, window and byte-swap tests and scalar store per element.
//
// A bad index keeps the smallest position in status[0] (each invocation's
// smallest, once, by atomicMin) and reads offset 0; the host reads nothing
// back then. Every index is read: the output has the index tensor's shape.
//
// By hand: the generator (gpu/render/elementwise.py) makes one element per
// invocation and has no index tensor; here 16 indices are two-int64 vec4
// loads and offsets step by adds.
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 256u;
#specialise WORDS: u32  // words an element: 1 or 2 (gpu/elements_rows.py)
const RUN: u32 = 16u;  // output elements per invocation

struct Params {
    count: u32,     // output elements
    groups_x: u32,  // workgroups per row of the dispatch grid
    rank: u32,      // output axes
    iswap: u32,     // 1: big-endian indices
    bound: u32,     // the gathered axis' size
    lstride: u32,   // its data stride (elements)
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@group(0) @binding(2) var<uniform> params: Params;
// per output axis (gpu/elements_rows.py packs them by these names)
struct Axis {
    dim: u32,
    stride: u32,  // data stride (0 on the gathered axis)
    pad0: u32,
    pad1: u32,
}
@group(0) @binding(3) var<storage, read> axes: array<vec4<u32>>;

// Row r of `axes` as an Axis: one vec4 load per row (lib/index_table.wgsl says why).
fn axis(r: u32) -> Axis {
    let a = axes[r];
    return Axis(a.x, a.y, a.z, a.w);
}
@group(0) @binding(4) var<storage, read> raw: array<vec4<u32>>;  // the int64 indices as stored, two a vector
@group(0) @binding(5) var<storage, read_write> status: array<atomic<u32>>;  // first bad position

#include "lib/index_fold.wgsl"

// An element's data offset before its index, and its last coordinate.
struct At {
    off: u32,
    last: u32,
}

fn at(e: u32) -> At {
    var rest = e;
    var a = At(0u, 0u);
    for (var k = params.rank; k > 0u; k = k - 1u) {
        let ax = axis(k - 1u);
        let i = rest % ax.dim;
        rest = rest / ax.dim;
        a.off = a.off + i * ax.stride;
        if (k == params.rank) {
            a.last = i;
        }
    }
    return a;
}

// Element e's data offset (a.off and its index), then a moved to element e + 1.
struct Step {
    a: At,
    o: u32,
}

fn take(a: At, lo: u32, hi: u32, e: u32, dim: u32, ds: u32, bad: ptr<function, u32>) -> Step {
    var s = Step(a, 0u);
    if (e >= params.count) {
        return s;  // past the end: nothing read, nothing checked
    }
    s.o = a.off + folded(lo, hi, e, params.bound, bad) * params.lstride;
    if (a.last + 1u < dim) {
        s.a = At(a.off + ds, a.last + 1u);
    } else {
        s.a = at(e + 1u);
    }
    return s;
}

fn start(wg: vec3<u32>, lid: u32) -> u32 {
    return ((wg.y * params.groups_x + wg.x) * WG + lid) * RUN;
}

fn words1(wg: vec3<u32>, lid: u32) {
    let e0 = start(wg, lid);
    if (e0 >= params.count) {
        return;
    }
    let last = axis(params.rank - 1u);
    var a = at(e0);
    var bad = 0xffffffffu;
    if (a.last + RUN <= last.dim && e0 + RUN <= params.count) {  // the run within one row: adds only
        for (var u = 0u; u < RUN / 4u; u = u + 1u) {
            let e = e0 + 4u * u;
            let x = raw[e >> 1u];
            let y = raw[(e >> 1u) + 1u];
            let o = a.off + 4u * u * last.stride;
            let L = params.lstride;
            dst[e >> 2u] = vec4<u32>(src[o + folded(x.x, x.y, e, params.bound, &bad) * L],
                                     src[o + last.stride + folded(x.z, x.w, e + 1u, params.bound, &bad) * L],
                                     src[o + 2u * last.stride + folded(y.x, y.y, e + 2u, params.bound, &bad) * L],
                                     src[o + 3u * last.stride + folded(y.z, y.w, e + 3u, params.bound, &bad) * L]);
        }
        report(bad);
        return;
    }
    for (var u = 0u; u < RUN / 4u; u = u + 1u) {  // one output vector: four elements, two index loads
        let e = e0 + 4u * u;
        if (e >= params.count) {
            break;
        }
        let x = raw[e >> 1u];
        let y = raw[(e >> 1u) + 1u];
        let s0 = take(a, x.x, x.y, e, last.dim, last.stride, &bad);
        let s1 = take(s0.a, x.z, x.w, e + 1u, last.dim, last.stride, &bad);
        let s2 = take(s1.a, y.x, y.y, e + 2u, last.dim, last.stride, &bad);
        let s3 = take(s2.a, y.z, y.w, e + 3u, last.dim, last.stride, &bad);
        a = s3.a;
        dst[e >> 2u] = vec4<u32>(src[s0.o], src[s1.o], src[s2.o], src[s3.o]);
    }
    report(bad);
}

fn words2(wg: vec3<u32>, lid: u32) {
    let e0 = start(wg, lid);
    if (e0 >= params.count) {
        return;
    }
    let last = axis(params.rank - 1u);
    var a = at(e0);
    var bad = 0xffffffffu;
    if (a.last + RUN <= last.dim && e0 + RUN <= params.count) {  // the run within one row: adds only
        for (var u = 0u; u < RUN / 2u; u = u + 1u) {
            let e = e0 + 2u * u;
            let x = raw[e >> 1u];
            let o = a.off + 2u * u * last.stride;
            let w0 = 2u * (o + folded(x.x, x.y, e, params.bound, &bad) * params.lstride);
            let w1 = 2u * (o + last.stride + folded(x.z, x.w, e + 1u, params.bound, &bad) * params.lstride);
            dst[e >> 1u] = vec4<u32>(src[w0], src[w0 + 1u], src[w1], src[w1 + 1u]);
        }
        report(bad);
        return;
    }
    for (var u = 0u; u < RUN / 2u; u = u + 1u) {  // one output vector: two elements, one index load
        let e = e0 + 2u * u;
        if (e >= params.count) {
            break;
        }
        let x = raw[e >> 1u];
        let s0 = take(a, x.x, x.y, e, last.dim, last.stride, &bad);
        let s1 = take(s0.a, x.z, x.w, e + 1u, last.dim, last.stride, &bad);
        a = s1.a;
        let w0 = 2u * s0.o;
        let w1 = 2u * s1.o;
        dst[e >> 1u] = vec4<u32>(src[w0], src[w0 + 1u], src[w1], src[w1 + 1u]);
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
