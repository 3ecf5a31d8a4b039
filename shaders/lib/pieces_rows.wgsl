// Part (shaders/lib, see gpu/shaders.py): the rows of a piece by runs, shared
// by pieces_runs.wgsl (whole vec4s) and pieces_edges.wgsl (the rest of each
// row): their constant WG, Params, the source and axes bindings and the row
// arithmetic (see pieces_runs.wgsl). Each kernel declares binding 2, the
// band, as its own type (vec4 stores, atomics): one entry point may not
// use two variables on one binding.
//
// By hand: shared row arithmetic of pieces_runs.wgsl and pieces_edges.wgsl.

const WG: u32 = 256u;

struct Params {
    count: u32,     // invocations: `words` rows * chunks, `edges` rows
    groups_x: u32,  // workgroups per row of the dispatch grid
    rank: u32,      // outer axes in `axes`, from `at`
    at: u32,
    bits: u32,      // element bits
    src_base: u32,  // window element of the piece's first element
    dst_base: u32,  // band element of the piece's first element
    len_bits: u32,  // bits per row (the innermost axis' length * bits)
    chunks: u32,    // `words` invocations per row
    rows: u32,
    mode: u32,      // 0 copy, 1 fill, 2 upper triangle, 3 lower triangle
    tri_k: u32,     // i32 bits
    fill: vec4<u32>,  // the fill's band words 4v .. 4v + 3
    tri_row: u32,   // outer axis (0 .. rank - 1) of the triangle's row, else none
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(3) var<uniform> params: Params;
// per outer axis of a part (gpu/runs.py packs them by these names)
struct Axis {
    dim: u32,
    src: u32,  // source stride, elements
    dst: u32,  // output stride, elements
    pad0: u32,
}
@group(0) @binding(4) var<storage, read> axes: array<vec4<u32>>;

// Row r of `axes` as an Axis: one vec4 load per row (lib/index_table.wgsl says why).
fn row_axis(r: u32) -> Axis {
    let a = axes[r];
    return Axis(a.x, a.y, a.z, a.w);
}

struct Row {
    src_bit: u32,
    dst_bit: u32,
    tri: u32,  // index along axis tri_row (0 where none)
}

fn row_at(r: u32) -> Row {
    var rest = r;
    var s = params.src_base;
    var d = params.dst_base;
    var row = 0u;
    for (var k = params.rank; k > 0u; k = k - 1u) {
        let a = row_axis(params.at + k - 1u);
        let i = rest % a.dim;
        rest = rest / a.dim;
        s = s + i * a.src;
        d = d + i * a.dst;
        if (k - 1u == params.tri_row) {
            row = i;
        }
    }
    return Row(s * params.bits, d * params.bits, row);
}

// The band bits [x, y) of the row that keep the source (the rest take the fill)
fn keep_of(row: Row) -> vec2<u32> {
    let lo = row.dst_bit;
    let hi = lo + params.len_bits;
    if (params.mode == 0u) {
        return vec2<u32>(lo, hi);
    }
    if (params.mode == 1u) {
        return vec2<u32>(lo, lo);
    }
    let len = i32(params.len_bits / params.bits);
    let b = bitcast<i32>(params.tri_k) + i32(row.tri);  // the host keeps |tri_k| <= 2^30
    if (params.mode == 2u) {
        return vec2<u32>(lo + u32(clamp(b, 0, len)) * params.bits, hi);
    }
    return vec2<u32>(lo, lo + u32(clamp(b + 1, 0, len)) * params.bits);
}

// word w's bits in band bits [lo, hi)
fn range_mask(w: u32, lo: u32, hi: u32) -> u32 {
    let b0 = max(lo, w * 32u);
    let b1 = min(hi, w * 32u + 32u);
    if (b1 <= b0) {
        return 0u;
    }
    let n = b1 - b0;
    if (n >= 32u) {
        return 0xffffffffu;
    }
    return ((1u << n) - 1u) << (b0 - w * 32u);
}

fn src_word(k: i32) -> u32 {
    let i = u32(max(k, 0));
    return select(0u, src[i >> 2u][i & 3u], k >= 0);
}

// Output word w's bits of the row (those outside the row are garbage).
fn word_of(row: Row, w: u32) -> u32 {
    let at = i32(w * 32u - row.dst_bit + row.src_bit);  // source bit of the word's bit 0 (may be < 0)
    let k = at >> 5u;
    let sh = u32(at) & 31u;
    let lo = src_word(k) >> sh;
    let hi = select(0u, src_word(k + 1) << (32u - sh), sh != 0u);
    return lo | hi;
}

// The whole vec4s of row: [va, vb)
fn vec_range(row: Row) -> vec2<u32> {
    let a = (row.dst_bit + 31u) >> 5u;  // first whole word
    let b = (row.dst_bit + params.len_bits) >> 5u;  // end of the whole words
    return vec2<u32>((a + 3u) >> 2u, b >> 2u);
}
