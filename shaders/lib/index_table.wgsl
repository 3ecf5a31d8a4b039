// Part (shaders/lib, see gpu/shaders.py): the rows of an indexed table
// (gpu/index_table.py), as the indexed gather (gpu/render/indexed.py), the whole-slice kernels
// (lib/slice_at.wgsl, gpu/render/slices.py, gpu/render/scatter_slices.py) and
// gpu/render/rows.py read them. The including shader declares
// `axes: array<vec4<u32>>`: per output (or leading) axis one Axis, then per
// lookup one Lookup, read by `axis` and `lookup` (WGSL has no unions: both
// are 16-byte rows of four u32s, and the host packs each kind by its own
// field names, gpu/index_table.py's TABLE_AXIS and TABLE_LOOKUP). A row is
// one vec4 load named by the accessors: declared as array<Axis>, lavapipe
// (Mesa 22.3) loaded the struct field by field, and indexed_slabs' Gather of
// rows ran at 0.92x (benchmarks/trees_ab.py --only "gather (rows)").
//
// By hand: one vec4 load per table row, shared by the indexed kernels.

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
    claim: u32,   // the stride in slices (gpu/render/scatter_slices.py's claims; 0 elsewhere)
}

// Row r of `axes` read as an Axis, and as a Lookup.
fn axis(r: u32) -> Axis {
    let a = axes[r];
    return Axis(a.x, a.y, a.z, a.w);
}

fn lookup(r: u32) -> Lookup {
    let a = axes[r];
    return Lookup(a.x, a.y, a.z, a.w);
}
