// Part (shaders/lib, see gpu/shaders.py): an integer of up to 64 bits as the
// IEEE bits of a float with `mant` fraction bits and `ebits` exponent bits
// (float16 10/5, float32 23/8, float64 52/11), rounded to nearest, ties to
// even, as numpy's astype (and so onnx.reference's Cast) rounds; one too
// large for the type is infinity (float16 from 65520 on). WGSL's own f32(i32)
// may round either way, so the bits are made here. 64-bit values are u32
// pairs, x the low word. Needs lib/int64_ops.wgsl and lib/int64_div.wgsl.

fn shl64(a: vec2<u32>, n: u32) -> vec2<u32> {
    if (n == 0u) {
        return a;
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

fn int_to_float(m: vec2<u32>, neg: bool, mant: u32, ebits: u32) -> vec2<u32> {
    if (m.x == 0u && m.y == 0u) {
        return vec2<u32>(0u);  // +0.0: an integer has no -0
    }
    let one = vec2<u32>(1u, 0u);
    let sign = select(vec2<u32>(0u), shl64(one, mant + ebits), neg);
    let p = top64(m);
    var e = p + (1u << (ebits - 1u)) - 1u;  // the biased exponent
    var q = vec2<u32>(0u);  // the significand, its top bit at `mant`
    if (p <= mant) {
        q = shl64(m, mant - p);
    } else {
        let shift = p - mant;
        q = shr64(m, shift);
        let rest = sub64(m, shl64(q, shift));
        let half = shl64(one, shift - 1u);
        if (ult(half, rest) || (all(rest == half) && (q.x & 1u) == 1u)) {
            q = add64(q, one);
            if (top64(q) > mant) {
                q = shr64(q, 1u);
                e = e + 1u;
            }
        }
    }
    let emax = (1u << ebits) - 1u;
    if (e >= emax) {
        return sign | shl64(vec2<u32>(emax, 0u), mant);  // infinity
    }
    return sign | shl64(vec2<u32>(e, 0u), mant) | (q ^ shl64(one, mant));
}

// a two's complement value (sign-extended to 64 bits)
fn signed_to_float(r: vec2<u32>, mant: u32, ebits: u32) -> vec2<u32> {
    return int_to_float(abs64(r), is_neg64(r), mant, ebits);
}

// A float's bits (`mant` fraction and `ebits` exponent bits) truncated toward
// zero to an integer of `tbits` bits (signed or not), as 64-bit two's
// complement; NaN, infinities and values the integer type cannot hold are
// reported (the including kernel's `fault` word: the smallest element `eg`
// that met one) and give 0.
fn float_to_int(bits: vec2<u32>, mant: u32, ebits: u32, tbits: u32, signed: bool, eg: u32) -> vec2<u32> {
    let one = vec2<u32>(1u, 0u);
    let e = shr64(bits, mant).x & ((1u << ebits) - 1u);
    let neg = (shr64(bits, mant + ebits).x & 1u) == 1u;
    let bias = (1u << (ebits - 1u)) - 1u;
    var ok = e != (1u << ebits) - 1u;
    var mag = vec2<u32>(0u);
    if (ok && e >= bias) {
        let p = e - bias;  // the integer part's highest bit
        if (p >= 64u) {
            ok = false;
        } else {
            let sig = (bits & sub64(shl64(one, mant), one)) | shl64(one, mant);
            if (p >= mant) {
                mag = shl64(sig, p - mant);
            } else {
                mag = shr64(sig, mant - p);
            }
            if (signed) {
                let limit = shl64(one, tbits - 1u);  // |INT_MIN|
                ok = select(ult(mag, limit), !ult(limit, mag), neg);
            } else {
                ok = select(tbits == 64u || ult(mag, shl64(one, tbits)), mag.x == 0u && mag.y == 0u, neg);
            }
        }
    }
    if (!ok) {
        atomicMin(&fault[0], eg);
        return vec2<u32>(0u);
    }
    return select(mag, neg64(mag), neg);
}
