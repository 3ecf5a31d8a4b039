// ScatterElements with a reduction on 32- and 64-bit elements (float32,
// int32, uint32; int64, uint64, float64), one line per invocation:
// scatter_apply.wgsl's `lines` and `lines_raw` made for one width. The
// updates that differ only along the scatter axis are a line; only they can
// name the elements of their data line, so one invocation applying its
// line's updates in index order (along the axis) is onnx.reference's order,
// on every run, and lines run in parallel with disjoint targets. An element
// of whole words is written by its line alone: plain loads and stores, no
// atomics.
//
// One entry per arithmetic and width, each calling `walk` with them as
// constants, so the compiler folds the choice out of the loop: fadd fmul
// (float32, lib/f32_reduce.wgsl: NaN operands as numpy's scalar loop treats
// them), iadd imul (two's complement, wrapping: signed and unsigned alike),
// fmax fmin (Python's max() and min(), the reference's: the update replaces
// only if it compares greater (less); NaN on either side compares false;
// -0 == +0; by bit pattern, so a subnormal is never flushed), smax smin
// (signed), umax umin (unsigned); the same with 64 after the name for 64-bit
// elements (float64: max and min only; the op refuses its add and mul).
//
// Where the indices come from (`mode`): 0 `targets` holds each update's data
// element; 1 each update's checked index along the axis; 2 the raw int64
// index tensor (row-major), checked here with all 64 bits as indices.wgsl
// does (lib/index_check.wgsl: a bad one keeps the smallest position in
// status[0] by atomicMin; the host then discards the output).
// Line l starts at update (l / inner) * line * inner + l % inner and steps
// by inner; its data line (modes 1, 2) at (l / inner) * dlen * inner + l % inner.
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 64u;

struct Params {
    count: u32,       // lines
    groups_x: u32,
    mode: u32,        // 0 element offsets, 1 checked indices, 2 raw int64 indices
    default_nan: u32, // f32 bits of inf - inf on the host
    nan_first: u32,   // 1: of two NaN operands the element's wins, 0: the update's
    line: u32,        // updates per line
    inner: u32,       // the updates' stride along the line
    dlen: u32,        // the data's axis length (modes 1, 2)
    iswap: u32,       // mode 2: 1: the int64 indices are big-endian
    cmode: u32,       // mode 2: indices.wgsl's mode (0 wrap, 2 0 .. d-1)
    pad0: u32,
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

#include "lib/f32_reduce.wgsl"
#include "lib/int64_ops.wgsl"

// float bits (32, or 64 as (low, high) words) as an unsigned key in the
// floats' order (NaN excluded by the caller)
fn key(a: u32) -> u32 {
    return select(a | 0x80000000u, ~a, (a >> 31u) != 0u);
}

fn key64(a: vec2<u32>) -> vec2<u32> {
    return select(a | vec2<u32>(0u, 0x80000000u), ~a, (a.y >> 31u) != 0u);
}

// Python's max(a, b) (greater) or min(a, b) on float32 bits
fn fpick(a: u32, b: u32, greater: bool) -> u32 {
    let nan = (a & 0x7fffffffu) > 0x7f800000u || (b & 0x7fffffffu) > 0x7f800000u;
    let zeros = ((a | b) & 0x7fffffffu) == 0u;
    let ka = key(a);
    let kb = key(b);
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

fn combine(op: u32, a: u32, b: u32) -> u32 {
    switch op {
        case FADD: { return f32_op(a, b, false); }
        case FMUL: { return f32_op(a, b, true); }
        case IADD: { return a + b; }
        case IMUL: { return a * b; }
        case FMAX: { return fpick(a, b, true); }
        case FMIN: { return fpick(a, b, false); }
        case SMAX: { return select(a, b, bitcast<i32>(b) > bitcast<i32>(a)); }
        case SMIN: { return select(a, b, bitcast<i32>(b) < bitcast<i32>(a)); }
        case UMAX: { return max(a, b); }
        default: { return min(a, b); }
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

// wide: 64-bit elements (two words each)
fn walk(wg: vec3<u32>, lid: u32, op: u32, wide: bool) {
    let l = (wg.y * params.groups_x + wg.x) * WG + lid;
    if (l >= params.count) {
        return;
    }
    let inner = params.inner;
    let o = l / inner;
    let i = l - o * inner;
    var u = o * params.line * inner + i;
    let base = o * params.dlen * inner + i;
    for (var j = 0u; j < params.line; j = j + 1u) {
        let t = target_of(u, base);
        if (wide) {
            let w = 2u * t;
            let r = combine64(op, vec2<u32>(data[w], data[w + 1u]), vec2<u32>(updates[2u * u], updates[2u * u + 1u]));
            data[w] = r.x;
            data[w + 1u] = r.y;
        } else {
            data[t] = combine(op, data[t], updates[u]);
        }
        u = u + inner;
    }
}

@compute @workgroup_size(64)
fn lines_fadd(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) { walk(wg, lid, FADD, false); }

@compute @workgroup_size(64)
fn lines_fmul(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) { walk(wg, lid, FMUL, false); }

@compute @workgroup_size(64)
fn lines_iadd(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) { walk(wg, lid, IADD, false); }

@compute @workgroup_size(64)
fn lines_imul(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) { walk(wg, lid, IMUL, false); }

@compute @workgroup_size(64)
fn lines_fmax(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) { walk(wg, lid, FMAX, false); }

@compute @workgroup_size(64)
fn lines_fmin(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) { walk(wg, lid, FMIN, false); }

@compute @workgroup_size(64)
fn lines_smax(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) { walk(wg, lid, SMAX, false); }

@compute @workgroup_size(64)
fn lines_smin(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) { walk(wg, lid, SMIN, false); }

@compute @workgroup_size(64)
fn lines_umax(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) { walk(wg, lid, UMAX, false); }

@compute @workgroup_size(64)
fn lines_umin(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) { walk(wg, lid, UMIN, false); }

@compute @workgroup_size(64)
fn lines_iadd64(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) { walk(wg, lid, IADD, true); }

@compute @workgroup_size(64)
fn lines_imul64(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) { walk(wg, lid, IMUL, true); }

@compute @workgroup_size(64)
fn lines_fmax64(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) { walk(wg, lid, FMAX, true); }

@compute @workgroup_size(64)
fn lines_fmin64(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) { walk(wg, lid, FMIN, true); }

@compute @workgroup_size(64)
fn lines_smax64(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) { walk(wg, lid, SMAX, true); }

@compute @workgroup_size(64)
fn lines_smin64(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) { walk(wg, lid, SMIN, true); }

@compute @workgroup_size(64)
fn lines_umax64(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) { walk(wg, lid, UMAX, true); }

@compute @workgroup_size(64)
fn lines_umin64(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) { walk(wg, lid, UMIN, true); }
