"""The WGSL the pieces kernels (render/pieces.py's General and Rows) write from patterns, each written once
here: the walk of a piece's outer axes (``decompose``) and a guarded line (``when``), which both kernels use; the
general kernel's sources read as stored, byte-swapped by their swap unit (``SWAPPED``, which the strided and
indexed gathers read through too, and each source's functions: ``source``), and the value it takes (``value``);
the words kernel's five words from two vec4s (``pick``)."""

from __future__ import annotations

# A source element's words and sub-word elements as stored, byte-swapped by the swap unit (0, 2, 4 or 8 bytes):
# word q of element s (elements of 2^lg words; big-endian, the unit's words in reverse: swap / 4 is 1 or 2
# words), element s of 32 / bits packed into word w (low bits first, as ONNX packs), and x put as element j of
# a word being assembled.
SWAPPED = """fn word_swapped(x: u32, swap: u32) -> u32 {
    return select(x, bswap32(x), swap >= 4u);
}

fn word_at(s: u32, q: u32, lg: u32, swap: u32) -> u32 {
    let flip = select(0u, swap / 4u - 1u, swap >= 4u);
    let lo = (1u << lg) - 1u;
    return (s << lg) + ((q & lo) ^ flip);
}

// element s's place in its word, (s % (32 / bits)) * bits, is (s * bits) % 32: no u32 division, which is no
// SIMD instruction on a CPU adapter (a loop over the lanes there)
fn small_of(w: u32, s: u32, bits: u32, swap: u32) -> u32 {
    var x = (w >> ((s * bits) & 31u)) & ((1u << bits) - 1u);
    if (swap == 2u) {
        x = ((x & 0xffu) << 8u) | (x >> 8u);
    }
    return x;
}

fn put(word: u32, x: u32, j: u32, bits: u32) -> u32 {
    let shift = j * bits;
    return (word & ~(((1u << bits) - 1u) << shift)) | (x << shift);
}

"""


def decompose(axis: str, body: str) -> str:
    """Walk the outer axes from the last, index i along each (``body``: its 8-space lines)."""
    return (f"    for (var k = params.rank; k > 0u; k = k - 1u) {{\n        let a = {axis}(params.at + k - 1u);\n"
            f"        let i = rest % a.dim;\n        rest = rest / a.dim;\n{body}    }}\n")


def when(test: str, then: str, pad: str = "        ") -> str:
    return f"{pad}if ({test}) {{\n{pad}    {then};\n{pad}}}\n"


def source(name: str, binding: str, swap: str) -> str:
    """Word q of element s (bits >= 32) and element s (bits < 32) of a source, its swap unit ``swap``."""
    return (f"fn {name}_word(s: u32, q: u32, lg: u32) -> u32 {{\n    return word_swapped({binding}[word_at(s, q, lg, "
            f"params.{swap})], params.{swap});\n}}\n\nfn {name}_small(s: u32, bits: u32) -> u32 {{\n"
            f"    let lg = 5u - countTrailingZeros(bits);\n    return small_of({binding}[s >> lg], s, bits, "
            f"params.{swap});\n}}\n")


def value(pad: str, fill: str, other: str, src: str) -> str:
    """x: the fill, the other source's or the source's value."""
    return (f"{pad}var x = 0u;\n{pad}if (fill) {{\n{pad}    x = {fill};\n{pad}}} else if (from_other) {{\n"
            f"{pad}    x = {other};\n{pad}}} else {{\n{pad}    x = {src};\n{pad}}}\n")


def pick() -> str:
    """Five consecutive words from two vec4s a, b, from word r (0..3) of a."""
    lanes = ("a.x", "a.y", "a.z", "a.w", "b.x", "b.y", "b.z", "b.w")
    rows = "".join(f"    let s{j} = select(select(select({lanes[j]}, {lanes[j + 1]}, r == 1u), {lanes[j + 2]}, "
                   f"r == 2u), {lanes[j + 3]}, r == 3u);\n" for j in range(5))
    return (f"fn pick(a: vec4<u32>, b: vec4<u32>, r: u32) -> array<u32, 5> {{\n{rows}"
            "    return array<u32, 5>(s0, s1, s2, s3, s4);\n}\n")
