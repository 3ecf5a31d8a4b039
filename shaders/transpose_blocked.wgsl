// Blocked transpose for CPU adapters: 4 x 4 blocks of 32-bit elements
// transposed in registers, read and written as whole vec4<u32> words.
//
// On Mesa's CPU drivers (llvmpipe) each storage load or store is one
// scalar access per SIMD lane, behind its own bounds check: a kernel costs
// about what its accesses cost. gather.wgsl makes one 4-byte load and one
// 4-byte store per element, and the tiled kernel (transpose_tiled.wgsl)
// adds a workgroup-memory store and load and a barrier (workgroup memory is
// ordinary memory there). Here an invocation loads four 16-byte words
// (4 consecutive elements along the read axis `a`, from 4 rows along `l`),
// swaps rows and columns in registers and stores four 16-byte words (4
// consecutive elements along `l`, the innermost output axis): one access
// per 4 elements, as the flat copy (gpu/render/copy.py) makes.
//
// The host (gpu/tiled.py) sends a box here only when every offset is a
// whole word: 32-bit elements, the l extent a multiple of 4, the source
// stride of `a` 1 and of every other box axis a multiple of 4, the box and
// its source starting on a word. The a extent may end inside a block: the
// last block's rows past it are not stored (their loads read neighbours in
// the window, or past it, where WebGPU's bounds checks keep them in the
// buffer; those values are dropped). All of the box lies in the bound source.
// `swap` 4: big-endian elements, bytes reversed.
//
// Invocation layout: a workgroup takes WG consecutive blocks along a, for
// one block row along l and one outer index (both uniform: decomposed once
// per workgroup, as u32 division is a loop over the lanes on a CPU).
//
// By hand: the generator (gpu/render/elementwise.py) moves one element per
// access; here 4 x 4 blocks are transposed in registers, one vec4 access per
// 4 elements.
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 64u;

struct Params {
    groups: u32,      // workgroups that work: outer * blocks_l * spans_a
    groups_x: u32,    // workgroups per row of the dispatch grid
    first_word: u32,  // the box's first dst element (a multiple of 4)
    rank: u32,        // entries of `axes`
    axis0: u32,       // the box's first axis; axes before it are fixed
    dim0: u32,        // the box's extent along axis0
    at: u32,          // this dispatch's entries in `axes` start here
    a: u32,           // the read axis (source stride 1)
    blocks_a: u32,    // blocks along a: dim(a) / 4, rounded up
    blocks_l: u32,    // blocks along l: dim(l) / 4
    spans_a: u32,     // workgroups along a: blocks_a / WG, rounded up
    base: u32,        // source element of the box's first element, in the window
    swap: u32,        // 0, or 4: reverse each element's bytes
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@group(0) @binding(2) var<uniform> params: Params;
#include "lib/view_axes.wgsl"

fn dim(k: u32) -> u32 {
    return select(view_axis(params.at + k).dim, params.dim0, k == params.axis0);
}

fn bswap(x: vec4<u32>) -> vec4<u32> {
    return (x << vec4<u32>(24u)) | ((x & vec4<u32>(0xff00u)) << vec4<u32>(8u))
        | ((x >> vec4<u32>(8u)) & vec4<u32>(0xff00u)) | (x >> vec4<u32>(24u));
}

@compute @workgroup_size(64)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = wg.y * params.groups_x + wg.x;
    if (g >= params.groups) {
        return;
    }
    let span = g % params.spans_a;
    let rest = g / params.spans_a;
    let lb = rest % params.blocks_l;
    var o = rest / params.blocks_l;
    let ab = span * WG + lid;
    if (ab >= params.blocks_a) {
        return;
    }
    let last = params.rank - 1u;
    let a = params.a;
    // The outer index over the box axes other than a and l: source and
    // output element offsets, multiples of 4 (the host checked).
    var sb = params.base;
    var db = params.first_word;
    var inner = dim(last);
    var inner_a = 0u;
    for (var k = last; k > params.axis0; k = k - 1u) {
        let j = k - 1u;
        let d = dim(j);
        if (j == a) {
            inner_a = inner;
        } else {
            let i = o % d;
            o = o / d;
            sb = sb + i * view_axis(params.at + j).stride_lo;
            db = db + i * inner;
        }
        inner = inner * d;
    }
    let sl4 = view_axis(params.at + last).stride_lo >> 2u;  // the l stride in words
    let s = (sb >> 2u) + ab + 4u * lb * sl4;
    var r0 = src[s];
    var r1 = src[s + sl4];
    var r2 = src[s + 2u * sl4];
    var r3 = src[s + 3u * sl4];
    if (params.swap == 4u) {
        r0 = bswap(r0);
        r1 = bswap(r1);
        r2 = bswap(r2);
        r3 = bswap(r3);
    }
    let ia4 = inner_a >> 2u;  // output words per step along a
    let d = (db >> 2u) + 4u * ab * ia4 + lb;
    let rows = dim(a) - 4u * ab;  // 4 except in a last, partial block
    dst[d] = vec4<u32>(r0.x, r1.x, r2.x, r3.x);
    if (rows > 1u) {
        dst[d + ia4] = vec4<u32>(r0.y, r1.y, r2.y, r3.y);
    }
    if (rows > 2u) {
        dst[d + 2u * ia4] = vec4<u32>(r0.z, r1.z, r2.z, r3.z);
    }
    if (rows > 3u) {
        dst[d + 3u * ia4] = vec4<u32>(r0.w, r1.w, r2.w, r3.w);
    }
}
