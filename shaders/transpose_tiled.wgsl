// Tiled transpose: one box of a strided view whose innermost output axis
// is not the source's innermost, through workgroup memory.
//
// The generic gather (gather.wgsl) writes the output in order and reads the
// source wherever the view points; when the innermost output axis `l` has a
// large source stride, every read lands on another cache line (and page).
// Here a workgroup takes a tile of the output: TILE elements along `l` by
// TILE / W along the box axis `a` whose source stride is 1 (W: 32-bit words
// per element). It reads the tile along `a` (consecutive invocations read
// consecutive source words), stores it in workgroup memory, and after a
// barrier writes it along `l` (consecutive invocations write consecutive
// output words): both sides are contiguous runs, as a GPU wants for
// coalescing and a CPU adapter for its caches. Tile rows are PITCH = 33
// words apart, so the column read of the second phase touches 32 different
// banks. The host (gpu/tiled.py) chooses this kernel for a box where the
// index map calls for it and gives every other box to gather.wgsl.
//
// Elements of 32, 64 or 128 bits (W = 1, 2, 4); `swap` (0, 4 or 8) reverses
// big-endian bytes within each unit as gather.wgsl does. All of the box's
// elements lie in the bound source (the host never sends a box that
// reaches outside it), so offsets are u32 and a negative stride is its two's
// complement: the sum wraps back into the window.
//
// The box (as in gather.wgsl): axis `axis0` for `dim0` steps and all of the
// axes after it, row-major in the output from dst word `first_word`; the
// other box axes (neither `a` nor `l = rank - 1`) are the tile's outer
// index, one per workgroup row of tiles.
//
// By hand: the generator (gpu/render/elementwise.py) has no workgroup memory or
// barrier; the tile is what makes both reads and writes contiguous.
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 256u;
const TILE: u32 = 32u;   // words per tile row; elements along l
const ROWS: u32 = 8u;    // tile rows one pass of the workgroup covers (WG / TILE)
const PITCH: u32 = 33u;  // words between tile rows: TILE + 1 against bank conflicts

struct Params {
    groups: u32,      // workgroups that work: outer * tiles_a * tiles_l
    groups_x: u32,    // workgroups per row of the dispatch grid
    first_word: u32,  // the box's first dst word
    rank: u32,        // entries of `axes`
    axis0: u32,       // the box's first axis; axes before it are fixed
    dim0: u32,        // the box's extent along axis0
    at: u32,          // this dispatch's entries in `axes` start here
    lg: u32,          // log2 of W, the 32-bit words per element (0, 1, 2)
    swap: u32,        // 0, or the byte-swap unit: 4 or 8
    a: u32,           // the tile's read axis (source stride 1 or -1)
    tiles_a: u32,     // tiles along a
    tiles_l: u32,     // tiles along l
    base: u32,        // source element of the box's first element, in the window
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;
#include "lib/view_axes.wgsl"

var<workgroup> tile: array<u32, 1056>;  // TILE * PITCH

fn dim(k: u32) -> u32 {
    return select(view_axis(params.at + k).dim, params.dim0, k == params.axis0);
}

#include "lib/bswap.wgsl"

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = wg.y * params.groups_x + wg.x;
    if (g >= params.groups) {
        return;  // the same for the whole workgroup: the barrier below stays uniform
    }
    let lg = params.lg;
    let last = params.rank - 1u;
    let a = params.a;
    let tl = g % params.tiles_l;
    let rest = g / params.tiles_l;
    let ta = rest % params.tiles_a;
    var o = rest / params.tiles_a;

    // The outer index, decomposed over the box axes other than a and l:
    // the tile's source element and output element at (a, l) = (0, 0).
    var sb = params.base;
    var db = 0u;
    var inner = dim(last);  // output elements per step of axis j
    var inner_a = 0u;
    for (var k = last; k > params.axis0; k = k - 1u) {
        let j = k - 1u;
        let d = dim(j);
        if (j == a) {
            inner_a = inner;
        } else {
            let i = o % d;
            o = o / d;
            sb = sb + i * view_axis(params.at + j).stride_lo;
            db = db + i * inner;
        }
        inner = inner * d;
    }

    let da = dim(a);
    let dl = dim(last);
    let sa = view_axis(params.at + a).stride_lo;     // 1 or 0xffffffff (-1)
    let sl = view_axis(params.at + last).stride_lo;
    let per_a = TILE >> lg;             // elements along a per tile
    let a0 = ta * per_a;
    let l0 = tl * TILE;
    let wmask = (1u << lg) - 1u;
    let flip = select(0u, params.swap / 4u - 1u, params.swap >= 4u);

    // Read: row r of the tile is l = l0 + r; its words are elements a0.. along a.
    let x = lid % TILE;
    let y = lid / TILE;  // constant divisors: shifts
    let ia = a0 + (x >> lg);
    let q = x & wmask;
    let swapped = params.swap >= 4u;
    // Trip counts the same in every invocation: Mesa's CPU drivers run 8
    // invocations in one SIMD register, and a loop whose count differs per
    // lane runs as a masked loop.
    for (var k = 0u; k < TILE / ROWS; k = k + 1u) {
        let r = y + k * ROWS;
        let il = l0 + r;
        if (ia < da && il < dl) {
            let s = sb + ia * sa + il * sl;
            let piece = src[(s << lg) + (q ^ flip)];
            tile[r * PITCH + x] = select(piece, bswap32(piece), swapped);
        }
    }
    workgroupBarrier();
    // Write: for each a, the tile's TILE elements along l are consecutive
    // output words; consecutive invocations write consecutive words.
    let row_shift = 5u + lg;  // log2 of the output words per a within the tile (TILE << lg)
    let row_mask = (1u << row_shift) - 1u;
    for (var k = 0u; k < TILE * TILE / WG; k = k + 1u) {
        let t = lid + k * WG;
        let al = t >> row_shift;  // no division: u32 division is a loop over the lanes on a CPU
        let within = t & row_mask;
        let ll = within >> lg;
        let qq = within & wmask;
        let ja = a0 + al;
        let jl = l0 + ll;
        if (ja < da && jl < dl) {
            let e = db + ja * inner_a + jl;
            dst[params.first_word + (e << lg) + qq] = tile[ll * PITCH + (al << lg) + qq];
        }
    }
}
