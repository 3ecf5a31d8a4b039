// Part (shaders/lib, see gpu/shaders.py): the walk over the slices of a
// whole-slice gather (indexed_slices.wgsl, indexed_slabs.wgsl), each slice's
// start read from its index tuple, checked by lib/index_check.wgsl's `index`.
// The including shader declares `axes: array<vec4<u32>>` (per leading axis
// (dim, dstride, istride, 0), then per lookup (stride, ioff, bound, 0)),
// `params.outer` (leading axes) and `params.nlook` (lookups), and includes
// lib/index_check.wgsl first.

#include "lib/slice_at.wgsl"

// What every slice of an invocation needs, loaded once: storage loads are
// what Mesa's CPU drivers are slowest at.
struct Row {
    dim: u32,          // the last leading axis (0: none)
    dstride: u32,
    istride: u32,
    look0: vec3<u32>,  // lookup 0: (stride, index offset, bound)
    look1: vec3<u32>,  // lookup 1 (nlook > 1)
}

fn row() -> Row {
    var w = Row(0u, 0u, 0u, axes[params.outer].xyz, vec3<u32>(0u));
    if (params.outer > 0u) {
        let ax = axes[params.outer - 1u];
        w.dim = ax.x;
        w.dstride = ax.y;
        w.istride = ax.z;
    }
    if (params.nlook > 1u) {
        w.look1 = axes[params.outer + 1u].xyz;
    }
    return w;
}

// The next slice: one add along the last leading axis until it ends.
fn next(a: At, w: Row, p: u32) -> At {
    if (a.last + 1u < w.dim) {
        return At(a.off + w.dstride, a.ip + w.istride, a.last + 1u);
    }
    return at(p);
}

// The data word where the slice at `a` starts: its tuple read and checked.
fn base(a: At, w: Row) -> u32 {
    var off = a.off + index(a.ip + w.look0.y, w.look0.z) * w.look0.x;
    if (params.nlook > 1u) {
        off = off + index(a.ip + w.look1.y, w.look1.z) * w.look1.x;
        for (var t = 2u; t < params.nlook; t = t + 1u) {
            let lk = axes[params.outer + t];
            off = off + index(a.ip + lk.y, lk.z) * lk.x;
        }
    }
    return off;
}
