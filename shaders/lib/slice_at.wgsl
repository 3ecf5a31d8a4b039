// Part (shaders/lib, see gpu/shaders.py): a slice's leading part in a
// whole-slice gather (gpu/render/slices.py, gpu/render/rows.py's NdRows).
// The including kernel declares `axes: array<vec4<u32>>`, read by `axis` and
// `lookup` (gpu/render/indices.py's table(): per leading axis one Axis, then
// the lookups) and `params.outer` (leading axes).
//
// By hand: shared slice arithmetic of the slice kernels.

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
        let ax = axis(k - 1u);
        let i = rest % ax.dim;
        rest = rest / ax.dim;
        a.off = a.off + i * ax.dstride;
        a.ip = a.ip + i * ax.istride;
        if (k == params.outer) {
            a.last = i;
        }
    }
    return a;
}

// What every slice of an invocation needs, loaded once (each kernel's `row()`):
// the last leading axis (dim 0: none) and lookups 0 and 1. Storage loads are
// what Mesa's CPU drivers are slowest at.
struct Row {
    dim: u32,
    dstride: u32,
    istride: u32,
    look0: Lookup,
    look1: Lookup,
}
