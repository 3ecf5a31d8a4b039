// Part (shaders/lib, see gpu/shaders.py): float16 <-> float32 as numpy
// converts, float32 -> bfloat16 as ml_dtypes rounds, on bit patterns.
// The including shader declares nothing.
//
// By hand: bit-exact float16 rounding as numpy's, on u32 bits (WGSL's f16 is
// optional and rounds its own way).

// numpy's float16 <-> float32 conversions (npy_halfbits_to_floatbits and back)
fn half_to_float(h: u32) -> u32 {
    let e = h & 0x7c00u;
    let s = (h & 0x8000u) << 16u;
    if (e == 0u) {
        var m = h & 0x3ffu;
        if (m == 0u) {
            return s;
        }
        var he = 0u;
        m = m << 1u;
        while ((m & 0x400u) == 0u) {
            m = m << 1u;
            he = he + 1u;
        }
        return s + ((127u - 15u - he) << 23u) + ((m & 0x3ffu) << 13u);
    }
    if (e == 0x7c00u) {
        return s + 0x7f800000u + ((h & 0x3ffu) << 13u);
    }
    return s + (((h & 0x7fffu) + 0x1c000u) << 13u);
}

fn float_to_half(f: u32) -> u32 {
    let s = (f >> 16u) & 0x8000u;
    let fe = f & 0x7f800000u;
    if (fe >= 0x47800000u) {
        if (fe == 0x7f800000u && (f & 0x7fffffu) != 0u) {
            var r = 0x7c00u + ((f & 0x7fffffu) >> 13u);
            if (r == 0x7c00u) {
                r = r + 1u;
            }
            return s + r;
        }
        return s + 0x7c00u;
    }
    if (fe <= 0x38000000u) {
        if (fe < 0x33000000u) {
            return s;
        }
        let e = fe >> 23u;
        var m = (0x00800000u + (f & 0x7fffffu)) >> (113u - e);
        if ((m & 0x3fffu) != 0x1000u || (f & 0x7ffu) != 0u) {
            m = m + 0x1000u;
        }
        return s + (m >> 13u);
    }
    var m = f & 0x7fffffu;
    if ((m & 0x3fffu) != 0x1000u) {
        m = m + 0x1000u;
    }
    return s + ((m >> 13u) + ((fe - 0x38000000u) >> 13u));
}

// ml_dtypes' float32 -> bfloat16: round to nearest even; a NaN becomes the
// quiet NaN of its sign
fn float_to_bfloat16(f: u32) -> u32 {
    if ((f & 0x7fffffffu) > 0x7f800000u) {
        return select(0x7fc0u, 0xffc0u, (f >> 31u) != 0u);
    }
    return (f + 0x7fffu + ((f >> 16u) & 1u)) >> 16u;
}
