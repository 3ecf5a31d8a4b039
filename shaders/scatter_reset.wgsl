// Scatter, step 3 of a round (see scatter_claim.wgsl): the round's winners
// are marked done and their claims cleared; status[1] is set when an update
// is still pending (the host stops when a round leaves none; with
// reduction none a second round means duplicate indices).
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 256u;

struct Params {
    count: u32,     // pending updates this batch
    groups_x: u32,
    bits: u32,
    direct: u32,    // 1: invocation i is update i; 0: update list[i]
}

@group(0) @binding(0) var<storage, read> targets: array<u32>;
@group(0) @binding(1) var<storage, read_write> claim: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> done: array<atomic<u32>>;
@group(0) @binding(3) var<uniform> params: Params;
@group(0) @binding(4) var<storage, read_write> status: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read> list: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wg.y * params.groups_x + wg.x) * WG + lid;
    if (i >= params.count) {
        return;
    }
    let u = select(list[i], i, params.direct != 0u);
    let bit = 1u << (u & 31u);
    if ((atomicLoad(&done[u >> 5u]) & bit) != 0u) {
        return;
    }
    let t = targets[u];
    // A winner clears its claim; a loser reads either its winner or 0,
    // never its own position, so it stays pending.
    if (atomicLoad(&claim[t]) == ~u) {
        atomicStore(&claim[t], 0u);
        atomicOr(&done[u >> 5u], bit);
    } else {
        atomicStore(&status[1], 1u);
    }
}
