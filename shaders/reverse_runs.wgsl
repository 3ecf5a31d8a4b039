// ReverseSequence by whole-word blocks: the data is (d0, d1, inner...) with
// the batch and time axes the first two, row-major; every (d0, d1) step is
// a contiguous block of `width` words (the inner elements, a whole number
// of words: the host, gpu/reverse_runs.py, checks). Each invocation copies
// WORDS consecutive output words, reading (and checking) its batch entry's
// length once per batch entry it meets, not once per element, and stepping
// its block coordinates by adds -- no per-element division or table walk,
// which is what the element kernel (indexed_gather.wgsl's `reverse`) costs
// Mesa's CPU drivers per element.
//
// Lengths are the raw int64 sequence_lens, all 64 bits checked against
// [0, bound]; a bad one keeps the smallest position in status[0] and reads 0
// (the host reads nothing back then). Every length is read: every batch
// entry owns at least one block, and every block at least one word.
//
// By hand: the generator (gpu/render/elementwise.py) has no sequence lengths;
// here a block's length is read and checked once and the words stepped by
// adds.
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 256u;
const WORDS: u32 = 16u;

struct Params {
    words: u32,     // output words
    groups_x: u32,  // workgroups per row of the dispatch grid
    width: u32,     // words per block
    d0: u32,        // axis 0's size
    d1: u32,        // axis 1's size
    time0: u32,     // 1: the time axis is axis 0 (batch axis 1); 0: the reverse
    iswap: u32,     // 1: big-endian lengths
    bound: u32,     // the time axis' size: the largest allowed length
}

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;
@group(0) @binding(3) var<storage, read> raw: array<vec2<u32>>;  // sequence_lens as stored (int64)
@group(0) @binding(4) var<storage, read_write> status: array<atomic<u32>>;  // first bad position

#include "lib/bswap.wgsl"

// Batch entry b's length, checked: 0 <= len <= bound, all 64 bits.
fn seq_len(b: u32) -> u32 {
    let x = raw[b];
    var lo = x.x;
    var hi = x.y;
    if (params.iswap != 0u) {
        lo = bswap32(x.y);
        hi = bswap32(x.x);
    }
    if (hi != 0u || lo > params.bound) {
        atomicMin(&status[0], b);
        return 0u;
    }
    return lo;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let q0 = ((wg.y * params.groups_x + wg.x) * WG + lid) * WORDS;
    if (q0 >= params.words) {
        return;
    }
    let width = params.width;
    let d1 = params.d1;
    let time0 = params.time0 != 0u;
    let tstride = select(1u, d1, time0);  // blocks per time step
    var p = q0 / width;  // the block
    var k = q0 - p * width;  // the word in it
    var c0 = p / d1;
    var c1 = p - c0 * d1;
    var b = select(c0, c1, time0);
    var len = seq_len(b);
    let end = min(q0 + WORDS, params.words);
    for (var q = q0; q < end; q = q + 1u) {
        if (k == width) {
            k = 0u;
            p = p + 1u;
            c1 = c1 + 1u;
            if (c1 == d1) {
                c1 = 0u;
                c0 = c0 + 1u;
            }
            let nb = select(c0, c1, time0);
            if (nb != b) {
                b = nb;
                len = seq_len(b);
            }
        }
        let t = select(c1, c0, time0);
        var sp = p;
        if (t < len) {
            sp = p + (len - 1u - 2u * t) * tstride;  // u32 wrap: the sum is the mirrored block
        }
        dst[q] = src[sp * width + k];
        k = k + 1u;
    }
}
