// Index check: read int32 or int64 indices, check each against its axis and
// write it as a u32 element offset along that axis (negative ones wrapped).
//
// Run before any indexed gather or scatter reads an index, so an index out
// of range is found before anything is written. All 64 bits of an int64
// index count: 2^32 + 1 is out of range, never index 1. The first bad
// position (the smallest, whatever order the invocations run in) is kept
// with atomicMin in status[0], which the host reads back; the value itself
// the host reads from the index tensor at that one position.
//
// Index p (of this chunk, at `first` in the whole tensor) checks against
// bounds[((first + p) / inner) % period]: GatherND's last index axis has one
// bound per data axis (inner: that axis's stride, 1 unless the indices are
// in Fortran order), the other operators one bound.
//   mode 0: valid -d .. d-1, negative ones wrapped (Gather*, Scatter*);
//   mode 1: valid 0 .. d (ReverseSequence's lengths, TensorScatter's
//           write positions: the host passes the largest allowed value);
//   mode 2: valid 0 .. d-1 (Gather-1 and Scatter-9: no negative indices).
// swap: 1 when the index tensor is big-endian (bytes reversed per word, and
// an int64's two words exchanged).
//
// By hand: the generator (gpu/render/elementwise.py) computes values, not
// checks; here every index is checked in all 64 bits and the first bad
// position kept by atomicMin.
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 256u;

struct Params {
    count: u32,    // indices in this chunk
    wide: u32,     // 1: int64 (two words each), 0: int32
    groups_x: u32, // workgroups per row of the dispatch grid
    period: u32,   // entries of `bounds`
    mode: u32,     // 0: wrap, 1: 0 .. d, 2: 0 .. d-1
    first: u32,    // position of this chunk's first index in the tensor
    swap: u32,     // 1: big-endian
    inner: u32,    // stride of the axis the bounds run along
}

@group(0) @binding(0) var<storage, read> raw: array<u32>;
@group(0) @binding(1) var<storage, read_write> norm: array<u32>;
@group(0) @binding(2) var<storage, read_write> status: array<atomic<u32>>;
@group(0) @binding(3) var<uniform> params: Params;
@group(0) @binding(4) var<storage, read> bounds: array<u32>;

#include "lib/bswap.wgsl"

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let p = (wg.y * params.groups_x + wg.x) * WG + lid;
    if (p >= params.count) {
        return;
    }
    var lo: u32;
    var hi: u32;
    if (params.wide != 0u) {
        lo = raw[2u * p];
        hi = raw[2u * p + 1u];
        if (params.swap != 0u) {
            let t = bswap32(lo);
            lo = bswap32(hi);
            hi = t;
        }
    } else {
        lo = raw[p];
        if (params.swap != 0u) {
            lo = bswap32(lo);
        }
        hi = select(0u, 0xffffffffu, (lo >> 31u) != 0u);  // sign-extended
    }
    let at = params.first + p;
    let d = bounds[(at / params.inner) % params.period];
    var ok: bool;
    var v = lo;
    if (params.mode == 0u) {
        // 0 <= x < d, or -d <= x < 0 (hi all ones, lo >= 2^32 - d)
        let neg = hi == 0xffffffffu && lo != 0u && (0u - lo) <= d;
        ok = (hi == 0u && lo < d) || neg;
        v = select(lo, lo + d, neg);
    } else if (params.mode == 1u) {
        ok = hi == 0u && lo <= d;
    } else {
        ok = hi == 0u && lo < d;
    }
    if (!ok) {
        atomicMin(&status[0], at);
        return;
    }
    norm[at] = v;
}
