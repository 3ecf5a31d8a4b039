"""Index reading and checking shared by the kernel families (render/indexed.py, scatter.py, scatter_slices.py,
slices.py, lines.py, rows.py): how an int32 or int64 index is read as stored and checked against its axis, an
invocation's one report of its smallest bad position, the table walks, and the rows of a kernel's ``axes``.
"""

from __future__ import annotations

from ..index_table import TABLE_AXIS, TABLE_LOOKUP
from ..layout import Struct
from ..shaders import shader_source
from .frame import Binding, first

# An output axis of the strided tables (render/lines.py, rows.py): its size and data stride (words, or elements;
# 0 on the gathered axis), one vec4 row of `axes` each; the host packs them by these names.
AXIS = Struct("Axis", (("dim", "u32"), ("stride", "u32"), ("pad0", "u32"), ("pad1", "u32")))


# The whole-slice kernels' Params (render/slices.py's gather, scatter_slices.py's scatter: one slice plan,
# render/slices.py's, fills both); the gather's vector variants add fields.
SLICE_FIELDS = (
    ("words", "u32"),     # output units (words, or vectors); the scatter: update words (its claim: index tuples)
    ("groups_x", "u32"),  # workgroups per row of the dispatch grid
    ("width", "u32"),     # units per slice
    ("outer", "u32"),     # leading output (the scatter: update) axes
    ("nlook", "u32"),     # indices per tuple
    ("iswap", "u32"),     # raw indices: 1 big-endian
    ("cmode", "u32"),     # raw indices: the index check's (render/indexed.py) mode (0 wrap, 1 0 .. d, 2 0 .. d-1)
)
SLICE_PARAMS = Struct("Params", (*SLICE_FIELDS, ("pad0", "u32")))


# The bindings of the kernels that read raw indices and store whole vec4s (render/lines.py, rows.py).
VEC4_BINDINGS = (Binding(0, "src", "read", "u32"), Binding(1, "dst", "read_write", "vec4<u32>"), Binding(2),
                 Binding(3, "axes", "read", "vec4<u32>"), Binding(4, "raw", "read", "vec4<u32>"),
                 Binding(5, "status", "read_write", "atomic<u32>"))


def table_row(fn: str, struct: Struct) -> str:
    """WGSL: ``struct`` and ``fn(r)``, row r of ``axes`` (``array<vec4<u32>>``) as one, by one vec4 load named by
    the accessor: declared as array<Axis>, lavapipe (Mesa 22.3) loaded the struct field by field, and
    indexed_slabs' Gather of rows ran at 0.92x (benchmarks/trees_ab.py --only "gather (rows)")."""
    return f"""{struct.wgsl()}
// Row r of `axes` as {struct.name}: one vec4 load (render/indices.py's table_row says why).
fn {fn}(r: u32) -> {struct.name} {{
    let a = axes[r];
    return {struct.name}(a.x, a.y, a.z, a.w);
}}
"""


def table() -> list[str]:
    """The parts that declare an index table's rows (gpu/index_table.py): ``axis(r)`` and ``lookup(r)``."""
    return [table_row("axis", TABLE_AXIS), table_row("lookup", TABLE_LOOKUP)]


def read_index(wide: str, pair: str, one: str, swap: str) -> str:
    """WGSL: ``lo``, ``hi``, an index's two words (``pair`` sets them, or ``one``
    is an int32 sign-extended), byte-swapped when ``swap``; ``wide`` "": int64 only (``one`` unused)."""
    pair = f"""{pair}
        if ({swap}) {{
            let t = bswap32(lo);
            lo = bswap32(hi);
            hi = t;
        }}
"""
    if not wide:
        return "    var lo: u32;\n    var hi: u32;\n" + "".join(line[4:] for line in pair.splitlines(True))
    return f"""    var lo: u32;
    var hi: u32;
    if ({wide}) {{
{pair}    }} else {{
{one}
        if ({swap}) {{
            lo = bswap32(lo);
        }}
        hi = select(0u, 0xffffffffu, (lo >> 31u) != 0u);  // sign-extended
    }}
"""


def in_range(mode: str, pos: str, bad: str) -> str:
    """WGSL: ``ok`` whether (lo, hi) is valid along an axis of ``d`` under check
    ``mode``, ``v`` its offset; a bad one lowers status[0] to ``pos``, then ``bad``."""
    return f"""    var ok: bool;
    var v = lo;
    if ({mode} == 0u) {{
        // 0 <= x < d, or -d <= x < 0 (hi all ones, lo >= 2^32 - d)
        let neg = hi == 0xffffffffu && lo != 0u && (0u - lo) <= d;
        ok = (hi == 0u && lo < d) || neg;
        v = select(lo, lo + d, neg);
    }} else {{
        ok = hi == 0u && (lo < d || ({mode} == 1u && lo == d));
    }}
    if (!ok) {{
        atomicMin(&status[0], {pos});
        {bad}
    }}
"""


# The smallest position an invocation found bad (``bad``, 0xffffffff: none), into status[0] (the smallest
# over all), once: the kernels that check many indices an invocation (render/lines.py, rows.py) keep no branch
# and no atomic per index, which cost Mesa's CPU drivers a loop over the lanes each time.
REPORT = """fn report(bad: u32) {
    if (bad != 0xffffffffu) {
        atomicMin(&status[0], bad);
    }
}
"""


def index_fn(mode: str = "params.cmode", args: str = "", before: str = "", wide: str = "", one: str = "") -> str:
    """WGSL ``index(pos, d{args})``: the index at ``pos`` (int64 ``raw[pos]``, ``raw: array<vec2<u32>>``, or where
    ``wide`` is false int32 by ``one``; ``before`` may answer first) as an offset along an axis of ``d`` elements,
    checked under ``mode`` (``in_range``), byte-swapped by ``params.iswap``: a bad one keeps the smallest
    position in status[0] (atomicMin) and reads 0."""
    pair = "        let x = raw[pos];\n        lo = x.x;\n        hi = x.y;"
    return (f"fn index(pos: u32, d: u32{args}) -> u32 {{\n{before}" + read_index(wide, pair, one, "params.iswap != 0u")
            + in_range(mode, "pos", "v = 0u;") + "    return v;\n}\n")


def checked_index(mode: str = "params.cmode") -> list[str]:
    """The parts that define ``index(pos, d)`` (``index_fn``, int64 only), checked as the indexed gather's
    ``index`` (render/indexed.py) checks it; for the kernels that read raw int64 indices one at a time
    (render/scatter.py, scatter_slices.py, slices.py; render/reverse.py's lengths, mode 1)."""
    return [shader_source("lib/bswap.wgsl"), index_fn(mode)]


def walk(v: str, count: str, fields: tuple[str, ...], stride: str = "dstride", each: str = "") -> str:
    """WGSL ``At`` and ``at(v)``: unit ``v``'s multi-index over the first ``count`` rows of ``axes``
    (row-major), summed into ``fields`` of ``e`` (``v`` itself), ``off`` (by ``stride``: the index tables'
    dstride, or the strided tables' AXIS stride), ``ip`` (by istride), ``last`` (its last coordinate), ``time`` (its
    coordinate on params.rev_axis); ``each``: WGSL run for every axis after that, with ``k - 1`` the axis,
    ``ax`` its row and ``i`` the coordinate (render/indexed.py's separable lookups)."""
    init = ", ".join(v if f == "e" else "0u" for f in fields)
    sums = "".join(f"        a.{f} = a.{f} + i * ax.{s};\n" for f, s in (("off", stride), ("ip", "istride"))
                   if f in fields)
    time = "        if (k - 1u == params.rev_axis) {\n            a.time = i;\n        }\n" if "time" in fields else ""
    return ("// A unit's linear parts (render/indices.py's walk).\nstruct At {\n"
            + "".join(f"    {f}: u32,\n" for f in fields) + f"""}}

fn at({v}: u32) -> At {{
    var rest = {v};
    var a = At({init});
    for (var k = {count}; k > 0u; k = k - 1u) {{
        let ax = axis(k - 1u);
        let i = rest % ax.dim;
        rest = rest / ax.dim;
{sums}        if (k == {count}) {{
            a.last = i;
        }}
{time}{each}    }}
    return a;
}}
""")


def row(pair: bool) -> str:
    """``Row``, what every slice of an invocation needs, loaded once (storage loads are what Mesa's CPU
    drivers are slowest at): the last leading axis (dim 0: none) and lookups 0 and 1; ``row()`` reads lookup 1
    always (``pair``: GatherND's pairs, render/rows.py) or where there is one (params.nlook: render/slices.py)."""
    later = "    if (params.nlook > 1u) {\n        w.look1 = lookup(params.outer + 1u);\n    }\n"
    look1, later = ("lookup(params.outer + 1u)", "") if pair else ("Lookup(0u, 0u, 0u, 0u)", later)
    return f"""struct Row {{
    dim: u32,
    dstride: u32,
    istride: u32,
    look0: Lookup,
    look1: Lookup,
}}

// {"Both lookups always (a pair)" if pair else "Lookup 1 where there is one"}.
fn row() -> Row {{
    var w = Row(0u, 0u, 0u, lookup(params.outer), {look1});
    if (params.outer > 0u) {{
        let ax = axis(params.outer - 1u);
        w.dim = ax.dim;
        w.dstride = ax.dstride;
        w.istride = ax.istride;
    }}
{later}    return w;
}}
"""


def slice_copy(per: str, base: str, store: str, walk: bool) -> str:
    """WGSL main: ``per`` consecutive units an invocation, of slices ``params.width`` units long, ``store``
    unit k of slice p for output unit q (``b``: the slice's first, ``base``; ``walk``: with at(p) and next(), the
    gather's in render/slices.py, else scatter_slices.py's apply)."""
    w, a, step = ("    let w = row();\n", "    var a = at(p);\n",
                  "            a = next(a, w, p);\n") if walk else ("", "", "")
    return first("q0", per, "words") + f"""    let width = params.width;
{w}    var p = q0 / width;
    var k = q0 - p * width;
{a}    var b = {base};
    let end = min(q0 + {per}, params.words);
    for (var q = q0; q < end; q = q + 1u) {{
        if (k == width) {{
            p = p + 1u;
            k = 0u;
{step}            b = {base};
        }}
        {store};
        k = k + 1u;
    }}
"""
