// Part (shaders/lib, see gpu/shaders.py): the flat copy's params and entry
// point, shared by copy.wgsl and its shader-int64 twin copy64.wgsl, which
// differ only in the word (`src`, `dst` of vec4<u32> or vec4<u64>) and the
// constants WG, UNROLL and RUN they declare (see copy.wgsl for the layout).
//
// By hand: shared text of two hand-written kernels (copy.wgsl, copy64.wgsl).

struct Params {
    groups: u32,      // workgroups that copy (spans in this binding)
    groups_x: u32,    // workgroups per row of the dispatch grid
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let group = wg.y * params.groups_x + wg.x;
    if (group >= params.groups) {
        return;
    }
    let base = group * (WG * UNROLL) + (lid / RUN) * (RUN * UNROLL) + lid % RUN;
    for (var k = 0u; k < UNROLL; k = k + 1u) {
        let i = base + k * RUN;
        dst[i] = src[i];
    }
}
