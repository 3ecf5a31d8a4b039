"""The row gathers, rendered: runs of raw int64 indices read as vec4 loads, the data offsets found by one
table walk and then by adds, whole vec4 stores. One generator (``_runs``) emits both kernels at both
widths (``words``: 1 or 2 words an element or slice): ``NdRows``, GatherND's pairs, and ``ElementsRows``,
GatherElements (gpu/indexed_variants.py's ``nd_pairs`` and ``elements_rows`` plan them).

The indices are checked and wrapped (``folded``, all 64 bits, as render/indices.py's checked_index checks
one at a time): a bad one keeps the smallest position in status[0] (each invocation's smallest, once) and
reads 0; the host reads nothing back then. Every slice or element is read, so every index is checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..layout import Struct
from ..shaders import shader_source
from .frame import INVOCATION, Frame
from .indices import AXIS, REPORT, VEC4_BINDINGS, row, table, table_row, walk
from .schedule import Units

RUN = 16  # GatherND's slices per invocation (params.run; runs of 64 did not win on both Mesas)
ND_PARAMS = Struct("Params", tuple((n, "u32") for n in (
    "count",     # slices: this dispatch's end
    "groups_x",  # workgroups per row of the dispatch grid
    "outer",     # leading output axes
    "iswap",     # 1: big-endian indices
    "first",     # this dispatch's first slice (the slices before it are another's)
    "ibase",     # the int64 index raw[0] holds: raw holds this dispatch's tuples only
    "run",       # slices per invocation: RUN
    "pad2")))
ELEMENTS_PARAMS = Struct("Params", tuple((n, "u32") for n in (
    "count",     # output elements
    "groups_x",  # workgroups per row of the dispatch grid
    "rank",      # output axes
    "iswap",     # 1: big-endian indices
    "bound",     # the gathered axis' size
    "lstride",   # its data stride (elements)
    "pad0", "pad1")))


@dataclass(frozen=True)
class _Rows(Frame):
    words: int
    NAME = ""
    bindings = VEC4_BINDINGS
    LABEL = "{k.NAME} rows[wg={s.wg},words={k.words}]"

    def __post_init__(self) -> None:
        if self.words not in (1, 2):
            raise ValueError(f"no {self.NAME} of {self.words} words")

    def main(self) -> str:
        return f"    words{self.words}(wg, lid);\n"


@dataclass(frozen=True)
class NdRows(_Rows):
    """GatherND by pairs, slices of ``words`` words: each tuple one vec4 load, ``params.run`` slices an
    invocation (``RUN``), slices [first, count) a dispatch, ``raw`` its
    tuples from int64 ``ibase`` on. Along a row, eight tuples are read and checked before their eight data
    words, so the random data loads follow one another (1.14x reading each tuple just before its word, Mesa
    22.3)."""

    schedule: Units = Units("RUN")  # the run: params.run
    NAME = "gather-nd"
    PARAMS = ND_PARAMS

    def parts(self) -> list[str]:
        return [shader_source("lib/bswap.wgsl"), _FOLDED, REPORT, *table(),
                walk("p", "params.outer", ("off", "ip", "last")), _ND,
                _take("p", "w: Row, p: u32", "base(a.off, a.ip, w, bad)", "w.dim",
                      "a.off + w.dstride, a.ip + w.istride"),
                _start("params.first + ", "params.run"),
                _runs(self.words, "p", "let w = row();", "params.run", "w.dim", "the run along one leading row",
                      _nd_fast(self.words), "slices", [], lambda j: f"w, p{_plus(j)}")]


@dataclass(frozen=True)
class ElementsRows(_Rows):
    """GatherElements by runs of RUN elements of ``words`` words, element e reading index e."""

    schedule: Units = Units("RUN", 16, note="output elements per invocation")
    NAME = "gather-elements"
    PARAMS = ELEMENTS_PARAMS

    def parts(self) -> list[str]:
        return [table_row("axis", AXIS), shader_source("lib/bswap.wgsl"), _FOLDED, REPORT,
                walk("e", "params.rank", ("off", "last"), "stride"),
                _take("e", "lo: u32, hi: u32, e: u32, dim: u32, ds: u32",
                      "a.off + folded(lo, hi, e, params.bound, bad) * params.lstride", "dim", "a.off + ds"),
                _start("", "RUN"),
                _runs(self.words, "e", "let last = axis(params.rank - 1u);", "RUN", "last.dim",
                      "the run within one row", _elements_fast(self.words), "elements",
                      _loads(4 // self.words, "e"), lambda j: f"{_HALVES[j]}, e{_plus(j)}, last.dim, last.stride")]


_HALVES = ("x.x, x.y", "x.z, x.w", "y.x, y.y", "y.z, y.w")  # the int64s of two vec4 loads, (lo, hi) each
_COUNT = {1: "one", 2: "two", 4: "four"}


def _plus(j: int, of: str = "") -> str:
    """`` + j`` steps of ``of`` (of 1 where none is named)."""
    return "" if not j else f" + {j}u" if not of else f" + {of}" if j == 1 else f" + {j}u * {of}"


def _loads(n: int, v: str) -> list[str]:
    """The vec4 loads of ``n`` int64 indices from position ``v`` on (two a load)."""
    return [f"let x = raw[{v} >> 1u];"] + ([f"let y = raw[({v} >> 1u) + 1u];"] if n > 2 else [])


def _start(first: str, per: str) -> str:
    return (f"fn start(wg: vec3<u32>, lid: u32) -> u32 {{\n"
            f"    return {first}({INVOCATION}) * {per};\n}}\n")


def _runs(words: int, v: str, setup: str, run: str, dim: str, along: str, fast: list[str], what: str,
          loads: list[str], args: Callable[[int], str]) -> str:
    """``words{words}``: an invocation's run of ``run`` from ``v``0 (its slice or element index ``v``):
    ``fast`` where the run lies along one row (adds only), else a vector at a time by ``take`` (its
    arguments between the step and ``bad``: ``args(j)`` for the vector's j-th)."""
    n, lets = 4 // words, []
    takes = [f"let s{j} = take({f's{j - 1}.a' if j else 'a'}, {args(j)}, &bad);" for j in range(n)]
    if words == 1:
        store = f"vec4<u32>({', '.join(f'src[s{j}.o]' for j in range(n))})"
    elif v == "p":
        store = f"vec4<u32>({', '.join(f'src[s{j}.o], src[s{j}.o + 1u]' for j in range(n))})"
    else:
        lets = [f"let w{j} = 2u * s{j}.o;" for j in range(n)]
        store = f"vec4<u32>({', '.join(f'src[w{j}], src[w{j} + 1u]' for j in range(n))})"
    loads_note = f", {_COUNT[len(loads)]} index load{'s' if len(loads) > 1 else ''}" if loads else ""
    body = "\n".join(f"        {line}" for line in [*loads, *takes, f"a = s{n - 1}.a;", *lets,
                                                      f"dst[{v} >> {3 - words}u] = {store};"])
    fast_text = "".join(f"        {line}\n" for line in fast)
    return f"""fn words{words}(wg: vec3<u32>, lid: u32) {{
    let {v}0 = start(wg, lid);
    if ({v}0 >= params.count) {{
        return;
    }}
    {setup}
    var a = at({v}0);
    var bad = 0xffffffffu;
    if (a.last + {run} <= {dim} && {v}0 + {run} <= params.count) {{  // {along}: adds only
{fast_text}        report(bad);
        return;
    }}
    for (var u = 0u; u < {run} / {n}u; u = u + 1u) {{  // one output vector: {_COUNT[n]} {what}{loads_note}
        let {v} = {v}0 + {n}u * u;
        if ({v} >= params.count) {{
            break;
        }}
{body}
    }}
    report(bad);
}}
"""


def _nd_fast(words: int) -> list[str]:
    """Eight slices at a time along the row: their tuples read first (``eight``), then their data words."""
    if words == 1:
        out = [f"    let v{k} = src[b[{k}]];" for k in range(8)] + [
            "    dst[(p0 + h) >> 2u] = vec4<u32>(v0, v1, v2, v3);",
            "    dst[((p0 + h) >> 2u) + 1u] = vec4<u32>(v4, v5, v6, v7);"]
    else:
        out = ["    let o = (p0 + h) >> 1u;"] + [
            f"    dst[o{_plus(j)}] = vec4<u32>(src[b[{2 * j}]], src[b[{2 * j}] + 1u], src[b[{2 * j + 1}]], "
            f"src[b[{2 * j + 1}] + 1u]);" for j in range(4)]
    return ["for (var h = 0u; h < params.run; h = h + 8u) {", "    let b = eight(a, w, h, &bad);", *out, "}"]


def _elements_fast(words: int) -> list[str]:
    """The run within one row: each element's offset an add along the last axis and its index."""
    n = 4 // words

    def at(j: int, scale: str) -> str:
        return f"o{_plus(j, 'last.stride')} + folded({_HALVES[j]}, e{_plus(j)}, params.bound, &bad) * {scale}"

    if words == 1:
        pad = " " * len("dst[e >> 2u] = vec4<u32>(")
        elems = f",\n        {pad}".join(f"src[{at(j, 'L')}]" for j in range(n))
        out = ["let L = params.lstride;", f"dst[e >> 2u] = vec4<u32>({elems});"]
    else:
        out = [f"let w{j} = 2u * ({at(j, 'params.lstride')});" for j in range(n)] + [
            "dst[e >> 1u] = vec4<u32>(src[w0], src[w0 + 1u], src[w1], src[w1 + 1u]);"]
    return [f"for (var u = 0u; u < RUN / {n}u; u = u + 1u) {{", f"    let e = e0 + {n}u * u;",
            *(f"    {line}" for line in _loads(n, "e")), f"    let o = a.off + {n}u * u * last.stride;",
            *(f"    {line}" for line in out), "}"]


_ND = row(pair=True) + """
// The data word where the slice whose tuple sits at `ip` starts, past `off`.
fn base(off: u32, ip: u32, w: Row, bad: ptr<function, u32>) -> u32 {
    let x = raw[(ip - params.ibase) >> 1u];
    return off + folded(x.x, x.y, ip, w.look0.bound, bad) * w.look0.stride
         + folded(x.z, x.w, ip + 1u, w.look1.bound, bad) * w.look1.stride;
}

// The data words of slices h .. h + 7 of a run along one leading row that starts at `a`: all eight tuples
// read before any data word is, so the data loads (random, the kernel's slowest) follow one another.
// A loop, not eight calls in one expression: SwiftShader (Chromium's WebGPU on the CPU) compiles a
// straight run of these calls in time that grows far faster than their number (four: 11 s, eight: over
// 390 s, until the GPU process is killed); the loop is one call's code and compiles in a fraction of a second.
fn eight(a: At, w: Row, h: u32, bad: ptr<function, u32>) -> array<u32, 8> {
    var b: array<u32, 8>;
    for (var k = 0u; k < 8u; k = k + 1u) {
        b[k] = base(a.off + (h + k) * w.dstride, a.ip + (h + k) * w.istride, w, bad);
    }
    return b;
}

"""

def _take(v: str, args: str, offset: str, dim: str, step: str) -> str:
    """Slice or element ``v``'s data word (``offset``; 0 past the end: nothing read, nothing checked), and
    a moved to the next one: ``step`` added along the last axis (of ``dim``) until it ends."""
    return f"""struct Step {{
    a: At,
    o: u32,
}}

fn take(a: At, {args}, bad: ptr<function, u32>) -> Step {{
    var s = Step(a, 0u);
    if ({v} >= params.count) {{
        return s;
    }}
    s.o = {offset};
    if (a.last + 1u < {dim}) {{
        s.a = At({step}, a.last + 1u);
    }} else {{
        s.a = at({v} + 1u);
    }}
    return s;
}}
"""


_FOLDED = """// The int64 index (lo, hi) at position `pos` wrapped into [0, d), checked: a bad one lowers `bad` to its
// position and reads 0, with no branch and no atomic (`report` once instead).
fn folded(lo0: u32, hi0: u32, pos: u32, d: u32, bad: ptr<function, u32>) -> u32 {
    let swap = params.iswap != 0u;
    let lo = select(lo0, bswap32(hi0), swap);
    let hi = select(hi0, bswap32(lo0), swap);
    let neg = hi == 0xffffffffu && lo != 0u && (0u - lo) <= d;
    let ok = (hi == 0u && lo < d) || neg;
    *bad = min(*bad, select(pos, 0xffffffffu, ok));
    return select(0u, select(lo, lo + d, neg), ok);
}
"""

KERNELS = {(cls.NAME, words): cls(words) for cls in (NdRows, ElementsRows) for words in (1, 2)}
