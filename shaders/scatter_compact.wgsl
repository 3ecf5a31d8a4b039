// Scatter, between batches of rounds (see scatter_claim.wgsl): the updates
// still pending, appended to the next list. The order the appends land in
// varies from run to run and does not matter: the rounds compare the
// updates' own positions. status[2] counts them, for the host's next batch.
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 256u;

struct Params {
    count: u32,     // entries this batch ran over
    groups_x: u32,
    bits: u32,
    direct: u32,    // 1: entry i is update i; 0: update list[i]
}

@group(0) @binding(0) var<storage, read> done: array<u32>;  // one bit per update
@group(0) @binding(1) var<uniform> params: Params;
@group(0) @binding(2) var<storage, read> list: array<u32>;
@group(0) @binding(3) var<storage, read_write> next: array<u32>;
@group(0) @binding(4) var<storage, read_write> status: array<atomic<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wg.y * params.groups_x + wg.x) * WG + lid;
    if (i >= params.count) {
        return;
    }
    let u = select(list[i], i, params.direct != 0u);
    if ((done[u >> 5u] & (1u << (u & 31u))) == 0u) {
        next[atomicAdd(&status[2], 1u)] = u;
    }
}
