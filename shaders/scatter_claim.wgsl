// Scatter, step 1 of a round: every pending update claims its target.
//
// A scatter applies its updates in index order (onnx.reference's loop), and
// runs in rounds so that the result is the same on every run: in a round
// each target's earliest pending update (the smallest update position u, by
// atomicMax of ~u, so a cleared buffer (0) claims nothing: the same whatever order the invocations run in) is the one
// applied (scatter_apply.wgsl), then marked done and its claim cleared
// (scatter_reset.wgsl). Updates to distinct targets run in parallel; a
// target's k-th update goes in round k. Between batches of rounds the
// pending updates are gathered into a list (scatter_compact.wgsl), so a
// round costs what is left to do; their order there does not matter, since
// a claim compares the updates' own positions.
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 256u;

struct Params {
    count: u32,     // pending updates this batch (entries of `list`, or all when direct)
    groups_x: u32,  // workgroups per row of the dispatch grid
    bits: u32,
    direct: u32,    // 1: invocation i is update i (the first batch); 0: update list[i]
}

@group(0) @binding(0) var<storage, read> targets: array<u32>;  // data element of each update
@group(0) @binding(1) var<storage, read_write> claim: array<atomic<u32>>;  // per data element: ~u of its earliest pending update u; 0: none
@group(0) @binding(2) var<storage, read_write> done: array<atomic<u32>>;  // one bit per update
@group(0) @binding(3) var<uniform> params: Params;
@group(0) @binding(4) var<storage, read> list: array<u32>;  // the pending updates (scatter_compact.wgsl)

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wg.y * params.groups_x + wg.x) * WG + lid;
    if (i >= params.count) {
        return;
    }
    let u = select(list[i], i, params.direct != 0u);
    if ((atomicLoad(&done[u >> 5u]) & (1u << (u & 31u))) != 0u) {
        return;
    }
    atomicMax(&claim[targets[u]], ~u);
}
