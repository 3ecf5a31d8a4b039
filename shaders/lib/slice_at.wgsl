// Part (shaders/lib, see gpu/shaders.py): a slice's leading part in a
// whole-slice gather (lib/slice_walk.wgsl, gather_nd_rows.wgsl). The
// including shader declares `axes: array<vec4<u32>>` (per leading axis
// (dim, dstride, istride, 0)) and `params.outer` (leading axes).

// Slice p's leading part: its data word before the lookups, its index
// tuple's position, and its coordinate along the last leading axis.
struct At {
    off: u32,
    ip: u32,
    last: u32,
}

fn at(p: u32) -> At {
    var rest = p;
    var a = At(0u, 0u, 0u);
    for (var k = params.outer; k > 0u; k = k - 1u) {
        let ax = axes[k - 1u];
        let i = rest % ax.x;
        rest = rest / ax.x;
        a.off = a.off + i * ax.y;
        a.ip = a.ip + i * ax.z;
        if (k == params.outer) {
            a.last = i;
        }
    }
    return a;
}
