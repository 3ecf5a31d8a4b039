// NonZero: the coordinates of the elements that are not zero, in row-major
// order, as ONNX's int64 output of shape (rank, count).
//
// Two passes over the same elements, one invocation per element (element e
// of the logical, row-major order: its storage offset from the strides, so a
// Fortran-order input reads in place):
//   pass 0: each workgroup counts its non-zero elements into counts[group];
//   (the host turns the counts into each group's first output position)
//   pass 1: each workgroup ranks its non-zero elements (a scan in workgroup
//           memory) and writes each one's coordinates: axis k of the i-th
//           non-zero element goes to out[k * total + i], an int64 as two
//           words (a coordinate is below 2^32: the device indexes fewer
//           elements).
//
// Zero is a bit pattern: all bits 0, except that a float's sign bit does not
// count (-0.0 is zero, every NaN is not). An element is `words` words, or
// one `width`-byte part of a word (bool, int8, int16, float16, bfloat16); a
// float element is parts of `part_words` words (complex: two), each with a
// sign bit that `sign` clears in the part's word `sign_word` (the last, or
// the first when the input is big-endian: `swap`).
//
// Declared by gpu/nonzero.py (WG, Params, Axis and the bindings, as data the
// host packs by), prepended to this body there.
//
// By hand: the generator (gpu/render/elementwise.py) maps element to element;
// NonZero's output positions depend on every earlier element (counts and
// their prefix sum).
//
// needs: (nothing beyond WebGPU)

// Row r of `axes` as an Axis: one vec4 load per row (gpu/render/indices.py's table_row says why).
fn axis(r: u32) -> Axis {
    let a = axes[r];
    return Axis(a.x, a.y, a.z, a.w);
}

var<workgroup> scan: array<u32, WG>;

fn offset_of(e: u32) -> u32 {
    var rest = e;
    var at = 0u;
    for (var k = params.rank; k > 0u; k = k - 1u) {
        let a = axis(k - 1u);
        at = at + (rest % a.size) * a.stride;
        rest = rest / a.size;
    }
    return at;
}

fn nonzero(e: u32) -> u32 {
    let at = offset_of(e);
    if (params.width != 0u) {
        let byte = at * params.width;
        let bits = (data[byte / 4u] >> ((byte % 4u) * 8u)) & ((1u << (params.width * 8u)) - 1u);
        return select(0u, 1u, (bits & params.sign) != 0u);
    }
    var any = 0u;
    for (var j = 0u; j < params.words; j = j + 1u) {
        var w = data[at * params.words + j];
        if (j % params.part_words == params.sign_word) {
            w = w & params.sign;
        }
        any = any | w;
    }
    return select(0u, 1u, any != 0u);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = wg.y * params.groups_x + wg.x;
    if (group * WG >= params.count) {
        return;  // past the last group (the grid is a rectangle); uniform in the workgroup
    }
    let e = group * WG + lid;
    var flag = 0u;
    if (e < params.count) {
        flag = nonzero(e);
    }
    scan[lid] = flag;
    // inclusive scan of the flags (Hillis-Steele), every invocation taking part
    for (var step = 1u; step < WG; step = step * 2u) {
        workgroupBarrier();
        var add = 0u;
        if (lid >= step) {
            add = scan[lid - step];
        }
        workgroupBarrier();
        scan[lid] = scan[lid] + add;
    }
    workgroupBarrier();
    if (params.pass_ == 0u) {
        if (lid == WG - 1u) {
            counts[group] = scan[lid];
        }
        return;
    }
    if (flag == 0u) {
        return;
    }
    let i = counts[group] + scan[lid] - 1u;
    var rest = e;
    for (var k = params.rank; k > 0u; k = k - 1u) {
        let size = axis(k - 1u).size;
        let at = 2u * ((k - 1u) * params.total + i);
        out[at] = rest % size;
        out[at + 1u] = 0u;
        rest = rest / size;
    }
}
