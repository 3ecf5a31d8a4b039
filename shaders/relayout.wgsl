// Re-layout: Fortran-ordered and/or big-endian bytes in, row-major
// little-endian bytes out (the layout ONNX uses).
//
// One invocation writes one whole u32 word of the output, so no two
// invocations ever share a word (WGSL has no byte stores, and racing
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

fn bswap32(x: u32) -> u32 {
    return (x << 24u) | ((x & 0xff00u) << 8u) | ((x >> 8u) & 0xff00u) | (x >> 24u);
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let w = (wg.y * params.groups_x + wg.x) * WG + lid;
    if (w >= params.words) {
        return;
    }
    let es = params.esize;
    if (es >= 4u) {
        // One 32-bit piece q of element e.
        let per = es / 4u;
        let e = w / per;
        var q = w % per;
        let s = source_element(e);
        if (params.swap >= 4u) {
            // Reverse the unit's words, then each word's bytes.
            let unit = params.swap / 4u;
            q = (q / unit) * unit + (unit - 1u - q % unit);
            dst[w] = bswap32(src[s * per + q]);
        } else {
            dst[w] = src[s * per + q];
        }
        return;
    }
    // 1- or 2-byte elements: gather the word's 4 / es elements.
    let per = 4u / es;
    let bits = es * 8u;
    let mask = (1u << bits) - 1u;
    var word = 0u;
    for (var j = 0u; j < per; j = j + 1u) {
        let e = w * per + j;
        if (e < params.count) {
            let s = source_element(e);
            var x = (src[s / per] >> ((s % per) * bits)) & mask;
            if (params.swap == 2u) {
                x = ((x & 0xffu) << 8u) | (x >> 8u);
            }
            word = word | (x << (j * bits));
        }
    }
    dst[w] = word;
}
