// Part (shaders/lib, see gpu/shaders.py): the walk over the slices of a
// whole-slice gather (indexed_slices.wgsl, indexed_slabs.wgsl), each slice's
// start read from its index tuple, checked by lib/index_check.wgsl's `index`.
// The including shader declares `axes: array<Axis>` (lib/index_table.wgsl:
// per leading axis one Axis, then per lookup one Lookup),
// `params.outer` (leading axes) and `params.nlook` (lookups), and includes
// lib/index_check.wgsl first.
//
// By hand: shared slice walk of the slice kernels.

#include "lib/slice_at.wgsl"

// What every slice of an invocation needs, loaded once: storage loads are
// what Mesa's CPU drivers are slowest at.
struct Row {
    dim: u32,          // the last leading axis (0: none)
    dstride: u32,
    istride: u32,
    look0: Lookup,     // lookup 0
    look1: Lookup,     // lookup 1 (nlook > 1)
}

fn row() -> Row {
    var w = Row(0u, 0u, 0u, lookup(params.outer), Lookup(0u, 0u, 0u, 0u));
    if (params.outer > 0u) {
        let ax = axis(params.outer - 1u);
        w.dim = ax.dim;
        w.dstride = ax.dstride;
        w.istride = ax.istride;
    }
    if (params.nlook > 1u) {
        w.look1 = lookup(params.outer + 1u);
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
    var off = a.off + index(a.ip + w.look0.ioff, w.look0.bound) * w.look0.stride;
    if (params.nlook > 1u) {
        off = off + index(a.ip + w.look1.ioff, w.look1.bound) * w.look1.stride;
        for (var t = 2u; t < params.nlook; t = t + 1u) {
            let lk = lookup(params.outer + t);
            off = off + index(a.ip + lk.ioff, lk.bound) * lk.stride;
        }
    }
    return off;
}
