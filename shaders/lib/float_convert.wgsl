// Part (shaders/lib, see gpu/shaders.py): Cast between any two of the
// integer and float types, on bit patterns, as onnx.reference (numpy and
// ml_dtypes) converts. WGSL has no f64, u64, bfloat16 or float8, and its own
// conversions may round either way, so a value is decoded to `Num` (sign,
// class, exponent, 64-bit significand) and encoded into the target's bits,
// rounded to nearest, ties to even. A float format is described by its
// fraction bits `mant`, exponent bits `ebits`, `bias` and `style` (which
// patterns are NaN and infinity, gpu/render/elementwise.py's FORMATS).
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

fn shl64(a: vec2<u32>, n: u32) -> vec2<u32> {
    if (n == 0u) {
        return a;
    }
    if (n >= 64u) {
        return vec2<u32>(0u);
    }
    if (n >= 32u) {
        return vec2<u32>(0u, a.x << (n - 32u));
    }
    return vec2<u32>(a.x << n, (a.y << n) | (a.x >> (32u - n)));
}

fn shr64(a: vec2<u32>, n: u32) -> vec2<u32> {
    if (n == 0u) {
        return a;
    }
    if (n >= 64u) {
        return vec2<u32>(0u);
    }
    if (n >= 32u) {
        return vec2<u32>(a.y >> (n - 32u), 0u);
    }
    return vec2<u32>((a.x >> n) | (a.y << (32u - n)), a.y >> n);
}

// the highest set bit of a nonzero value
fn top64(m: vec2<u32>) -> u32 {
    if (m.y != 0u) {
        return 63u - countLeadingZeros(m.y);
    }
    return 31u - countLeadingZeros(m.x);
}

fn low_mask(n: u32) -> vec2<u32> {
    return sub64(shl64(vec2<u32>(1u, 0u), n), vec2<u32>(1u, 0u));
}

fn is_zero64(a: vec2<u32>) -> bool {
    return a.x == 0u && a.y == 0u;
}

fn number(neg: bool, m: vec2<u32>, e: i32) -> Num {
    if (is_zero64(m)) {
        return Num(ZERO, neg, 0, vec2<u32>(0u));
    }
    let p = top64(m);
    return Num(NUMBER, neg, e + i32(p), shl64(m, 63u - p));
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
    let left = shl64(f, 64u - mant);
    if (style == E8M0) {
        if (ex == emax) {
            return Num(NAN, false, 0, vec2<u32>(0u));
        }
        return Num(NUMBER, false, i32(ex) - bias, vec2<u32>(0u, 0x80000000u));
    }
    if (ex == emax && ((style == IEEE && !is_zero64(f)) || (style == FN && all(f == low_mask(mant))))) {
        return Num(NAN, neg, 0, left);
    }
    if (ex == emax && style == IEEE) {
        return Num(INF, neg, 0, vec2<u32>(0u));
    }
    if (style == FNUZ && neg && ex == 0u && is_zero64(f)) {
        return Num(NAN, true, 0, vec2<u32>(0u));
    }
    if (ex == 0u) {  // zero or subnormal
        return number(neg, f, 1 - bias - i32(mant));
    }
    return number(neg, f | shl64(vec2<u32>(1u, 0u), mant), i32(ex) - bias - i32(mant));
}

fn sign_bit(neg: bool, mant: u32, ebits: u32) -> vec2<u32> {
    return select(vec2<u32>(0u), shl64(vec2<u32>(1u, 0u), mant + ebits), neg);
}

fn nan_bits(v: Num, mant: u32, ebits: u32, style: u32, nan: u32) -> vec2<u32> {
    let s = sign_bit(v.neg, mant, ebits);
    let all_e = shl64(vec2<u32>((1u << ebits) - 1u, 0u), mant);
    if (style == FN) {
        return s | all_e | low_mask(mant);
    }
    if (style == FNUZ) {
        return sign_bit(true, mant, ebits);
    }
    if (style == FINITE) {
        return sign_bit(!v.neg, mant, ebits);  // ml_dtypes: +NaN to -0.0, -NaN to +0.0
    }
    if (style == E8M0) {
        return vec2<u32>(0xffu, 0u);
    }
    let quiet = shl64(vec2<u32>(1u, 0u), mant - 1u);
    if (nan == NAN_CANON) {
        return s | all_e | quiet;
    }
    var frac = shr64(v.sig, 64u - mant);
    if (nan == NAN_QUIET) {
        frac = frac | quiet;
    } else if (is_zero64(frac)) {
        frac = vec2<u32>(1u, 0u);
    }
    return s | all_e | frac;
}

// the largest finite magnitude's bits
fn max_bits(mant: u32, ebits: u32, style: u32) -> vec2<u32> {
    let emax = (1u << ebits) - 1u;
    let all_f = low_mask(mant);
    if (style == IEEE) {
        return shl64(vec2<u32>(emax - 1u, 0u), mant) | all_f;
    }
    if (style == FN) {
        return shl64(vec2<u32>(emax, 0u), mant) | sub64(all_f, vec2<u32>(1u, 0u));
    }
    return shl64(vec2<u32>(emax, 0u), mant) | all_f;
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
    if (v.kind == ZERO) {
        return select(s, vec2<u32>(0u), style == FNUZ);
    }
    var mag = vec2<u32>(0u);
    if (v.kind == INF) {
        mag = add64(top, one);
    } else {
        let be = v.e + bias;  // the biased exponent
        var shift = 63u - mant;
        var base = vec2<u32>(0u);
        if (be >= 1) {
            base = shl64(vec2<u32>(u32(be - 1), 0u), mant);
        } else {
            shift = shift + u32(min(1 - be, 100));
        }
        if (shift <= 64u) {
            var q = shr64(v.sig, shift);
            let rest = v.sig & low_mask(shift);
            let half = shl64(one, shift - 1u);
            if (ult(half, rest) || (all(rest == half) && (q.x & 1u) == 1u)) {
                q = add64(q, one);
            }
            mag = add64(base, q);
        }
        if (is_zero64(mag)) {
            return select(s, vec2<u32>(0u), style == FNUZ);
        }
    }
    if (ult(top, mag)) {  // overflow
        if (saturate || style == FINITE) {
            return s | top;
        }
        if (style == IEEE) {
            return s | shl64(vec2<u32>((1u << ebits) - 1u, 0u), mant);
        }
        return nan_bits(Num(NAN, v.neg, 0, vec2<u32>(0u)), mant, ebits, style, NAN_CANON);
    }
    return s | mag;
}

// float8e8m0 from float32 bits, as onnx.numpy_helper.to_float8e8m0 rounds
// (round: 0 up, 1 nearest, 2 down)
fn encode_e8m0(f: u32, round: u32, saturate: bool) -> vec2<u32> {
    let ex = (f >> 23u) & 0xffu;
    if (ex == 0xffu) {
        return vec2<u32>(0xffu, 0u);
    }
    var up = false;
    if (round == 0u) {
        up = (f & 0x7fffffu) != 0u;
    } else if (round == 1u) {
        up = (f & 0x400000u) != 0u && ((f & 0x3fffffu) != 0u || ex > 0u);
    }
    if (saturate && ex == 0xfeu) {
        up = false;
    }
    return vec2<u32>(ex + select(0u, 1u, up), 0u);
}

// truncated toward zero to an integer of `tbits` bits (signed or not), as
// 64-bit two's complement. NaN, infinities and values the type cannot hold
// give 0; for 8 bits and more they are reported (the smallest element `eg`
// that met one), since numpy's result there is the platform's; ml_dtypes
// makes them 0 for int4, uint4, int2 and uint2
fn to_int(v: Num, tbits: u32, signed: bool, eg: u32) -> vec2<u32> {
    let one = vec2<u32>(1u, 0u);
    var ok = v.kind == ZERO || v.kind == NUMBER;
    var mag = vec2<u32>(0u);
    if (v.kind == NUMBER && v.e >= 0) {
        if (v.e >= 64) {
            ok = false;
        } else {
            mag = shr64(v.sig, 63u - u32(v.e));
            if (signed) {
                let limit = shl64(one, tbits - 1u);  // |INT_MIN|
                ok = select(ult(mag, limit), !ult(limit, mag), v.neg);
            } else {
                ok = select(tbits == 64u || ult(mag, shl64(one, tbits)), is_zero64(mag), v.neg);
            }
        }
    }
    if (!ok) {
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
