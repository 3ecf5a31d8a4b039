"""Where's select rendered on the whole-word schedule (gpu/render/schedule.py), beside gpu/render/elementwise.py's
element schedule, which ran Where at a third of this one's bytes per second (float32, 16 MiB, the condition a
row; lavapipe, Mesa 22.3). Three bodies (``variant``, chosen by gpu/word_kernels.py's ``select_variant``; the
words that wide and rows hold: ``Select.KEEPS``):

``small`` (8- and 16-bit elements)
    a word holds 32 / bits elements; a full X or Y word is taken as it lies, a full condition word gives the word's
    mask from its bytes at once (each nonzero byte -> all ones over its element), and the word is select()ed
    bitwise. Bits past the band's last element are 0.
``wide`` (32-, 64- and 128-bit elements)
    a word is one 32-bit part of one element, chosen whole by the element's condition byte.
``rows`` (32-bit elements, X and Y full, the condition broadcast along
    leading axes, a row of 16 bytes or more): without wide's prologue (a division, the tests of every other case).

Each input is read as *full* (element e + base of its window, a word at a time) or as a *run* (element ((e + r0) /
div + q0) % wrap: a scalar, or broadcast along trailing or leading axes or both), found with one division per
invocation and walked with adds. A full X or Y may lie in dst itself (``in_dst``). The condition is bool, any
nonzero byte true (as numpy); a select moves bits, so NaN payloads and -0.0 pass as they lie. Bindings:
gpu/pieces.py's layout.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..layout import Struct
from .frame import Binding
from .schedule import VECTOR, WORD_FIELDS, OnWords, head, loop, packed, small_head, wide_head

INPUT = Struct("Input", (
    ("q0", "u32"),    # run: window element of the band's first output element; full: the window offset
    ("r0", "u32"),    # run: the band's first element's place in its run of div
    ("div", "u32"),   # run: output elements per input element (the trailing broadcast run)
    ("wrap", "u32"),  # run: input elements before the index wraps (0xffffffff: never)
))
PARAMS = Struct("Params", WORD_FIELDS + (  # bits: 8, 16, 32, 64 or 128
    ("c_full", "u32"),    # 1: the input is read in the full form, 0: as a run
    ("x_full", "u32"),
    ("y_full", "u32"),
    ("in_dst", "u32"),    # 1: X was uploaded into dst, 2: Y was (a full input, selected in place)
    ("c", "Input"),
    ("x", "Input"),
    ("y", "Input"),
), members=(INPUT,))


@dataclass(frozen=True)
class Select(OnWords):
    """Where's kernel: output = X where the condition is true, else Y, over ``schedule``."""

    NAME = "select"
    PARAMS = PARAMS
    bindings = (Binding(0, "xs", "read", "vec4<u32>"), Binding(1, "cond", "read", "vec4<u32>"),
                Binding(2, "dst", "read_write", "vec4<u32>"), Binding(3), Binding(5, "ys", "read", "vec4<u32>"))
    # wide reads a 32-bit invocation's 16 condition bytes as one vec4 (16 words, no other number); rows
    # walks a whole row's words past its prologue (1.5-1.7x wide's speed at 128 words, Mesa 22.3)
    KEEPS = {"wide": 4 * VECTOR, "rows": 128}

    def shared(self) -> list[str]:
        return [_RUNS, _INPUTS + "".join(_input(v, b) for v, b in _WORDS), _SELECT]


_RUNS = """struct Run {
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
"""

_INPUTS = """// bit 0 of each byte: whether that byte of v is nonzero (no carries between bytes)
fn nonzero_bytes(v: vec4<u32>) -> vec4<u32> {
    var t = v | (v >> vec4<u32>(4u));
    t = t | (t >> vec4<u32>(2u));
    t = t | (t >> vec4<u32>(1u));
    return t & vec4<u32>(0x01010101u);
}

// whether each byte of v is nonzero
fn bytes_set(v: u32) -> vec4<bool> {
    return vec4<bool>((v & 0xffu) != 0u, (v & 0xff00u) != 0u, (v & 0xff0000u) != 0u, (v >> 24u) != 0u);
}

fn cond_byte(i: u32) -> u32 {
    return (cond_word(i >> 2u) >> ((i & 3u) * 8u)) & 0xffu;
}
"""


_WORDS = (("cond", "cond"), ("x", "xs"), ("y", "ys"))  # an input's name and its binding


def _input(v: str, binding: str) -> str:
    """Word i of an input and, of X and Y, element q (of ``bits``, ``lg`` = log2 of elements per word)."""
    word = f"fn {v}_word(i: u32) -> u32 {{\n    return {binding}[i >> 2u][i & 3u];\n}}\n"
    return word if v == "cond" else (
        f"{word}\nfn {v}_elem(q: u32, lg: u32, bits: u32) -> u32 {{\n"
        f"    return ({v}_word(q >> lg) >> ((q & ((1u << lg) - 1u)) * bits)) & ((1u << bits) - 1u);\n}}\n")


_SELECT = """// X's and Y's word vector w >> 2 (one of them may lie in dst: in_dst) selected by `take`, into dst (one
// branch on in_dst: through _whole's two, the all-full loop took 1.1-1.3x the CPU s, Mesa 25, 3 rounds)
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
"""


def _whole(v: str, pad: str) -> str:
    """X's words into a (Y's into b) where it is full: from dst where it was uploaded there (in_dst 1 or 2)."""
    name, at = ("a", 1) if v == "x" else ("b", 2)
    return (f"{pad}if (params.in_dst == {at}u) {{\n{pad}    {name} = dst[w >> 2u];\n{pad}}} else if "
            f"(params.{v}_full == 1u) {{\n{pad}    {name} = {v}s[w >> 2u];\n{pad}}}")


def _small() -> str:
    """8- and 16-bit elements: whole words, the condition's bytes one mask."""

    def run(into: str, v: str, value: str) -> str:  # input v's run: `value` of each element, packed into `into`
        pad = " " * 20
        return packed(" " * 12, into, f"{pad}v = v | {value};\n{pad}{v} = run_next({v}, params.{v});\n")

    def whole(v: str) -> str:  # X (a) or Y (b): a full word, or a run's elements
        name = "a" if v == "x" else "b"
        return (f"        var {name} = vec4<u32>(0u);\n" + _whole(v, "        ") + " else {\n"
                + run(name, v, f"({v}_elem({v}.q, lg, bits) << (e * bits))") + "        }\n")

    return ("fn small(wg: vec3<u32>, lid: u32) {\n" + small_head(": 2 (8-bit) or 1 (16-bit)")
            + """    var c = run_at(params.c, w0 << lg);
    var x = run_at(params.x, w0 << lg);
    var y = run_at(params.y, w0 << lg);
""" + loop("    ") + """        var m = vec4<u32>(0u);
        if (params.c_full == 1u && bits == 8u) {  // an 8-bit band starts on a word: no window offset
            m = nonzero_bytes(cond[w >> 2u]) * 0xffu;
        } else if (params.c_full == 1u) {
            for (var j = 0u; j < 4u; j = j + 1u) {
                let i = ((w + j) << 1u) + params.c.q0;
                let nz = nonzero_bytes(vec4<u32>(cond_word(i >> 2u) >> ((i & 3u) * 8u))).x;
                m[j] = ((nz & 1u) * 0xffffu) | (((nz >> 8u) & 1u) * 0xffff0000u);
            }
        } else {
""" + run("m", "c", "select(0u, emask << (e * bits), cond_byte(c.q) != 0u)") + """        }
""" + whole("x") + whole("y") + """        var out = (a & m) | (b & ~m);
        // the band's last word: bits past its last element are 0 (words past it are never read)
        let last = params.words - 1u;
        let tail = params.elems - (last << lg);
        if (tail < per && last - w < 4u) {
            out[last - w] = out[last - w] & ((1u << (tail * bits)) - 1u);
        }
        dst[w >> 2u] = out;
    }
}
""")


def _wide() -> str:
    """32-, 64- and 128-bit elements: each word a part of one element."""
    return ("fn wide(wg: vec3<u32>, lid: u32) {\n" + wide_head()
            + """    let e0 = w0 >> lg;  // WORDS is a multiple of the words per element: w0 starts an element
    // 32-bit elements: a 32-bit band starts on a condition word, so the 16 bytes are one aligned vec4
    let quad = params.c_full == 1u && lg == 0u;
    var cv = vec4<u32>(0u);
    if (quad) {
        cv = cond[w0 >> 4u];
    }
    if (quad && params.x_full == 1u && params.y_full == 1u) {  // all three full: the plain loop
""" + loop("        ") + """            select_into(w, bytes_set(cv[g >> 2u]));
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
""" + loop("        ") + """            // elements from e0
            let k = (vec4<u32>(g) + vec4<u32>(0u, 1u, 2u, 3u)) >> vec4<u32>(lg);
            let take = select(next, now, k < left);
            select_into(w, take);
        }
        return;
    }
    if (params.x_full == 1u && params.y_full == 1u) {  // X and Y full: only the condition element by element
        var c = run_at(params.c, e0);
        var t = false;
""" + loop("        ") + """            var take = vec4<bool>(false);
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
""" + loop("    ") + """        var take = vec4<bool>(false);
        var a = vec4<u32>(0u);
        var b = vec4<u32>(0u);
        if (quad) {
            take = bytes_set(cv[g >> 2u]);
        }
""" + _whole("x", "        ") + "\n" + _whole("y", "        ") + """
        if (each) {  // inputs read word by word: runs, and the condition of wider elements
            for (var j = 0u; j < 4u; j = j + 1u) {
                let ww = w + j;
                let part = ww & lo;
                if (ww != w0 && part == 0u) {  // the next element
""" + "".join(f"                    if (params.{v}_full == 0u) {{\n                        {v} = run_next({v}, "
          f"params.{v});\n                    }}\n" for v in "cxy") + """                }
                if (!quad) {
                    if (part == 0u) {  // an element's condition byte, read once for its words
                        t = cond_byte(select(c.q, (ww >> lg) + params.c.q0, params.c_full == 1u)) != 0u;
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
""")


def _rows() -> str:
    """32-bit elements, X and Y full, the condition a row: sixteen condition bytes that start a vector of the row
    are one load; others are two words' funnels (``row_four``)."""
    return """// whether condition bytes i .. i + 3 of a row of `size` (wrapping past its end) are nonzero: one
// funnel of two words unless the row ends among them
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

fn rows(wg: vec3<u32>, lid: u32) {
""" + head() + """    let size = params.c.wrap;
    var i = run_at(params.c, w0).q;  // the condition byte of word w0 + g, walked with adds
""" + loop("    ", 16) + """        if ((i & 15u) == 0u && i + 16u <= size && w + 16u <= params.words) {
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
"""


Select.BODIES = {"small": _small, "wide": _wide, "rows": _rows}
