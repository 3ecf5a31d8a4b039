// Re-layout: Fortran-ordered and/or big-endian bytes in, row-major
// little-endian bytes out (the layout ONNX uses).
//
// Each invocation writes WORDS consecutive whole u32 words of the output, so
// no two invocations ever share a word (WGSL has no byte stores, and racing
// read-modify-writes of partial words would lose bytes):
// - elements of 4, 8 or 16 bytes: the word is one 32-bit piece of one element;
// - elements of 2 bytes: the word is assembled from 2 source elements;
// - elements of 1 byte: the word is assembled from 4 source elements.
//
// Element e of the output (row-major) comes from source element
// sum_k i_k * axes[k].y, where i_k are e's row-major indices over the dims
// axes[k].x. For Fortran order axes[k].y is the column-major stride; with
// rank 0 the mapping is the identity (a big-endian C-ordered chunk).
//
// swap: 0, or the byte-swap unit in bytes (2, 4 or 8): big-endian source
// bytes are reversed within each unit (complex types swap each component).

const WG: u32 = 256u;
const WORDS: u32 = 4u;  // consecutive output words per invocation

struct Params {
    words: u32,     // output u32 words to write
    groups_x: u32,  // workgroups per row of the dispatch grid
    count: u32,     // elements in the output
    esize: u32,     // bytes per element: 1, 2, 4, 8 or 16
    swap: u32,      // 0, or the byte-swap unit: 2, 4 or 8
    rank: u32,      // entries of `axes`; 0 = identity mapping
}

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;
@group(0) @binding(3) var<storage, read> axes: array<vec2<u32>>;  // (dim, source stride)

fn source_element(e: u32) -> u32 {
    if (params.rank == 0u) {
        return e;
    }
    var rest = e;
    var s = 0u;
    for (var k = params.rank; k > 0u; k = k - 1u) {
        let axis = axes[k - 1u];
        s = s + (rest % axis.x) * axis.y;
        rest = rest / axis.x;
    }
    return s;
}

// An output element, its source element and its index along the last axis.
// Walking to the next element is one add until a row ends; only then is the
// source index decomposed again (divisions are the kernel's main cost).
struct Cursor {
    e: u32,
    s: u32,
    i: u32,
}

fn cursor_at(e: u32) -> Cursor {
    if (params.rank == 0u) {
        return Cursor(e, e, 0u);
    }
    return Cursor(e, source_element(e), e % axes[params.rank - 1u].x);
}

fn cursor_next(c: Cursor) -> Cursor {
    let e = c.e + 1u;
    if (params.rank == 0u) {
        return Cursor(e, e, 0u);
    }
    let last = axes[params.rank - 1u];
    if (c.i + 1u < last.x) {
        return Cursor(e, c.s + last.y, c.i + 1u);
    }
    return Cursor(e, source_element(e), 0u);
}

fn bswap32(x: u32) -> u32 {
    return (x << 24u) | ((x & 0xff00u) << 8u) | ((x >> 8u) & 0xff00u) | (x >> 24u);
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let w0 = ((wg.y * params.groups_x + wg.x) * WG + lid) * WORDS;
    if (w0 >= params.words) {
        return;
    }
    let es = params.esize;
    if (es >= 4u) {
        // Each word is one 32-bit piece q of one element.
        let per = es / 4u;
        var c = cursor_at(w0 / per);
        for (var k = 0u; k < WORDS; k = k + 1u) {
            let w = w0 + k;
            if (w >= params.words) {
                break;
            }
            if (w / per != c.e) {
                c = cursor_next(c);
            }
            var q = w % per;
            if (params.swap >= 4u) {
                // Reverse the unit's words, then each word's bytes.
                let unit = params.swap / 4u;
                q = (q / unit) * unit + (unit - 1u - q % unit);
                dst[w] = bswap32(src[c.s * per + q]);
            } else {
                dst[w] = src[c.s * per + q];
            }
        }
        return;
    }
    // 1- or 2-byte elements: each word is assembled from 4 / es elements.
    let per = 4u / es;
    let bits = es * 8u;
    let mask = (1u << bits) - 1u;
    var c = cursor_at(w0 * per);
    for (var k = 0u; k < WORDS; k = k + 1u) {
        let w = w0 + k;
        if (w >= params.words) {
            break;
        }
        var word = 0u;
        for (var j = 0u; j < per; j = j + 1u) {
            let e = w * per + j;
            if (e < params.count) {
                if (e != c.e) {
                    c = cursor_next(c);
                }
                var x = (src[c.s / per] >> ((c.s % per) * bits)) & mask;
                if (params.swap == 2u) {
                    x = ((x & 0xffu) << 8u) | (x >> 8u);
                }
                word = word | (x << (j * bits));
            }
        }
        dst[w] = word;
    }
}
