// Indexed gather by whole slices (GatherND): output slice p is a run of
// `W` words copied from the data, starting at the word
//     sum_k o_k * dstride_k  +  sum_t index(ip + ioff_t) * lstride_t
// where o is slice p's multi-index over the `outer` leading output axes
// (axes[0 .. outer], each an Axis of lib/index_table.wgsl, strides in words)
// and ip = sum_k o_k * istride_k its index tuple's position in the index
// tensor; lookup t is axes[outer + t], a Lookup (lstride = its stride, in words).
// The host (gpu/slices.py) takes this kernel only where every slice is a
// whole number of words, contiguous in the data, and every stride a whole
// number of words: the copy moves words, never elements, whatever their
// width, and reads an index tuple once per slice (once per invocation when
// a slice spans its words), not once per element.
//
// The raw int64 indices are read and checked here as indexed_gather.wgsl's
// `index` checks them, all 64 bits: a bad one keeps the smallest position
// in status[0] (atomicMin, whatever order the invocations run in) and reads
// 0. The output is one band (the host reads it back only if status[0] is
// untouched) and every slice has a word, so every index is read and checked.
//
// By hand: the generator (gpu/render/elementwise.py) copies elements; here
// whole words of a slice, an index tuple read once per slice.
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 256u;
const WORDS: u32 = 16u;

struct Params {
    words: u32,     // output words
    groups_x: u32,  // workgroups per row of the dispatch grid
    width: u32,     // W: words per slice
    outer: u32,     // leading output axes
    nlook: u32,     // indices per tuple
    iswap: u32,     // 1: big-endian indices
    cmode: u32,     // indices.wgsl's mode (0 wrap, 1 0 .. d, 2 0 .. d-1)
    pad0: u32,
}

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;
@group(0) @binding(3) var<storage, read> axes: array<vec4<u32>>;  // lib/index_table.wgsl
@group(0) @binding(4) var<storage, read> raw: array<vec2<u32>>;  // the int64 index tensor as stored
@group(0) @binding(5) var<storage, read_write> status: array<atomic<u32>>;  // first bad position

#include "lib/index_check.wgsl"

#include "lib/slice_walk.wgsl"

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let q0 = ((wg.y * params.groups_x + wg.x) * WG + lid) * WORDS;
    if (q0 >= params.words) {
        return;
    }
    let width = params.width;
    let w = row();
    var p = q0 / width;
    var k = q0 - p * width;
    var a = at(p);
    var b = base(a, w);
    let end = min(q0 + WORDS, params.words);
    for (var q = q0; q < end; q = q + 1u) {
        if (k == width) {
            p = p + 1u;
            k = 0u;
            a = next(a, w, p);
            b = base(a, w);
        }
        dst[q] = src[b + k];
        k = k + 1u;
    }
}
