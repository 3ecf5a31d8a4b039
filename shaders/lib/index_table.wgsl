// Part (shaders/lib, see gpu/shaders.py): the rows of an indexed table
// (gpu/index_table.py), as indexed_gather.wgsl, the whole-slice kernels
// (lib/slice_at.wgsl, lib/slice_walk.wgsl, scatter_slices.wgsl) and
// gather_nd_rows.wgsl read them. The including shader declares
// `axes: array<Axis>`: per output (or leading) axis one Axis, then per
// lookup one Lookup, read by `lookup` (WGSL has no unions: both are 16-byte
// rows of four u32s, and the host packs each kind by its own field names,
// layout.pack_rows(shader, "Axis" | "Lookup", ...)).

struct Axis {
    dim: u32,
    dstride: u32,  // data stride (elements, or words in the slice kernels)
    istride: u32,  // index stride: the axis' step in the index tensor
    pad0: u32,
}

struct Lookup {
    stride: u32,  // data stride of one step of the looked-up index
    ioff: u32,    // the index's offset from the element's index position
    bound: u32,   // the indexed axis' size (the checking kernels' range)
    claim: u32,   // the stride in slices (scatter_slices.wgsl's claims; 0 elsewhere)
}

// Row r of `axes` read as a Lookup (its fields in the order Axis's lie).
fn lookup(r: u32) -> Lookup {
    let a = axes[r];
    return Lookup(a.dim, a.dstride, a.istride, a.pad0);
}
