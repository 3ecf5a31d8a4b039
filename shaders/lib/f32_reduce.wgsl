// Part (shaders/lib, see gpu/shaders.py): float32 add or mul on bit
// patterns as numpy computes them: a NaN operand gives that NaN quieted and,
// when both are NaN, the first (`params.nan_first` 1) or the second (numpy's
// scalar and array loops differ there, so the host asks its numpy which,
// gpu/scatter.py's nan_first); an invalid operation gives
// `params.default_nan` (the host's inf - inf).
// The including shader declares: `params.nan_first` and `params.default_nan`.
//
// By hand: float32 arithmetic on bits where the host's NaN choice must be
// copied exactly.

fn f32_op(a: u32, b: u32, mul: bool) -> u32 {
    let na = (a & 0x7fffffffu) > 0x7f800000u;
    let nb = (b & 0x7fffffffu) > 0x7f800000u;
    if (na && nb) {
        return select(b, a, params.nan_first != 0u) | 0x400000u;
    }
    if (nb) {
        return b | 0x400000u;
    }
    if (na) {
        return a | 0x400000u;
    }
    let x = bitcast<f32>(a);
    let y = bitcast<f32>(b);
    let r = bitcast<u32>(select(x + y, x * y, mul));
    if ((r & 0x7fffffffu) > 0x7f800000u) {
        return params.default_nan;
    }
    return r;
}
