// ScatterElements with a reduction, one line (or a few adjacent lines) an
// invocation: scatter_apply.wgsl's `lines` and `lines_raw` made for each
// type. The updates that differ only along the scatter axis are a line;
// only they can name the elements of their data line, so one invocation
// applying its line's updates in index order (along the axis) is
// onnx.reference's order, on every run, and lines run in parallel with
// disjoint targets. A word is written by one invocation alone: plain loads
// and stores, no atomics. For 8- and 16-bit elements the host makes it so
// (gpu/scatter_lines.py's group): with the axis last, lines of whole words
// (the axis' length a multiple of a word's elements), one an invocation;
// else `group` adjacent lines an invocation (`inner` a multiple of a word's
// elements, so each word's elements lie in those lines), walked one after
// the other.
//
// One kernel per arithmetic and width: the host sets OP and BITS (the
// variants by name: gpu/scatter_lines.py's VARIANTS), so the compiler folds
// the choice out of the loop: fadd fmul
// (float32, lib/f32_reduce.wgsl: NaN operands as numpy's scalar loop treats
// them), iadd imul (two's complement, wrapping: signed and unsigned alike),
// fmax fmin (Python's max() and min(), the reference's: the update replaces
// only if it compares greater (less); NaN on either side compares false;
// -0 == +0; by bit pattern, so a subnormal is never flushed), smax smin
// (signed), umax umin (unsigned); the same with 64, 16 or 8 after the name
// for those widths (float64: max and min only; the op refuses its add and
// mul); badd bmul (bool: or, and; its max and min are umax8 umin8); hadd
// hmul hmax hmin (float16) and bfadd .. bfmin (bfloat16): add and mul in f32
// (lib/f16_convert.wgsl; exact), max and min on their bits.
//
// Where the indices come from (`mode`): 0 `targets` holds each update's data
// element; 1 each update's checked index along the axis; 2 the raw int64
// index tensor (row-major), checked here with all 64 bits as indices.wgsl
// does (lib/index_check.wgsl: a bad one keeps the smallest position in
// status[0] by atomicMin; the host then discards the output).
// Line l starts at update (l / inner) * line * inner + l % inner and steps
// by inner; its data line (modes 1, 2) at (l / inner) * dlen * inner + l % inner.
//
// By hand: the generator (gpu/render/elementwise.py) writes each output once;
// here a line's updates combine in index order, in one invocation.
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 64u;
#specialise OP: u32    // the arithmetic: FADD .. BFMIN below
#specialise BITS: u32  // the element width: 8, 16, 32 or 64

struct Params {
    count: u32,       // invocations (lines / group)
    groups_x: u32,
    mode: u32,        // 0 element offsets, 1 checked indices, 2 raw int64 indices
    default_nan: u32, // f32 bits of inf - inf on the host
    nan_first: u32,   // 1: of two NaN operands the element's wins, 0: the update's
    line: u32,        // updates per line
    inner: u32,       // the updates' stride along the line
    dlen: u32,        // the data's axis length (modes 1, 2)
    iswap: u32,       // mode 2: 1: the int64 indices are big-endian
    cmode: u32,       // mode 2: indices.wgsl's mode (0 wrap, 2 0 .. d-1)
    group: u32,       // lines an invocation (count is invocations)
    pad1: u32,
}

@group(0) @binding(0) var<storage, read> targets: array<u32>;
@group(0) @binding(1) var<uniform> params: Params;
@group(0) @binding(2) var<storage, read> updates: array<u32>;
@group(0) @binding(3) var<storage, read_write> data: array<u32>;
@group(0) @binding(4) var<storage, read_write> status: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read> raw: array<vec2<u32>>;  // mode 2: `targets` again, an index a load

const FADD: u32 = 0u;
const FMUL: u32 = 1u;
const IADD: u32 = 2u;
const IMUL: u32 = 3u;
const FMAX: u32 = 4u;
const FMIN: u32 = 5u;
const SMAX: u32 = 6u;
const SMIN: u32 = 7u;
const UMAX: u32 = 8u;
const UMIN: u32 = 9u;
const BADD: u32 = 10u;
const BMUL: u32 = 11u;
const HADD: u32 = 12u;
const HMUL: u32 = 13u;
const HMAX: u32 = 14u;
const HMIN: u32 = 15u;
const BFADD: u32 = 16u;
const BFMUL: u32 = 17u;
const BFMAX: u32 = 18u;
const BFMIN: u32 = 19u;

#include "lib/f32_reduce.wgsl"
#include "lib/int64_ops.wgsl"
#include "lib/f16_convert.wgsl"

// float bits (of the width whose sign bit is `sign`; 64 as (low, high)
// words) as an unsigned key in the floats' order (NaN excluded by the caller)
fn key(a: u32, sign: u32) -> u32 {
    return select(a | sign, ~a & (sign | (sign - 1u)), (a & sign) != 0u);
}

fn key64(a: vec2<u32>) -> vec2<u32> {
    return select(a | vec2<u32>(0u, 0x80000000u), ~a, (a.y >> 31u) != 0u);
}

// Python's max(a, b) (greater) or min(a, b) on float bits: float32, float16
// or bfloat16 by their sign bit and infinity
fn fpick(a: u32, b: u32, greater: bool, sign: u32, inf: u32) -> u32 {
    let m = sign - 1u;
    let nan = (a & m) > inf || (b & m) > inf;
    let zeros = ((a | b) & m) == 0u;
    let ka = key(a, sign);
    let kb = key(b, sign);
    let wins = select((kb < ka), (kb > ka), greater);
    return select(a, b, wins && !nan && !zeros);
}

// the same on float64 bits
fn fpick64(a: vec2<u32>, b: vec2<u32>, greater: bool) -> vec2<u32> {
    let m = vec2<u32>(0xffffffffu, 0x7fffffffu);
    let inf = vec2<u32>(0u, 0x7ff00000u);
    let nan = ult(inf, a & m) || ult(inf, b & m);
    let zeros = all(((a | b) & m) == vec2<u32>(0u));
    let ka = key64(a);
    let kb = key64(b);
    let wins = select(ult(kb, ka), ult(ka, kb), greater);
    return select(a, b, wins && !nan && !zeros);
}

// `bits` (8, 16, 32) wide a and b, zero-extended; the result's low `bits` count
fn combine(op: u32, a: u32, b: u32, bits: u32) -> u32 {
    let up = 32u - bits;
    switch op {
        case FADD: { return f32_op(a, b, false); }
        case FMUL: { return f32_op(a, b, true); }
        case IADD: { return a + b; }
        case IMUL: { return a * b; }
        case FMAX: { return fpick(a, b, true, 0x80000000u, 0x7f800000u); }
        case FMIN: { return fpick(a, b, false, 0x80000000u, 0x7f800000u); }
        case SMAX: { return select(a, b, (bitcast<i32>(b << up) >> up) > (bitcast<i32>(a << up) >> up)); }
        case SMIN: { return select(a, b, (bitcast<i32>(b << up) >> up) < (bitcast<i32>(a << up) >> up)); }
        case UMAX: { return max(a, b); }
        case UMIN: { return min(a, b); }
        case BADD: { return select(0u, 1u, (a | b) != 0u); }
        case BMUL: { return select(0u, 1u, (a & b) != 0u); }
        case HADD: { return float_to_half(f32_op(half_to_float(a), half_to_float(b), false)); }
        case HMUL: { return float_to_half(f32_op(half_to_float(a), half_to_float(b), true)); }
        case HMAX: { return fpick(a, b, true, 0x8000u, 0x7c00u); }
        case HMIN: { return fpick(a, b, false, 0x8000u, 0x7c00u); }
        case BFADD: { return float_to_bfloat16(f32_op(a << 16u, b << 16u, false)); }
        case BFMUL: { return float_to_bfloat16(f32_op(a << 16u, b << 16u, true)); }
        case BFMAX: { return fpick(a, b, true, 0x8000u, 0x7f80u); }
        default: { return fpick(a, b, false, 0x8000u, 0x7f80u); }
    }
}

fn combine64(op: u32, a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    switch op {
        case IADD: { return add64(a, b); }
        case IMUL: { return mul64(a, b); }
        case FMAX: { return fpick64(a, b, true); }
        case FMIN: { return fpick64(a, b, false); }
        case SMAX: { return select(a, b, slt(a, b)); }
        case SMIN: { return select(a, b, slt(b, a)); }
        case UMAX: { return select(a, b, ult(a, b)); }
        default: { return select(a, b, ult(b, a)); }
    }
}

#include "lib/index_check.wgsl"

// The data element update u goes to (mode 2: its index checked: a bad one
// is recorded and reads as 0, and the host discards the output)
fn target_of(u: u32, base: u32) -> u32 {
    switch params.mode {
        case 0u: { return targets[u]; }
        case 1u: { return base + targets[u] * params.inner; }
        default: { return base + index(u, params.dlen) * params.inner; }
    }
}

// Invocation g's lines, each in index order; `bits`: the element width
fn walk(wg: vec3<u32>, lid: u32, op: u32, bits: u32) {
    let g = (wg.y * params.groups_x + wg.x) * WG + lid;
    if (g >= params.count) {
        return;
    }
    for (var k = 0u; k < params.group; k = k + 1u) {
        walk_line(g * params.group + k, op, bits);
    }
}

fn walk_line(l: u32, op: u32, bits: u32) {
    let inner = params.inner;
    let o = l / inner;
    let i = l - o * inner;
    var u = o * params.line * inner + i;
    let base = o * params.dlen * inner + i;
    let lg = 5u - countTrailingZeros(bits);  // log2 of elements a word (narrow)
    let m = (1u << (bits & 31u)) - 1u;
    for (var j = 0u; j < params.line; j = j + 1u) {
        let t = target_of(u, base);
        if (bits == 64u) {
            let w = 2u * t;
            let r = combine64(op, vec2<u32>(data[w], data[w + 1u]), vec2<u32>(updates[2u * u], updates[2u * u + 1u]));
            data[w] = r.x;
            data[w + 1u] = r.y;
        } else if (bits == 32u) {
            data[t] = combine(op, data[t], updates[u], 32u);
        } else {
            let w = t >> lg;
            let shift = (t & ((1u << lg) - 1u)) * bits;
            let b = (updates[u >> lg] >> ((u & ((1u << lg) - 1u)) * bits)) & m;
            let old = data[w];
            let r = combine(op, (old >> shift) & m, b, bits) & m;
            data[w] = (old & ~(m << shift)) | (r << shift);
        }
        u = u + inner;
    }
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    walk(wg, lid, OP, BITS);
}
