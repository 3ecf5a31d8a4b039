// Flat copy: dst[i] = src[i] for i in [0, params.count), in 16-byte words.
//
// Flatten and Unsqueeze never move an element: the output's row-major bytes
// are the input's. So one byte-level copy serves every fixed-width ONNX type
// (bool, int4 nibbles and complex128 alike). Buffers are padded to 16 bytes on
// the host and trimmed on readback.
//
// The grid may be 2-D when a chunk needs more than 65535 workgroups in x;
// invocations past `count` do nothing. Each invocation copies UNROLL words,
// strided by the workgroup's width so neighbouring invocations touch
// neighbouring memory.

const WG: u32 = 256u;
const UNROLL: u32 = 4u;

struct Params {
    count: u32,       // number of vec4<u32> words to copy
    groups_x: u32,    // workgroups per row of the dispatch grid
}

@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let group = wg.y * params.groups_x + wg.x;
    let base = group * (WG * UNROLL) + lid;
    for (var k = 0u; k < UNROLL; k = k + 1u) {
        let i = base + k * WG;
        if (i < params.count) {
            dst[i] = src[i];
        }
    }
}
