// Pieces by runs: a piece whose innermost axis is contiguous in both its
// source window and the band (src and dst stride 1 -- Concat, Split and
// Pad's interior), copied as whole output words.
//
// gpu/runs.py chooses it (gpu/pieces.py binds the same buffers and layout).
// A piece is `rows` rows (the multi-index over its `rank` outer axes, from
// axes[at..], (dim, src stride, dst stride, _)) of `len_bits` bits each; row
// r's bits start at bit
//     dst_bit = (dst_base + sum_k i_k * dst_stride_k) * bits   of the band,
//     src_bit = (src_base + sum_k i_k * src_stride_k) * bits   of the window,
// so output word w of the row holds the source bits from w * 32 - dst_bit +
// src_bit: two source words joined by a funnel shift when the two are not
// equally aligned modulo 32 bits (narrow types, or 4-bit packed), one word
// when they are (every 32-, 64- and 128-bit element).
//
// Two entry points over the row's words:
//   `words`: each invocation writes VECS consecutive vec4s (16-byte aligned
//     blocks) of the output that lie wholly inside one row -- plain stores,
//     no atomics, one vec4 load of the source per vec4 stored (the CPU
//     drivers' costliest instruction);
//   `edges`: one invocation per row writes the row's other words (its first
//     and last up to 3 whole words, and the partial words it shares with
//     its neighbours) on its own bits only, with atomicAnd / atomicOr, as
//     pieces.wgsl does; those commute with the neighbours' writes.
// A row keeps the source's bits in [keep_lo, keep_hi) of it and takes the
// fill pattern (`fill`: band word w is fill[w & 3], the element's bits
// repeated -- every element width divides 128) on the rest (mode):
//   0: copy (the whole row kept); 1: fill (nothing kept, no source read);
//   2: upper triangle, columns col >= tri_k + row kept; 3: lower, col <= tri_k + row
// (col the innermost axis, row the index along outer axis tri_row, or 0
// where it is constant: folded into tri_k) -- ConstantOfShape, Pad's
// constant borders, EyeLike's zeros, Trilu.
// The two write disjoint words. Element arithmetic is u32 (two's complement
// strides, exact final offsets: the host keeps windows and bands below 2^32
// bits). Sources are little-endian (big-endian ones keep pieces.wgsl).
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 256u;
const VECS: u32 = 4u;  // consecutive output vec4s per `words` invocation

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
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> dst_bits: array<atomic<u32>>;
@group(0) @binding(3) var<uniform> params: Params;
@group(0) @binding(4) var<storage, read> axes: array<vec4<u32>>;  // (dim, src stride, dst stride, _)

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
        let a = axes[params.at + k - 1u];
        let i = rest % a.x;
        rest = rest / a.x;
        s = s + i * a.y;
        d = d + i * a.z;
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

// five consecutive words from two vec4s, starting at word r (0..3) of the first
fn pick(a: vec4<u32>, b: vec4<u32>, r: u32) -> array<u32, 5> {
    let s0 = select(select(select(a.x, a.y, r == 1u), a.z, r == 2u), a.w, r == 3u);
    let s1 = select(select(select(a.y, a.z, r == 1u), a.w, r == 2u), b.x, r == 3u);
    let s2 = select(select(select(a.z, a.w, r == 1u), b.x, r == 2u), b.y, r == 3u);
    let s3 = select(select(select(a.w, b.x, r == 1u), b.y, r == 2u), b.z, r == 3u);
    let s4 = select(select(select(b.x, b.y, r == 1u), b.z, r == 2u), b.w, r == 3u);
    return array<u32, 5>(s0, s1, s2, s3, s4);
}

@compute @workgroup_size(256)
fn words(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = (wg.y * params.groups_x + wg.x) * WG + lid;
    if (t >= params.count) {
        return;
    }
    let r = t / params.chunks;
    let row = row_at(r);
    let range = vec_range(row);
    let v0 = range.x + (t - r * params.chunks) * VECS;
    if (v0 >= range.y) {
        return;
    }
    let v1 = min(v0 + VECS, range.y);
    if (params.mode == 1u) {  // a fill: the pattern's vec4, no source
        for (var v = v0; v < v1; v = v + 1u) {
            dst[v] = params.fill;
        }
        return;
    }
    let keep = keep_of(row);
    // source bit of the first vec4's bit 0, >= 0: the vec4 lies inside the row
    let at = v0 * 128u - row.dst_bit + row.src_bit;
    let sh = at & 31u;
    let k0 = at >> 5u;  // source word of the first output word
    let off = k0 & 3u;
    var q = k0 >> 2u;
    var a = src[q];
    for (var v = v0; v < v1; v = v + 1u) {
        let b = src[q + 1u];
        let s = pick(a, b, off);
        var out = vec4<u32>(s[0], s[1], s[2], s[3]);
        if (sh != 0u) {
            let up = 32u - sh;
            out = (out >> vec4<u32>(sh)) | (vec4<u32>(s[1], s[2], s[3], s[4]) << vec4<u32>(up));
        }
        if (keep.x > v * 128u || keep.y < v * 128u + 128u) {  // a triangle's edge crosses the vec4
            let w = v * 4u;
            let m = vec4<u32>(range_mask(w, keep.x, keep.y), range_mask(w + 1u, keep.x, keep.y),
                              range_mask(w + 2u, keep.x, keep.y), range_mask(w + 3u, keep.x, keep.y));
            out = (out & m) | (params.fill & ~m);
        }
        dst[v] = out;
        a = b;
        q = q + 1u;
    }
}

fn put(w: u32, x: u32, lo: u32, hi: u32) {
    // bits [lo, hi) of the band, word w's share of them
    let m = range_mask(w, lo, hi);
    if (m == 0u) {
        return;
    }
    atomicAnd(&dst_bits[w], ~m);
    atomicOr(&dst_bits[w], x & m);
}

// band word w of the row: the source's bits where kept, the fill's elsewhere
fn edge_word(row: Row, w: u32, keep: vec2<u32>) -> u32 {
    let f = params.fill[w & 3u];
    if (params.mode == 1u) {
        return f;
    }
    let m = range_mask(w, keep.x, keep.y);
    if (m == 0u) {
        return f;
    }
    return (word_of(row, w) & m) | (f & ~m);
}

@compute @workgroup_size(256)
fn edges(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let r = (wg.y * params.groups_x + wg.x) * WG + lid;
    if (r >= params.count) {
        return;
    }
    let row = row_at(r);
    let lo = row.dst_bit;
    let hi = row.dst_bit + params.len_bits;
    let w_lo = lo >> 5u;
    let w_end = (hi + 31u) >> 5u;
    let range = vec_range(row);
    var head_end = w_end;
    var tail = w_end;
    if (range.x < range.y) {
        head_end = range.x * 4u;
        tail = range.y * 4u;
    }
    let keep = keep_of(row);
    for (var w = w_lo; w < head_end; w = w + 1u) {
        put(w, edge_word(row, w, keep), lo, hi);
    }
    for (var w = tail; w < w_end; w = w + 1u) {
        put(w, edge_word(row, w, keep), lo, hi);
    }
}
