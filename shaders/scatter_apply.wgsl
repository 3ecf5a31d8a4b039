// Scatter, step 2 of a round (see scatter_claims.wgsl): each target's
// winning update is combined with the element there: none (replace), add,
// mul, max or min, exactly as onnx.reference's numpy code computes them.
//
// Winners have distinct targets, so an element of 32 bits or more has one
// writer; narrower elements share words with other targets, and are
// replaced by compare-exchange on their word (only their bits change, so
// the result does not depend on the order).
//
// Arithmetic by class (`cls`): 0 unsigned, 1 signed (wrapping, two's
// complement, 64-bit in u32 pairs), 2 IEEE float (16, 32, 64 bits), 3
// bool (add = or, mul = and, as numpy), 4 bfloat16. max and min compare bit
// patterns, so they are exact for every float width; `numpy` 1 takes
// np.maximum's rule (a NaN on either side wins, first one first), 0 Python's
// max() (ScatterElements' reference: the update replaces only if it compares
// greater). add and mul run in f32 for float32, float16 and bfloat16
// (float16 converted as numpy converts, bfloat16 as ml_dtypes does, exactly; f32 is wide enough that rounding twice is
// exact); a NaN operand gives that NaN quieted and, when both are NaN, the
// first (`nan_first` 1) or the second: numpy's scalar and array loops differ
// there, so the host asks its numpy which (gpu/scatter.py); an invalid
// operation gives `default_nan` (the host's).
//
// By hand: the generator (gpu/render/elementwise.py) keeps no state between
// dispatches; here the round's winners combine as numpy does, its NaN rules
// included.
//
// needs: (nothing beyond WebGPU)

#specialise WG: u32  // invocations per workgroup (gpu/scatter_claims.py's WG)

struct Params {
    count: u32,
    groups_x: u32,
    bits: u32,        // element width: 2 .. 128
    kind: u32,        // 0 none, 1 add, 2 mul, 3 max, 4 min
    cls: u32,
    numpy: u32,
    default_nan: u32, // f32 bits of inf - inf on the host
    nan_first: u32,   // 1: of two NaN operands the element's wins, 0: the update's
    direct: u32,      // 1: invocation i is update i; 0: update list[i] (scatter_claims.wgsl)
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<storage, read> targets: array<u32>;
@group(0) @binding(1) var<storage, read> claim: array<u32>;
@group(0) @binding(2) var<storage, read> done: array<u32>;
@group(0) @binding(3) var<uniform> params: Params;
@group(0) @binding(4) var<storage, read> updates: array<u32>;
@group(0) @binding(5) var<storage, read_write> data: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> status: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read> list: array<u32>;

#include "lib/int64_ops.wgsl"

// The value's bits widened to 64 (sign-extended for signed classes).
fn widen(v: vec2<u32>, bits: u32) -> vec2<u32> {
    if (bits >= 64u) {
        return v;
    }
    let m = select((1u << bits) - 1u, 0xffffffffu, bits == 32u);
    let x = v.x & m;
    if (params.cls == 1u && (x >> (bits - 1u)) != 0u) {
        return vec2<u32>(x | ~m, 0xffffffffu);
    }
    return vec2<u32>(x, 0u);
}

// IEEE layout of a float of `bits` (bf16: 8 exponent bits) as 64-bit masks.
fn sign_bit(bits: u32) -> vec2<u32> {
    if (bits == 64u) {
        return vec2<u32>(0u, 0x80000000u);
    }
    return vec2<u32>(1u << (bits - 1u), 0u);
}

fn inf_bits(bits: u32) -> vec2<u32> {
    if (bits == 64u) {
        return vec2<u32>(0u, 0x7ff00000u);
    }
    if (bits == 32u) {
        return vec2<u32>(0x7f800000u, 0u);
    }
    return vec2<u32>(select(0x7c00u, 0x7f80u, params.cls == 4u), 0u);
}

fn fmag(a: vec2<u32>, bits: u32) -> vec2<u32> {
    return a & ~sign_bit(bits);
}

fn fnan(a: vec2<u32>, bits: u32) -> bool {
    return ult(inf_bits(bits), fmag(a, bits));
}

// a < b for floats that are not NaN (-0 == +0)
fn flt(a: vec2<u32>, b: vec2<u32>, bits: u32) -> bool {
    let ma = fmag(a, bits);
    let mb = fmag(b, bits);
    if (all(ma == vec2<u32>(0u)) && all(mb == vec2<u32>(0u))) {
        return false;
    }
    let sa = any((a & sign_bit(bits)) != vec2<u32>(0u));
    let sb = any((b & sign_bit(bits)) != vec2<u32>(0u));
    if (sa != sb) {
        return sa;
    }
    return select(ult(ma, mb), ult(mb, ma), sa);
}

fn less(a: vec2<u32>, b: vec2<u32>, bits: u32) -> bool {
    if (params.cls == 2u || params.cls == 4u) {
        return flt(a, b, bits);
    }
    if (params.cls == 1u) {
        return slt(a, b);
    }
    return ult(a, b);
}

fn is_nan(a: vec2<u32>, bits: u32) -> bool {
    return (params.cls == 2u || params.cls == 4u) && fnan(a, bits);
}

// max (want_greater) or min of the element a and the update b
fn pick(a: vec2<u32>, b: vec2<u32>, bits: u32, greater: bool) -> vec2<u32> {
    if (params.numpy != 0u) {
        if (is_nan(a, bits)) {
            return a;
        }
        if (is_nan(b, bits)) {
            return b;
        }
        // np.maximum(a, b) = a > b ? a : b; np.minimum(a, b) = a < b ? a : b
        return select(b, a, select(less(a, b, bits), less(b, a, bits), greater));
    }
    // Python: max(a, b) = b if b > a else a; min(a, b) = b if b < a else a
    if (is_nan(a, bits) || is_nan(b, bits)) {
        return a;
    }
    return select(a, b, select(less(b, a, bits), less(a, b, bits), greater));
}

#include "lib/f16_convert.wgsl"

#include "lib/f32_reduce.wgsl"

fn combine(a: vec2<u32>, b: vec2<u32>, bits: u32) -> vec2<u32> {
    let k = params.kind;
    if (k == 0u) {
        return b;
    }
    if (k >= 3u) {
        return pick(a, b, bits, k == 3u);
    }
    let mul = k == 2u;
    if (params.cls == 3u) {  // bool: numpy's add is or, mul is and
        let x = select(a.x | b.x, a.x & b.x, mul);
        return vec2<u32>(select(0u, 1u, x != 0u), 0u);
    }
    if (params.cls == 2u) {
        if (bits == 32u) {
            return vec2<u32>(f32_op(a.x, b.x, mul), 0u);
        }
        // float16 (the host allows add and mul on no other float)
        return vec2<u32>(float_to_half(f32_op(half_to_float(a.x), half_to_float(b.x), mul)), 0u);
    }
    if (params.cls == 4u) {  // bfloat16: in f32 (exact widening), back as ml_dtypes rounds
        return vec2<u32>(float_to_bfloat16(f32_op(a.x << 16u, b.x << 16u, mul)), 0u);
    }
    return select(add64(a, b), mul64(a, b), mul);
}

fn update_at(u: u32, bits: u32) -> vec2<u32> {
    if (bits >= 32u) {
        let w = u * (bits / 32u);
        return vec2<u32>(updates[w], select(0u, updates[w + 1u], bits >= 64u));
    }
    let lg = 5u - countTrailingZeros(bits);
    let m = (1u << bits) - 1u;
    return vec2<u32>((updates[u >> lg] >> ((u & ((1u << lg) - 1u)) * bits)) & m, 0u);
}

fn rounds(wg: vec3<u32>, lid: u32) {
    let i = (wg.y * params.groups_x + wg.x) * WG + lid;
    if (i >= params.count) {
        return;
    }
    let u = select(list[i], i, params.direct != 0u);
    if ((done[u >> 5u] & (1u << (u & 31u))) != 0u) {
        return;
    }
    let t = targets[u];
    if (claim[t] != ~u) {
        // reduction none runs one round, without the reset pass (scatter_claims.wgsl): a loser
        // means two updates of one element, which the host refuses
        if (params.kind == 0u) {
            atomicStore(&status[1], 1u);
        }
        return;
    }
    apply(u, t);
}

// Update u combined into element t.
fn apply(u: u32, t: u32) {
    let bits = params.bits;
    if (bits == 128u) {  // complex128: replaced only
        for (var q = 0u; q < 4u; q = q + 1u) {
            atomicStore(&data[t * 4u + q], updates[u * 4u + q]);
        }
        return;
    }
    let b = update_at(u, bits);
    if (bits >= 32u) {
        let w = t * (bits / 32u);
        var a = vec2<u32>(atomicLoad(&data[w]), 0u);
        if (bits == 64u) {
            a.y = atomicLoad(&data[w + 1u]);
        }
        let r = combine(widen(a, bits), widen(b, bits), bits);
        atomicStore(&data[w], r.x);
        if (bits == 64u) {
            atomicStore(&data[w + 1u], r.y);
        }
        return;
    }
    let lg = 5u - countTrailingZeros(bits);
    let shift = (t & ((1u << lg) - 1u)) * bits;
    let m = (1u << bits) - 1u;
    let w = t >> lg;
    var old = atomicLoad(&data[w]);
    loop {
        let a = vec2<u32>((old >> shift) & m, 0u);
        let r = combine(widen(a, bits), widen(b, bits), bits).x & m;
        let word = (old & ~(m << shift)) | (r << shift);
        let got = atomicCompareExchangeWeak(&data[w], old, word);
        if (got.exchanged) {
            break;
        }
        old = got.old_value;
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    rounds(wg, lid);
}
