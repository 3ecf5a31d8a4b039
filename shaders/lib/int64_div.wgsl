// Part (shaders/lib, see gpu/shaders.py): 64-bit integers as u32 pairs (x the
// low word), the rest of the integer arithmetic gpu/render/elementwise.py
// renders: negation, and division and remainder truncated toward zero
// (onnxruntime's and onnx.reference's integer Div), signed and unsigned; the
// signed quotient of INT64_MIN by -1 wraps to INT64_MIN, as two's complement
// does. A zero divisor gives 0: the kernel reports it before the result is used.
// Needs lib/int64_ops.wgsl (add64, ult, slt). The including shader declares nothing.
//
// By hand: WGSL has no portable i64 (shader-int64 is optional): division on
// u32 pairs, truncated as numpy.

fn neg64(a: vec2<u32>) -> vec2<u32> {
    return add64(~a, vec2<u32>(1u, 0u));
}

fn sub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return add64(a, neg64(b));
}

fn is_neg64(a: vec2<u32>) -> bool {
    return (a.y >> 31u) == 1u;
}

fn abs64(a: vec2<u32>) -> vec2<u32> {
    return select(a, neg64(a), is_neg64(a));
}

// (quotient, remainder) of n / d, unsigned; d != 0 (d == 0: both 0)
fn udivmod64(n: vec2<u32>, d: vec2<u32>) -> array<vec2<u32>, 2> {
    if (d.x == 0u && d.y == 0u) {
        return array<vec2<u32>, 2>(vec2<u32>(0u), vec2<u32>(0u));
    }
    if (n.y == 0u && d.y == 0u) {  // both fit 32 bits: the native division
        return array<vec2<u32>, 2>(vec2<u32>(n.x / d.x, 0u), vec2<u32>(n.x % d.x, 0u));
    }
    var q = vec2<u32>(0u);
    var r = vec2<u32>(0u);
    for (var i = 63u; ; i = i - 1u) {
        let word = select(n.x, n.y, i >= 32u);
        let bit = (word >> (i & 31u)) & 1u;
        r = vec2<u32>((r.x << 1u) | bit, (r.y << 1u) | (r.x >> 31u));
        if (!ult(r, d)) {
            r = sub64(r, d);
            let b = 1u << (i & 31u);
            q = q | select(vec2<u32>(b, 0u), vec2<u32>(0u, b), i >= 32u);
        }
        if (i == 0u) {
            break;
        }
    }
    return array<vec2<u32>, 2>(q, r);
}

fn udiv64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return udivmod64(a, b)[0];
}

fn urem64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return udivmod64(a, b)[1];
}

// truncated toward zero
fn sdiv64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let q = udiv64(abs64(a), abs64(b));
    return select(q, neg64(q), is_neg64(a) != is_neg64(b));
}

// the sign of the dividend (C's %, numpy's fmod)
fn srem64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let r = urem64(abs64(a), abs64(b));
    return select(r, neg64(r), is_neg64(a));
}

// the sign of the divisor (Python's %, numpy's mod)
fn smod64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let r = srem64(a, b);
    let nonzero = r.x != 0u || r.y != 0u;
    return select(r, add64(r, b), nonzero && is_neg64(r) != is_neg64(b));
}
