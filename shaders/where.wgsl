// Where in whole words: output = X where the condition is true, else Y.
//
// The plan's fast path for Where (ops/where.py, gpu/where.py): the output is
// row-major, and each input is read through one of two index forms of the
// output element e (band-relative):
//   full:  element e + base of its window, read a 32-bit word at a time;
//   run:   element ((e + r0) / div + q0) % wrap of its window -- a scalar
//          (div 1, wrap 1), an input broadcast along trailing axes (div the
//          trailing run), along leading axes (wrap its size), or both.
// A run's (q, r) is found with one division per invocation and then walked
// with adds. No per-element loop over pieces, no atomics: each invocation
// writes WORDS whole u32 words of the output, and no two share a word.
//
// Buffers are read and written four words at a time (vec4: one load for a
// full input's four words, the CPU drivers' costliest instruction). 8- and
// 16-bit elements (`small`, KERNEL 0): a word holds 32 / bits elements; a full X
// or Y word is taken as it lies, a full condition word gives the word's mask
// from its bytes at once (each nonzero byte -> all ones over its element),
// and the word is select()ed bitwise. Bits past the band's last element are
// 0. 32-, 64- and 128-bit elements (`wide`, KERNEL 1): a word is one 32-bit part
// of one element, chosen whole by the element's condition byte (for 32-bit
// elements a full condition's 16 bytes are one load per invocation).
// `rows` (KERNEL 2): 32-bit elements, X and Y full, the condition broadcast along
// leading axes (a row of 16 bytes or more), ROW_WORDS words an invocation.
//
// A full X or Y may have been uploaded into dst itself (in_dst): each
// invocation reads its own words of dst before it writes them.
//
// The condition is bool, one byte per element, any nonzero byte true (as
// numpy). Sources are little-endian (big-endian inputs take the pieces path).
//
// By hand: the generator (gpu/elementwise_wgsl.py) reads each input once per
// element; here a word's condition bytes become one mask and broadcast runs
// are walked by adds.
//
// needs: (nothing beyond WebGPU)

const WG: u32 = 256u;
const WORDS: u32 = 16u;  // consecutive output words per invocation
const ROW_WORDS: u32 = 128u;  // of `rows`
#specialise KERNEL: u32  // 0 `small`, 1 `wide`, 2 `rows` (gpu/where.py chooses)

struct Input {
    q0: u32,    // run: window element of the band's first output element; full: the window offset
    r0: u32,    // run: the band's first element's place in its run of div
    div: u32,   // run: output elements per input element (the trailing broadcast run)
    wrap: u32,  // run: input elements before the index wraps (0xffffffff: never)
}

struct Params {
    words: u32,     // output words of this dispatch (the band)
    groups_x: u32,  // workgroups per row of the dispatch grid
    elems: u32,     // output elements of the band
    bits: u32,      // 8, 16, 32, 64 or 128
    c_full: u32,    // 1: the input is read in the full form, 0: as a run
    x_full: u32,
    y_full: u32,
    in_dst: u32,    // 1: X was uploaded into dst, 2: Y was (a full input, selected in place)
    c: Input,
    x: Input,
    y: Input,
}

@group(0) @binding(0) var<storage, read> xs: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> cond: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;
@group(0) @binding(3) var<uniform> params: Params;
@group(0) @binding(5) var<storage, read> ys: array<vec4<u32>>;

struct Run {
    q: u32,
    r: u32,
}

fn run_at(p: Input, e: u32) -> Run {
    let t = e + p.r0;
    return Run((p.q0 + t / p.div) % p.wrap, t % p.div);
}

// branch-free: the CPU drivers run both sides of a branch their lanes disagree on
fn run_next(c: Run, p: Input) -> Run {
    let r = c.r + 1u;
    let step = r == p.div;
    let q = c.q + select(0u, 1u, step);
    return Run(select(q, 0u, q == p.wrap), select(r, 0u, step));
}

// bit 0 of each byte: whether that byte of v is nonzero (no carries between bytes)
fn nonzero_bytes(v: vec4<u32>) -> vec4<u32> {
    var t = v | (v >> vec4<u32>(4u));
    t = t | (t >> vec4<u32>(2u));
    t = t | (t >> vec4<u32>(1u));
    return t & vec4<u32>(0x01010101u);
}

fn cond_word(i: u32) -> u32 {
    return cond[i >> 2u][i & 3u];
}

fn cond_byte(i: u32) -> u32 {
    return (cond_word(i >> 2u) >> ((i & 3u) * 8u)) & 0xffu;
}

fn x_word(i: u32) -> u32 {
    return xs[i >> 2u][i & 3u];
}

fn y_word(i: u32) -> u32 {
    return ys[i >> 2u][i & 3u];
}

// element q (of `bits`, `lg` = log2 of elements per word) of X / Y
fn x_elem(q: u32, lg: u32, bits: u32) -> u32 {
    return (x_word(q >> lg) >> ((q & ((1u << lg) - 1u)) * bits)) & ((1u << bits) - 1u);
}

fn y_elem(q: u32, lg: u32, bits: u32) -> u32 {
    return (y_word(q >> lg) >> ((q & ((1u << lg) - 1u)) * bits)) & ((1u << bits) - 1u);
}

// whether condition bytes i .. i + 3 of a row of `size` (wrapping past its end) are nonzero: one funnel of
// two words unless the row ends among them
fn row_four(i: u32, size: u32) -> vec4<bool> {
    var take = vec4<bool>(false);
    if (i + 3u < size) {
        let sh = (i & 3u) * 8u;
        let lo = cond_word(i >> 2u);
        let v = select((lo >> sh) | (cond_word((i >> 2u) + 1u) << (32u - sh)), lo, sh == 0u);
        take = bytes_set(v);
    } else {
        for (var j = 0u; j < 4u; j = j + 1u) {
            take[j] = cond_byte(select(i + j, i + j - size, i + j >= size)) != 0u;
        }
    }
    return take;
}

// whether each byte of v is nonzero
fn bytes_set(v: u32) -> vec4<bool> {
    let nz = nonzero_bytes(vec4<u32>(v)).x;
    return vec4<bool>((nz & 1u) != 0u, (nz & 0x100u) != 0u, (nz & 0x10000u) != 0u, (nz >> 24u) != 0u);
}

// X's and Y's word vector w >> 2 (one of them may lie in dst: in_dst) selected by `take`, into dst
fn select_into(w: u32, take: vec4<bool>) {
    var a = vec4<u32>(0u);
    var b = vec4<u32>(0u);
    if (params.in_dst == 1u) {
        a = dst[w >> 2u];
        b = ys[w >> 2u];
    } else if (params.in_dst == 2u) {
        a = xs[w >> 2u];
        b = dst[w >> 2u];
    } else {
        a = xs[w >> 2u];
        b = ys[w >> 2u];
    }
    dst[w >> 2u] = select(b, a, take);
}

fn small(wg: vec3<u32>, lid: u32) {
    let w0 = ((wg.y * params.groups_x + wg.x) * WG + lid) * WORDS;
    if (w0 >= params.words) {
        return;
    }
    let bits = params.bits;
    let lg = 5u - countTrailingZeros(bits);  // log2 of elements per word: 2 (8-bit) or 1 (16-bit)
    let per = 1u << lg;
    let emask = (1u << bits) - 1u;
    var c = run_at(params.c, w0 << lg);
    var x = run_at(params.x, w0 << lg);
    var y = run_at(params.y, w0 << lg);
    for (var g = 0u; g < WORDS; g = g + 4u) {
        let w = w0 + g;
        if (w >= params.words) {
            break;
        }
        var m = vec4<u32>(0u);
        if (params.c_full == 1u && bits == 8u) {  // an 8-bit band starts on a word: no window offset
            m = nonzero_bytes(cond[w >> 2u]) * 0xffu;
        } else if (params.c_full == 1u) {
            for (var j = 0u; j < 4u; j = j + 1u) {
                let i = ((w + j) << 1u) + params.c.q0;
                let nz = nonzero_bytes(vec4<u32>(cond_word(i >> 2u) >> ((i & 3u) * 8u))).x;
                m[j] = ((nz & 1u) * 0xffffu) | (((nz >> 8u) & 1u) * 0xffff0000u);
            }
        } else {
            for (var j = 0u; j < 4u; j = j + 1u) {
                var v = 0u;
                for (var e = 0u; e < per; e = e + 1u) {
                    v = v | select(0u, emask << (e * bits), cond_byte(c.q) != 0u);
                    c = run_next(c, params.c);
                }
                m[j] = v;
            }
        }
        var a = vec4<u32>(0u);
        if (params.in_dst == 1u) {
            a = dst[w >> 2u];
        } else if (params.x_full == 1u) {
            a = xs[w >> 2u];
        } else {
            for (var j = 0u; j < 4u; j = j + 1u) {
                var v = 0u;
                for (var e = 0u; e < per; e = e + 1u) {
                    v = v | (x_elem(x.q, lg, bits) << (e * bits));
                    x = run_next(x, params.x);
                }
                a[j] = v;
            }
        }
        var b = vec4<u32>(0u);
        if (params.in_dst == 2u) {
            b = dst[w >> 2u];
        } else if (params.y_full == 1u) {
            b = ys[w >> 2u];
        } else {
            for (var j = 0u; j < 4u; j = j + 1u) {
                var v = 0u;
                for (var e = 0u; e < per; e = e + 1u) {
                    v = v | (y_elem(y.q, lg, bits) << (e * bits));
                    y = run_next(y, params.y);
                }
                b[j] = v;
            }
        }
        var out = (a & m) | (b & ~m);
        // the band's last word: bits past its last element are 0 (words past it are never read)
        let last = params.words - 1u;
        let tail = params.elems - (last << lg);
        if (tail < per && last - w < 4u) {
            out[last - w] = out[last - w] & ((1u << (tail * bits)) - 1u);
        }
        dst[w >> 2u] = out;
    }
}

fn wide(wg: vec3<u32>, lid: u32) {
    let w0 = ((wg.y * params.groups_x + wg.x) * WG + lid) * WORDS;
    if (w0 >= params.words) {
        return;
    }
    let lg = countTrailingZeros(params.bits) - 5u;  // log2 of words per element
    let lo = (1u << lg) - 1u;
    let e0 = w0 >> lg;  // WORDS is a multiple of the words per element: w0 starts an element
    // 32-bit elements: a 32-bit band starts on a condition word, so the 16 bytes are one aligned vec4
    let quad = params.c_full == 1u && lg == 0u;
    var cv = vec4<u32>(0u);
    if (quad) {
        cv = cond[w0 >> 4u];
    }
    if (quad && params.x_full == 1u && params.y_full == 1u) {  // all three full: the plain loop
        for (var g = 0u; g < WORDS; g = g + 4u) {
            let w = w0 + g;
            if (w >= params.words) {
                break;
            }
            let v = cv[g >> 2u];
            let take = vec4<bool>((v & 0xffu) != 0u, (v & 0xff00u) != 0u, (v & 0xff0000u) != 0u, (v >> 24u) != 0u);
            select_into(w, take);
        }
        return;
    }
    if (params.x_full == 1u && params.y_full == 1u && params.c_full == 0u && params.c.div >= WORDS) {
        // the condition along a trailing run of at least WORDS elements: an invocation's elements see at most
        // two of its bytes, this run's and the next's, chosen by where the run ends
        let c0 = run_at(params.c, e0);
        let left = vec4<u32>(params.c.div - c0.r);
        let q1 = c0.q + 1u;
        let now = vec4<bool>(cond_byte(c0.q) != 0u);
        let next = vec4<bool>(cond_byte(select(q1, 0u, q1 == params.c.wrap)) != 0u);
        for (var g = 0u; g < WORDS; g = g + 4u) {
            let w = w0 + g;
            if (w >= params.words) {
                break;
            }
            let k = (vec4<u32>(g) + vec4<u32>(0u, 1u, 2u, 3u)) >> vec4<u32>(lg);  // elements from e0
            let take = select(next, now, k < left);
            select_into(w, take);
        }
        return;
    }
    if (params.x_full == 1u && params.y_full == 1u) {  // X and Y full: only the condition element by element
        var c = run_at(params.c, e0);
        var t = false;
        for (var g = 0u; g < WORDS; g = g + 4u) {
            let w = w0 + g;
            if (w >= params.words) {
                break;
            }
            var take = vec4<bool>(false);
            for (var j = 0u; j < 4u; j = j + 1u) {
                let ww = w + j;
                if ((ww & lo) == 0u) {  // an element's condition byte, read once for its words
                    let i = select(c.q, (ww >> lg) + params.c.q0, params.c_full == 1u);
                    t = cond_byte(i) != 0u;
                    c = run_next(c, params.c);
                }
                take[j] = t;
            }
            select_into(w, take);
        }
        return;
    }
    let each = !quad || (params.x_full == 0u && params.in_dst != 1u) || (params.y_full == 0u && params.in_dst != 2u);
    var c = run_at(params.c, e0);
    var x = run_at(params.x, e0);
    var y = run_at(params.y, e0);
    var t = false;
    for (var g = 0u; g < WORDS; g = g + 4u) {
        let w = w0 + g;
        if (w >= params.words) {
            break;
        }
        var take = vec4<bool>(false);
        var a = vec4<u32>(0u);
        var b = vec4<u32>(0u);
        if (quad) {
            let v = cv[g >> 2u];
            take = vec4<bool>((v & 0xffu) != 0u, (v & 0xff00u) != 0u, (v & 0xff0000u) != 0u, (v >> 24u) != 0u);
        }
        if (params.in_dst == 1u) {
            a = dst[w >> 2u];
        } else if (params.x_full == 1u) {
            a = xs[w >> 2u];
        }
        if (params.in_dst == 2u) {
            b = dst[w >> 2u];
        } else if (params.y_full == 1u) {
            b = ys[w >> 2u];
        }
        if (each) {  // inputs read word by word: runs, and the condition of wider elements
            for (var j = 0u; j < 4u; j = j + 1u) {
                let ww = w + j;
                let part = ww & lo;
                if (ww != w0 && part == 0u) {  // the next element
                    if (params.c_full == 0u) {
                        c = run_next(c, params.c);
                    }
                    if (params.x_full == 0u) {
                        x = run_next(x, params.x);
                    }
                    if (params.y_full == 0u) {
                        y = run_next(y, params.y);
                    }
                }
                if (!quad) {
                    if (part == 0u) {  // an element's condition byte, read once for its words
                        if (params.c_full == 1u) {
                            t = cond_byte((ww >> lg) + params.c.q0) != 0u;
                        } else {
                            t = cond_byte(c.q) != 0u;
                        }
                    }
                    take[j] = t;
                }
                if (params.x_full == 0u) {
                    a[j] = x_word((x.q << lg) + part);
                }
                if (params.y_full == 0u) {
                    b[j] = y_word((y.q << lg) + part);
                }
            }
        }
        dst[w >> 2u] = select(b, a, take);
    }
}

// 32-bit elements, X and Y full, the condition broadcast along leading axes (a row of at least 16 bytes):
// ROW_WORDS words an invocation, where `wide`'s 16 and its prologue (a division, the tests of every other
// case) cost as much as the loads (1.5-1.7x `wide` at 128 words against 16, CPU time, Mesa 22.3).
// Sixteen condition bytes that start a vector of the row are one load; others are row_four's funnels.
fn rows(wg: vec3<u32>, lid: u32) {
    let w0 = ((wg.y * params.groups_x + wg.x) * WG + lid) * ROW_WORDS;
    if (w0 >= params.words) {
        return;
    }
    let size = params.c.wrap;
    var i = run_at(params.c, w0).q;  // the condition byte of word w0 + g, walked with adds
    for (var g = 0u; g < ROW_WORDS; g = g + 16u) {
        let w = w0 + g;
        if (w >= params.words) {
            break;
        }
        if ((i & 15u) == 0u && i + 16u <= size && w + 16u <= params.words) {
            let v = cond[i >> 4u];
            select_into(w, bytes_set(v.x));
            select_into(w + 4u, bytes_set(v.y));
            select_into(w + 8u, bytes_set(v.z));
            select_into(w + 12u, bytes_set(v.w));
            i = i + 16u;
            i = select(i, i - size, i >= size);
            continue;
        }
        for (var k = 0u; k < 16u; k = k + 4u) {
            if (w + k >= params.words) {
                break;
            }
            select_into(w + k, row_four(i, size));
            i = i + 4u;
            i = select(i, i - size, i >= size);
        }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    switch KERNEL {
        case 0u: { small(wg, lid); }
        case 1u: { wide(wg, lid); }
        default: { rows(wg, lid); }  // 2u
    }
}
