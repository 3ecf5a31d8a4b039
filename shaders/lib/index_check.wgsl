// Part (shaders/lib, see gpu/shaders.py): an int64 index read from the index
// tensor as stored and checked, all 64 bits, as the indexed gather's (gpu/render/indexed.py) `index`
// checks them: a bad one keeps the smallest position in status[0]
// (atomicMin, whatever order the invocations run in) and reads as 0.
// The including shader declares: `raw: array<vec2<u32>>` (the int64 index
// tensor), `status: array<atomic<u32>>`, and `params.iswap` (1: big-endian
// indices) and `params.cmode` (0: wrap negatives, 1: 0 .. d, 2: 0 .. d-1).
//
// By hand: the one int64 check every indexed kernel shares (all 64 bits,
// smallest bad position).

#include "lib/bswap.wgsl"

// The int64 index at `pos` as an offset along an axis of `d` elements, checked.
fn index(pos: u32, d: u32) -> u32 {
    let x = raw[pos];
    var lo = x.x;
    var hi = x.y;
    if (params.iswap != 0u) {
        lo = bswap32(x.y);
        hi = bswap32(x.x);
    }
    var ok: bool;
    var v = lo;
    if (params.cmode == 0u) {
        let neg = hi == 0xffffffffu && lo != 0u && (0u - lo) <= d;
        ok = (hi == 0u && lo < d) || neg;
        v = select(lo, lo + d, neg);
    } else {
        ok = hi == 0u && (lo < d || (params.cmode == 1u && lo == d));
    }
    if (!ok) {
        atomicMin(&status[0], pos);
        v = 0u;
    }
    return v;
}
