// Part (shaders/lib, see gpu/shaders.py): the axes table of a view
// (gather.wgsl, transpose_tiled.wgsl, transpose_blocked.wgsl bind one
// buffer): per output axis of the view its extent and the source's stride
// along it, in elements, a 64-bit two's complement integer. gpu/gather.py
// packs the records by these names (gpu/layout.py).
//
// By hand: shared axes table of the strided kernels.

struct Axis {
    dim: u32,
    stride_lo: u32,
    stride_hi: u32,
    pad0: u32,
}

@group(0) @binding(3) var<storage, read> axes: array<vec4<u32>>;

// Row r of `axes` as an Axis: one vec4 load per row (lib/index_table.wgsl says why).
fn view_axis(r: u32) -> Axis {
    let a = axes[r];
    return Axis(a.x, a.y, a.z, a.w);
}

// The stride of axes[i] as (low, high) words.
fn stride64(i: u32) -> vec2<u32> {
    let a = view_axis(i);
    return vec2<u32>(a.stride_lo, a.stride_hi);
}
