// Part (shaders/lib, see gpu/shaders.py): the index check's int64 check (render/indices.py)
// folded for kernels that read several indices an invocation
// (gpu/render/rows.py): `folded` wraps and
// checks one index given as its two words, with no branch and no atomic
// (render/indices.py's REPORT writes the invocation's smallest bad position once).
// The including shader declares `status: array<atomic<u32>>` and
// `params.iswap` (1: big-endian indices), and holds lib/bswap.wgsl.
//
// By hand: the check of render/indices.py's checked_index, folded for kernels that add
// many indices.

// The int64 index (lo, hi) at position `pos` wrapped into [0, d), checked:
// a bad one lowers `bad` to its position and reads 0. No branch and no
// atomic here: the invocation reports its smallest bad position once
// (`report`), where an atomic per index cost Mesa's CPU drivers a loop over
// the lanes each time.
fn folded(lo0: u32, hi0: u32, pos: u32, d: u32, bad: ptr<function, u32>) -> u32 {
    let swap = params.iswap != 0u;
    let lo = select(lo0, bswap32(hi0), swap);
    let hi = select(hi0, bswap32(lo0), swap);
    let neg = hi == 0xffffffffu && lo != 0u && (0u - lo) <= d;
    let ok = (hi == 0u && lo < d) || neg;
    *bad = min(*bad, select(pos, 0xffffffffu, ok));
    return select(0u, select(lo, lo + d, neg), ok);
}
