// Part (shaders/lib, see gpu/shaders.py): 64-bit integers as u32 pairs
// (x the low word): wrapping add and mul, unsigned and signed less-than.
// The including shader declares nothing.
//
// By hand: WGSL has no portable i64 (shader-int64 is optional): 64-bit
// arithmetic on u32 pairs.

fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

// a * b mod 2^64
fn mul64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let a0 = a.x & 0xffffu;
    let a1 = a.x >> 16u;
    let b0 = b.x & 0xffffu;
    let b1 = b.x >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    let lo = (p00 & 0xffffu) | (mid << 16u);
    let hi = a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
    return vec2<u32>(lo, hi + a.x * b.y + a.y * b.x);
}

fn ult(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.y < b.y || (a.y == b.y && a.x < b.x);
}

fn slt(a: vec2<u32>, b: vec2<u32>) -> bool {
    let f = vec2<u32>(0u, 0x80000000u);
    return ult(a ^ f, b ^ f);
}
