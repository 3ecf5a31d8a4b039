// Scatter in rounds, the bookkeeping passes around scatter_apply.wgsl
// (gpu/scatter_claims.py). A scatter applies its updates in index order
// (onnx.reference's loop), in rounds so that the result is the same on every
// run: in a round each target's earliest pending update u claims it (`claim`:
// atomicMax of ~u, so a cleared buffer (0) claims nothing, whatever order the
// invocations run in), is applied (scatter_apply.wgsl), then marked done and
// its claim cleared (`reset`). Updates to distinct targets run in parallel; a
// target's k-th update goes in round k. Between batches of rounds the pending
// updates are gathered into a list (`compact`), so a round costs what is left
// to do; their order there does not matter, since a claim compares the
// updates' own positions. status[1]: an update is still pending (the host
// stops when a round leaves none; with reduction none a second round means
// duplicate indices); status[2]: the next list's length.
//
// `band` (gpu/scatter_bands.py, an output larger than one binding, a band at
// a time): before a band's rounds, every update whose target lies outside
// [base, base + size) is marked done (so the rounds pass it by, as they pass
// by an applied one) and every other's target rebased onto the band, in
// `next`. The band's rounds are then the whole scatter's restricted to it.
//
// By hand: four passes of one algorithm on one bind group layout, a few
// atomics each; no generated kernel (gpu/render/elementwise.py) keeps state
// between dispatches.
//
// needs: (nothing beyond WebGPU)

#specialise WG: u32    // invocations per workgroup (gpu/scatter_claims.py's WG, the apply's too)
#specialise PASS: u32  // 0 band, 1 claim, 2 reset, 3 compact (gpu/scatter_claims.py)

struct Params {
    count: u32,     // pending updates this batch (entries of `list`, or all when direct)
    groups_x: u32,  // workgroups per row of the dispatch grid
    direct: u32,    // 1: invocation i is update i (the first batch); 0: update list[i]
    base: u32,      // band: the band's first data element
    size: u32,      // band: its elements
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<storage, read> targets: array<u32>;  // data element of each update
@group(0) @binding(1) var<storage, read_write> claim: array<atomic<u32>>;  // per data element: ~u of its earliest pending update u; 0: none
@group(0) @binding(2) var<storage, read_write> done: array<atomic<u32>>;  // one bit per update
@group(0) @binding(3) var<uniform> params: Params;
@group(0) @binding(4) var<storage, read> list: array<u32>;  // the pending updates (compact)
@group(0) @binding(5) var<storage, read_write> status: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> next: array<u32>;  // compact: the next list; band: the rebased targets

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wg.y * params.groups_x + wg.x) * WG + lid;
    if (i >= params.count) {
        return;
    }
    let u = select(list[i], i, params.direct != 0u);
    let bit = 1u << (u & 31u);
    if (PASS == 0u) {
        let t = targets[u];
        let out = t < params.base || t - params.base >= params.size;
        if (out) {
            atomicOr(&done[u >> 5u], bit);
        }
        next[u] = select(t - params.base, 0u, out);
        return;
    }
    if ((atomicLoad(&done[u >> 5u]) & bit) != 0u) {
        return;
    }
    if (PASS == 1u) {
        atomicMax(&claim[targets[u]], ~u);
    } else if (PASS == 2u) {
        // A winner clears its claim; a loser reads either its winner or 0,
        // never its own position, so it stays pending.
        let t = targets[u];
        if (atomicLoad(&claim[t]) == ~u) {
            atomicStore(&claim[t], 0u);
            atomicOr(&done[u >> 5u], bit);
        } else {
            atomicStore(&status[1], 1u);
        }
    } else {
        next[atomicAdd(&status[2], 1u)] = u;
    }
}
