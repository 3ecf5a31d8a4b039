// Scatter into an output larger than one binding, one band at a time
// (gpu/scatter_bands.py): before a band's rounds, every update whose target
// lies outside the band [base, base + size) is marked done (so the claim,
// apply and reset kernels pass it by, as they pass by an applied one), and
// every other's target is rebased onto the band. The band's rounds are then
// the whole scatter's rounds restricted to it: a target's updates all fall
// in its one band, in the same index order.
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 256u;

struct Params {
    count: u32,     // updates
    groups_x: u32,  // workgroups per row of the dispatch grid
    base: u32,      // the band's first data element
    size: u32,      // its elements
}

@group(0) @binding(0) var<storage, read> targets: array<u32>;  // data element of each update
@group(0) @binding(1) var<storage, read_write> band_targets: array<u32>;  // the same, in the band
@group(0) @binding(2) var<storage, read_write> done: array<atomic<u32>>;  // one bit per update (cleared)
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let u = (wg.y * params.groups_x + wg.x) * WG + lid;
    if (u >= params.count) {
        return;
    }
    let t = targets[u];
    if (t < params.base || t - params.base >= params.size) {
        atomicOr(&done[u >> 5u], 1u << (u & 31u));
        band_targets[u] = 0u;
        return;
    }
    band_targets[u] = t - params.base;
}
