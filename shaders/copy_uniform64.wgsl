// Flat copy through uniform windows: dst[i] = src[i], in 32-byte words
// (vec4<u64>: needs the shader-int64 feature).
//
// The widest word a store can move on Mesa's CPU drivers, where every store
// is a per-lane loop: twice the bytes per iteration of copy_uniform.wgsl.
//
// Same job as copy.wgsl, shaped for CPU drivers (Mesa's lavapipe and
// llvmpipe): they compile a storage-buffer load into a per-lane scalar loop,
// but a uniform-buffer load into a vector gather. So the source is read
// through WINDOWS uniform bindings of 64 KiB each (the WebGPU default
// maxUniformBufferBindingSize); the host slides them along the source buffer
// with dynamic offsets, one dispatch per span of WINDOWS windows, and the
// destination binding (a storage buffer, also at a dynamic offset) covers
// the same span.
//
// Buffers are padded to whole spans on the host, so there is no bounds check:
// bytes past the tensor are copied into padding that is never read back.

const WG: u32 = 256u;
const WINDOWS: u32 = 4u;
const WINDOW_WORDS: u32 = 2048u;  // 64 KiB of vec4<u64>
const WORD_BYTES: u32 = 32u;

@group(0) @binding(0) var<storage, read_write> dst: array<vec4<u64>>;
@group(0) @binding(1) var<uniform> w0: array<vec4<u64>, WINDOW_WORDS>;
@group(0) @binding(2) var<uniform> w1: array<vec4<u64>, WINDOW_WORDS>;
@group(0) @binding(3) var<uniform> w2: array<vec4<u64>, WINDOW_WORDS>;
@group(0) @binding(4) var<uniform> w3: array<vec4<u64>, WINDOW_WORDS>;

// One dispatch: WINDOW_WORDS / WG workgroups; invocation i copies word i of
// every window, so neighbouring invocations touch neighbouring memory.
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    dst[i] = w0[i];
    dst[WINDOW_WORDS + i] = w1[i];
    dst[2u * WINDOW_WORDS + i] = w2[i];
    dst[3u * WINDOW_WORDS + i] = w3[i];
}
