// Part (shaders/lib, see gpu/shaders.py): Cast between any two of the
// integer and float types, on bit patterns, as onnx.reference (numpy and
// ml_dtypes) converts. WGSL has no f64, u64, bfloat16 or float8, and its own
// conversions may round either way, so a value is decoded to `Num` (sign,
// class, exponent, 64-bit significand) and encoded into the target's bits,
// rounded to nearest, ties to even. A float format is described by its
// fraction bits `mant`, exponent bits `ebits`, `bias` and `style` (which
// patterns are NaN and infinity, gpu/render/convert.py's FORMATS).
// 64-bit values are u32 pairs, x the low word. Needs lib/int64_ops.wgsl and
// lib/int64_div.wgsl; `to_int` reports through the kernel's `fault` word.
//
// By hand: bit-exact conversions between formats WGSL does not have
// (bfloat16, float8s, float64), as numpy / ml_dtypes round.

const IEEE: u32 = 0u;   // all-ones exponent: infinity (fraction 0) or NaN
const FN: u32 = 1u;     // float8e4m3fn: only S.1111.111 is NaN, no infinity
const FNUZ: u32 = 2u;   // 0x80 is NaN, no -0.0, no infinity
const FINITE: u32 = 3u; // float4e2m1: no NaN, no infinity
const E8M0: u32 = 4u;   // float8e8m0: 2**(e - 127), no sign, no zero, 0xff NaN

const ZERO: u32 = 0u;
const NUMBER: u32 = 1u;
const INF: u32 = 2u;
const NAN: u32 = 3u;

// NaN of the target: its canonical quiet NaN, or the source's fraction kept
// (top bits), or kept with the quiet bit set (numpy's and x86's conversions)
const NAN_CANON: u32 = 0u;
const NAN_KEEP: u32 = 1u;
const NAN_QUIET: u32 = 2u;

struct Num {
    kind: u32,
    neg: bool,
    e: i32,          // the exponent of the significand's top bit (NUMBER)
    sig: vec2<u32>,  // NUMBER: top bit at 63; NAN: the fraction, left-aligned at bit 63
}

// branch-free: a lane's shift is its own, and a branch that differs per lane costs every lane both
// sides; no shift by 32 or more (not defined on every backend)
fn shl64(a: vec2<u32>, n: u32) -> vec2<u32> {
    let m = n & 31u;
    let s = vec2<u32>(a.x << m, (a.y << m) | ((a.x >> 1u) >> (31u - m)));
    return select(select(s, vec2<u32>(0u, s.x), n >= 32u), vec2<u32>(0u), n >= 64u);
}

fn shr64(a: vec2<u32>, n: u32) -> vec2<u32> {
    let m = n & 31u;
    let s = vec2<u32>((a.x >> m) | ((a.y << 1u) << (31u - m)), a.y >> m);
    return select(select(s, vec2<u32>(s.y, 0u), n >= 32u), vec2<u32>(0u), n >= 64u);
}

// the highest set bit of a nonzero value
fn top64(m: vec2<u32>) -> u32 {
    return select(31u - countLeadingZeros(m.x), 63u - countLeadingZeros(m.y), m.y != 0u);
}

fn low_mask(n: u32) -> vec2<u32> {
    return sub64(shl64(vec2<u32>(1u, 0u), n), vec2<u32>(1u, 0u));
}

fn is_zero64(a: vec2<u32>) -> bool {
    return a.x == 0u && a.y == 0u;
}

fn number(neg: bool, m: vec2<u32>, e: i32) -> Num {
    let p = top64(m);  // m = 0: ZERO, its e and sig unread
    return Num(select(NUMBER, ZERO, is_zero64(m)), neg, e + i32(p), shl64(m, 63u - p));
}

// an integer, sign-extended (signed) or zero-extended to 64 bits
fn decode_int(r: vec2<u32>, signed: bool) -> Num {
    let neg = signed && is_neg64(r);
    return number(neg, select(r, neg64(r), neg), 0);
}

fn decode_float(b: vec2<u32>, mant: u32, ebits: u32, bias: i32, style: u32) -> Num {
    let emax = (1u << ebits) - 1u;
    let ex = shr64(b, mant).x & emax;
    let f = b & low_mask(mant);
    let neg = style != E8M0 && (shr64(b, mant + ebits).x & 1u) == 1u;
    let top = ex == emax;
    if ((top && (style == E8M0 || (style == IEEE && !is_zero64(f)) || (style == FN && all(f == low_mask(mant)))))
            || (style == FNUZ && neg && ex == 0u && is_zero64(f))) {
        return Num(NAN, neg, 0, shl64(f, 64u - mant));
    }
    if (top && style == IEEE) {
        return Num(INF, neg, 0, vec2<u32>(0u));
    }
    let sub = ex == 0u && style != E8M0;  // zero or subnormal: no implicit bit (E8M0: no fraction, 2**(e - bias))
    let m = select(f | shl64(vec2<u32>(1u, 0u), mant), f, sub);
    return number(neg, m, select(i32(ex), 1, sub) - bias - i32(mant));
}

fn sign_bit(neg: bool, mant: u32, ebits: u32) -> vec2<u32> {
    return select(vec2<u32>(0u), shl64(vec2<u32>(1u, 0u), mant + ebits), neg);
}

fn nan_bits(v: Num, mant: u32, ebits: u32, style: u32, nan: u32) -> vec2<u32> {
    let s = sign_bit(v.neg, mant, ebits) | shl64(vec2<u32>((1u << ebits) - 1u, 0u), mant);  // and all exponent bits
    if (style == FN) {
        return s | low_mask(mant);
    }
    if (style == FNUZ || style == FINITE) {  // FINITE (ml_dtypes): +NaN to -0.0, -NaN to +0.0
        return sign_bit(style == FNUZ || !v.neg, mant, ebits);
    }
    let quiet = shl64(vec2<u32>(1u, 0u), mant - 1u);
    let frac = shr64(v.sig, 64u - mant);
    let kept = select(frac, vec2<u32>(1u, 0u), is_zero64(frac));  // NAN_KEEP: one bit set at least
    return s | select(select(kept, frac | quiet, nan == NAN_QUIET), quiet, nan == NAN_CANON);
}

// the largest finite magnitude's bits
fn max_bits(mant: u32, ebits: u32, style: u32) -> vec2<u32> {
    let emax = (1u << ebits) - 1u;
    let all_f = low_mask(mant);
    let f = select(all_f, sub64(all_f, vec2<u32>(1u, 0u)), style == FN);
    return shl64(vec2<u32>(select(emax, emax - 1u, style == IEEE), 0u), mant) | f;
}

// `v` as the bits of a float format (not E8M0); `saturate`: an overflow or
// an infinity is the largest finite value (the float8 types' attribute)
fn encode_float(v: Num, mant: u32, ebits: u32, bias: i32, style: u32, saturate: bool, nan: u32) -> vec2<u32> {
    let one = vec2<u32>(1u, 0u);
    let s = sign_bit(v.neg, mant, ebits);
    let top = max_bits(mant, ebits, style);
    if (v.kind == NAN) {
        return nan_bits(v, mant, ebits, style, nan);
    }
    var mag = select(vec2<u32>(0u), add64(top, one), v.kind == INF);
    if (v.kind == NUMBER) {  // rounded to nearest, ties to even; below the normals, shifted further
        let be = v.e + bias;  // the biased exponent
        let base = select(vec2<u32>(0u), shl64(vec2<u32>(u32(be - 1), 0u), mant), be >= 1);
        let shift = 63u - mant + u32(clamp(1 - be, 0, 100));
        let q = shr64(v.sig, shift);
        let rest = v.sig & low_mask(shift);
        let half = shl64(one, shift - 1u);
        let up = ult(half, rest) || (all(rest == half) && (q.x & 1u) == 1u);
        mag = select(vec2<u32>(0u), add64(base, select(q, add64(q, one), up)), shift <= 64u);
    }
    if (is_zero64(mag)) {  // zero, or rounded to it
        return select(s, vec2<u32>(0u), style == FNUZ);
    }
    if (ult(top, mag)) {  // overflow
        if (saturate || style == FINITE) {
            return s | top;
        }
        if (style == IEEE) {
            return s | add64(top, one);  // infinity
        }
        return nan_bits(Num(NAN, v.neg, 0, vec2<u32>(0u)), mant, ebits, style, NAN_CANON);
    }
    return s | mag;
}

// float8e8m0 from float32 bits, as onnx.numpy_helper.to_float8e8m0 rounds
// (round: 0 up, 1 nearest, 2 down)
fn encode_e8m0(f: u32, round: u32, saturate: bool) -> vec2<u32> {
    let ex = (f >> 23u) & 0xffu;  // 0xff: NaN, kept
    let nearest = (f & 0x400000u) != 0u && ((f & 0x3fffffu) != 0u || ex > 0u);
    let up = select(nearest, (f & 0x7fffffu) != 0u, round == 0u) && round != 2u;
    return vec2<u32>(ex + select(0u, 1u, up && ex != 0xffu && !(saturate && ex == 0xfeu)), 0u);
}

// truncated toward zero to an integer of `tbits` bits (signed or not), as
// 64-bit two's complement. NaN, infinities and values the type cannot hold
// give 0; for 8 bits and more they are reported (the smallest element `eg`
// that met one), since numpy's result there is the platform's; ml_dtypes
// makes them 0 for int4, uint4, int2 and uint2
fn to_int(v: Num, tbits: u32, signed: bool, eg: u32) -> vec2<u32> {
    let mag = select(vec2<u32>(0u), shr64(v.sig, 63u - u32(v.e)), v.kind == NUMBER && v.e >= 0);
    let limit = shl64(vec2<u32>(1u, 0u), tbits - select(0u, 1u, signed));  // |INT_MIN|, or 2**tbits (0: 64 bits)
    let fits = select(ult(mag, limit) || is_zero64(limit), select(is_zero64(mag), !ult(limit, mag), signed), v.neg);
    if (!fits || !(v.kind == ZERO || (v.kind == NUMBER && v.e < 64))) {
        if (tbits >= 8u) {
            atomicMin(&fault[0], eg);
        }
        return vec2<u32>(0u);
    }
    return select(mag, neg64(mag), v.neg);
}

fn nonzero_num(v: Num) -> vec2<u32> {
    return vec2<u32>(select(0u, 1u, v.kind != ZERO), 0u);
}
