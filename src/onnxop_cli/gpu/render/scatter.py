"""The scatters' kernels: each update combined into its element as
onnx.reference's numpy code does, in index order (gpu/scatter.py runs them).

``Apply`` and ``Pass`` (the rounds, gpu/scatter_claims.py): in a round each target's earliest pending update u
claims it (``claim``: atomicMax of ~u, so a cleared buffer claims nothing, whatever order the invocations run in),
is applied (``Apply``: winners have distinct targets; narrow elements by compare-exchange on their word), then
marked done and its claim cleared (``reset``). ``compact`` lists the updates still pending between batches
(status[1]: one is pending, with reduction none a second update of one element; status[2]: the list's length);
``band`` marks done every update whose target lies outside [base, base + size) and rebases the others.

``Lines`` (ScatterElements with a reduction): only a line's updates (those that differ only along the axis) name
its data line's elements, so one invocation applies them in index order; plain loads and stores where each word has
one writer (gpu/scatter.py's ``_Lines.group``), else (``shared``) compare-exchange on the element's word. ``mode``
2 reads and checks the raw int64 indices (render/indices.py's checked_index).

The arithmetic (``ARITH``; a variant each, so the compiler sees one expression, never a switch on the class): none
replaces (complex128 as four words); integers wrap; float32 add and mul in lib/f32_reduce.wgsl (NaN as numpy:
``nan_first``, ``default_nan``), float16 and bfloat16 through it (lib/f16_convert.wgsl; exact); float max and min
by bit pattern (-0 == +0, subnormals kept) with Python's max() (ScatterElements: a NaN never replaces) or
np.maximum's rule (n*, ScatterND: a NaN wins, the element's first).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from ..layout import Struct
from ..shaders import shader_source
from .frame import Binding, Frame, first
from .indices import checked_index
from .schedule import Elements, Units


@dataclass(frozen=True)
class Arith:
    """One reduction's arithmetic on one class of elements: the kernels' ``combine(a, b)``."""

    kind: str                   # the reduction (ONNX's name) it runs
    classes: tuple[int, ...]    # the element classes it serves (gpu/scatter_claims.py's Reduce.cls)
    widths: tuple[int, ...]     # the element widths it takes
    expr: str                   # of BITS-wide a and b, zero-extended, whose low BITS count
    wide: str | None = None     # of 64-bit (low, high) a and b, calling lib/int64_ops.wgsl (none's aside)
    libs: tuple[str, ...] = ()  # the parts ``expr`` calls
    pick: str = ""              # the float max or min ``expr`` calls (``_pick``; ``wide``: pick + "64")
    numpy: bool | None = None   # float max and min: np.maximum's NaN rule (True) or Python's max() (False)


_INTS, _F32, _HALF = (8, 16, 32, 64), ("lib/f32_reduce.wgsl",), ("lib/f32_reduce.wgsl", "lib/f16_convert.wgsl")
_SIGNED = "select(a, b, (bitcast<i32>(b << (32u - BITS)) >> (32u - BITS)) {} (bitcast<i32>(a << (32u - BITS)) >> (32u - BITS)))"
_FLOATS = {  # float max and min, by bits: a family's class, widths, sign bit and infinity
    "f": (2, (32, 64), "0x80000000u", "0x7f800000u"), "h": (2, (16,), "0x8000u", "0x7c00u"),
    "bf": (4, (16,), "0x8000u", "0x7f80u")}
ARITH = {
    "none": Arith("none", (0, 1, 2, 3, 4), (2, 4, 8, 16, 32, 64, 128), "b", "b"),
    "iadd": Arith("add", (0, 1), _INTS, "a + b", "add64(a, b)"),
    "imul": Arith("mul", (0, 1), _INTS, "a * b", "mul64(a, b)"),
    "umax": Arith("max", (0, 3), _INTS, "max(a, b)", "select(a, b, ult(a, b))"),  # bool's max and min too
    "umin": Arith("min", (0, 3), _INTS, "min(a, b)", "select(a, b, ult(b, a))"),
    "smax": Arith("max", (1,), _INTS, _SIGNED.format(">"), "select(a, b, slt(a, b))"),
    "smin": Arith("min", (1,), _INTS, _SIGNED.format("<"), "select(a, b, slt(b, a))"),
    "badd": Arith("add", (3,), (8,), "select(0u, 1u, (a | b) != 0u)"),  # bool: or
    "bmul": Arith("mul", (3,), (8,), "select(0u, 1u, (a & b) != 0u)"),  # bool: and
    "fadd": Arith("add", (2,), (32,), "f32_op(a, b, false)", libs=_F32),
    "fmul": Arith("mul", (2,), (32,), "f32_op(a, b, true)", libs=_F32),
    "hadd": Arith("add", (2,), (16,), "float_to_half(f32_op(half_to_float(a), half_to_float(b), false))", libs=_HALF),
    "hmul": Arith("mul", (2,), (16,), "float_to_half(f32_op(half_to_float(a), half_to_float(b), true))", libs=_HALF),
    "bfadd": Arith("add", (4,), (16,), "float_to_bfloat16(f32_op(a << 16u, b << 16u, false))", libs=_HALF),
    "bfmul": Arith("mul", (4,), (16,), "float_to_bfloat16(f32_op(a << 16u, b << 16u, true))", libs=_HALF),
    **{f"{n}{f}{kind}": Arith(kind, (cls,), widths, f"{n}pick(a, b, {greater}, {sign}, {inf})",
                              f"{n}pick64(a, b, {greater})" if 64 in widths else None, pick=f"{n}pick", numpy=n == "n")
       for n in ("", "n") for f, (cls, widths, sign, inf) in _FLOATS.items()
       for kind, greater in (("max", "true"), ("min", "false"))},
}


_KEYS = {  # a float's bits as an unsigned key in the floats' order (NaN excluded by the caller)
    32: """fn key(a: u32, sign: u32) -> u32 {
    return select(a | sign, ~a & (sign | (sign - 1u)), (a & sign) != 0u);
}
""", 64: """fn key64(a: vec2<u32>) -> vec2<u32> {
    return select(a | vec2<u32>(0u, 0x80000000u), ~a, (a.y >> 31u) != 0u);
}
"""}
# Python's max(a, b) (greater) or min(a, b) on float bits (pick: float32, float16 or bfloat16 by their
# sign bit and infinity; pick64: float64), or np.maximum's and np.minimum's (npick, npick64)
_PICKS = {
    "pick": ("a: u32, b: u32, greater: bool, sign: u32, inf: u32", "u32", "sign - 1u", "", "(a & m) > inf",
             "(b & m) > inf", "((a | b) & m) == 0u", "key(a, sign)", "key(b, sign)", "(kb < ka)", "(kb > ka)"),
    "pick64": ("a: vec2<u32>, b: vec2<u32>, greater: bool", "vec2<u32>", "vec2<u32>(0xffffffffu, 0x7fffffffu)",
               "    let inf = vec2<u32>(0u, 0x7ff00000u);\n", "ult(inf, a & m)", "ult(inf, b & m)",
               "all(((a | b) & m) == vec2<u32>(0u))", "key64(a)", "key64(b)", "ult(kb, ka)", "ult(ka, kb)"),
}


def _pick(name: str) -> str:
    args, word, mask, inf, nan_a, nan_b, zeros, ka, kb, less, more = _PICKS[name.removeprefix("n")]
    head = f"fn {name}({args}) -> {word} {{\n    let m = {mask};\n{inf}"
    keys = f"    let zeros = {zeros};\n    let ka = {ka};\n    let kb = {kb};\n"
    if name.startswith("n"):  # a NaN wins, the element's first; else the element if it compares greater
        return (f"{head}    if ({nan_a}) {{\n        return a;\n    }}\n    if ({nan_b}) {{\n        return b;\n    }}\n"
                f"{keys}    let wins = select({more}, {less}, greater);\n    return select(b, a, wins && !zeros);\n}}\n")
    return (f"{head}    let nan = {nan_a} || {nan_b};\n{keys}    let wins = select({less}, {more}, greater);\n"
            "    return select(a, b, wins && !nan && !zeros);\n}\n")


def arithmetic(op: str, bits: int) -> list[str]:
    """The parts that define ``combine(a, b)`` for ``op`` on ``bits``-wide elements (none at 128 bits)."""
    if bits == 128:
        return []
    a, wide = ARITH[op], bits == 64
    libs = (("lib/int64_ops.wgsl",) if op != "none" else ()) if wide else a.libs
    pick = a.pick + "64" if wide and a.pick else a.pick
    word = "vec2<u32>" if wide else "u32"
    return [*(shader_source(lib) for lib in libs), *([_KEYS[64 if wide else 32], _pick(pick)] if pick else []),
            f"fn combine(a: {word}, b: {word}) -> {word} {{\n    return {a.wide if wide else a.expr};\n}}\n"]


_UPDATE = "(updates[u >> lg] >> ((u & ((1u << lg) - 1u)) * BITS)) & m"
_CAS = """var old = atomicLoad(&data[w]);
loop {
    let r = combine((old >> shift) & m, b) & m;
    let word = (old & ~(m << shift)) | (r << shift);
    let got = atomicCompareExchangeWeak(&data[w], old, word);
    if (got.exchanged) {
        break;
    }
    old = got.old_value;
}
"""


def apply_fn(bits: int, atomic: bool) -> str:
    """``fn apply(u, t)``: update u combined into element t, the data bound as atomics (``atomic``) or plain words;
    a narrow element into its bits of its word (by compare-exchange where atomic); a 128-bit one (none only)
    replaced word by word."""
    def load(at: str) -> str:
        return f"atomicLoad(&data[{at}])" if atomic else f"data[{at}]"

    def store(at: str, value: str) -> str:
        return f"atomicStore(&data[{at}], {value});\n" if atomic else f"data[{at}] = {value};\n"

    if bits == 128:
        body = f"for (var q = 0u; q < 4u; q = q + 1u) {{\n    {store('t * 4u + q', 'updates[u * 4u + q]')}}}\n"
    elif bits == 64:
        body = (f"let w = 2u * t;\nlet r = combine(vec2<u32>({load('w')}, {load('w + 1u')}), "
                f"vec2<u32>(updates[2u * u], updates[2u * u + 1u]));\n{store('w', 'r.x')}{store('w + 1u', 'r.y')}")
    elif bits == 32:
        body = store("t", f"combine({load('t')}, updates[u])")
    else:
        body = ("let lg = 5u - countTrailingZeros(BITS);  // log2 of elements a word\nlet m = (1u << BITS) - 1u;\n"
                f"let w = t >> lg;\nlet shift = (t & ((1u << lg) - 1u)) * BITS;\nlet b = {_UPDATE};\n")
        body += _CAS if atomic else ("let old = data[w];\nlet r = combine((old >> shift) & m, b) & m;\n"
                                     + store("w", "(old & ~(m << shift)) | (r << shift)"))
    return f"// Update u combined into element t\nfn apply(u: u32, t: u32) {{\n{textwrap.indent(body, '    ')}}}\n"


@dataclass(frozen=True)
class Scatter(Frame):
    """A kernel of the arithmetic ``op`` on ``bits``-wide elements, ``wg`` invocations a workgroup."""

    op: str  # a key of ARITH, at one of its widths (gpu/scatter_claims.py's ``arithmetic`` picks both)
    bits: int  # and each kernel's field ``wg``, its default the first of its choose.py question's candidates

    @property
    def schedule(self) -> Units:  # type: ignore[override]
        return Units("BITS", self.bits, note="the element width", wg=self.wg)  # type: ignore[attr-defined]


LINE_PARAMS = Struct("Params", (
    ("count", "u32"), ("groups_x", "u32"),
    ("mode", "u32"),         # 0 element offsets, 1 checked indices, 2 raw int64 indices
    ("default_nan", "u32"),  # f32 bits of inf - inf on the host
    ("nan_first", "u32"),    # 1: of two NaN operands the element's wins, 0: the update's
    ("line", "u32"),         # updates per line
    ("inner", "u32"),        # the updates' stride along the line
    ("dlen", "u32"),         # the data's axis length (modes 1, 2)
    ("iswap", "u32"),        # mode 2: 1: the int64 indices are big-endian
    ("cmode", "u32"),        # mode 2: the index check's (gpu/render/indexed.py) mode (0 wrap, 2 0 .. d-1)
    ("group", "u32"),        # lines an invocation (count is invocations)
    ("pad1", "u32"),
))
_TARGET = """// The data element update u goes to (mode 2: its index checked: a bad one reads as 0)
fn target_of(u: u32, base: u32) -> u32 {
    switch params.mode {
        case 0u: { return targets[u]; }
        case 1u: { return base + targets[u] * params.inner; }
        default: { return base + index(u, params.dlen) * params.inner; }
    }
}

// Line l's updates, in index order
fn walk_line(l: u32) {
    let inner = params.inner;
    let o = l / inner;
    let i = l - o * inner;
    var u = o * params.line * inner + i;
    let base = o * params.dlen * inner + i;
    for (var j = 0u; j < params.line; j = j + 1u) {
        apply(u, target_of(u, base));
        u = u + inner;
    }
}
"""


@dataclass(frozen=True)
class Lines(Scatter):
    """ScatterElements' line kernel (a reduction: never ``none``); ``shared``: 8- and 16-bit lines that share
    words."""

    shared: bool = False
    wg: int = 64  # Mesa 22.3's (16 and 256 won on neither Mesa: docs/performance-adapters.md)
    PARAMS = LINE_PARAMS

    @property
    def label(self) -> str:
        return f"scatter lines {self.op}{self.bits}{' shared' if self.shared else ''}[wg={self.wg}]"

    @property
    def bindings(self) -> tuple[Binding, ...]:  # type: ignore[override]
        return (Binding(0, "targets", "read", "u32"), Binding(1), Binding(2, "updates", "read", "u32"),
                Binding(3, "data", "read_write", "atomic<u32>" if self.shared else "u32"),
                Binding(4, "status", "read_write", "atomic<u32>"),
                Binding(5, "raw", "read", "vec2<u32>"))  # mode 2: `targets` again, an index a load

    def parts(self) -> list[str]:
        return [*arithmetic(self.op, self.bits), apply_fn(self.bits, self.shared),
                *checked_index(), _TARGET]

    def main(self) -> str:
        return first("g") + ("    for (var k = 0u; k < params.group; k = k + 1u) {\n"
                                       "        walk_line(g * params.group + k);\n    }\n")


# the rounds' invocations a workgroup, Mesa 22.3's: 64 and 128 won on neither Mesa (docs/performance-adapters.md)
ROUNDS_WG = 256
ROUND_PARAMS = Struct("Params", (  # the rounds' every kernel: the passes and the apply
    ("count", "u32"),        # pending updates this batch (entries of `list`, or all when direct)
    ("groups_x", "u32"),     # workgroups per row of the dispatch grid
    ("direct", "u32"),       # 1: invocation i is update i (the first batch); 0: update list[i]
    ("base", "u32"),         # band: the band's first data element
    ("size", "u32"),         # band: its elements
    ("default_nan", "u32"),  # apply: f32 bits of inf - inf on the host
    ("nan_first", "u32"),    # apply: 1: of two NaN operands the element's wins, 0: the update's
    ("pad0", "u32"),
))
_PENDING = """    let u = select(list[i], i, params.direct != 0u);
"""


@dataclass(frozen=True)
class Apply(Scatter):
    """A round's apply: each claim's winner combined into its element."""

    wg: int = ROUNDS_WG  # the passes' too: one grid (gpu/scatter_claims.py)
    LABEL = "scatter apply {k.op}{k.bits}[wg={k.wg}]"
    PARAMS = ROUND_PARAMS
    bindings = (Binding(0, "targets", "read", "u32"), Binding(1, "claim", "read", "u32"),
                Binding(2, "done", "read", "u32"), Binding(3), Binding(4, "updates", "read", "u32"),
                Binding(5, "data", "read_write", "atomic<u32>"), Binding(6, "status", "read_write", "atomic<u32>"),
                Binding(7, "list", "read", "u32"))

    def parts(self) -> list[str]:
        return [*arithmetic(self.op, self.bits), apply_fn(self.bits, True)]

    def main(self) -> str:
        # reduction none runs one round, without the reset pass: a loser means two updates of one element
        loser = "        atomicStore(&status[1], 1u);\n" if self.op == "none" else ""
        return (first("i") + _PENDING + "    if ((done[u >> 5u] & (1u << (u & 31u))) != 0u) {\n"
                "        return;\n    }\n    let t = targets[u];\n"
                f"    if (claim[t] != ~u) {{\n{loser}        return;\n    }}\n    apply(u, t);\n")


PASSES = {  # a round's bookkeeping passes (the module says what each does)
    "band": """    let t = targets[u];
    let out = t < params.base || t - params.base >= params.size;
    if (out) {
        atomicOr(&done[u >> 5u], bit);
    }
    next[u] = select(t - params.base, 0u, out);
""",
    "claim": "    atomicMax(&claim[targets[u]], ~u);\n",
    "reset": """    // A winner clears its claim; a loser reads either its winner or 0, never its own position: still pending.
    let t = targets[u];
    if (atomicLoad(&claim[t]) == ~u) {
        atomicStore(&claim[t], 0u);
        atomicOr(&done[u >> 5u], bit);
    } else {
        atomicStore(&status[1], 1u);
    }
""",
    "compact": "    next[atomicAdd(&status[2], 1u)] = u;\n",
}


@dataclass(frozen=True)
class Pass(Frame):
    """A round's bookkeeping pass ``name`` (a key of PASSES); every pass binds the same layout."""

    name: str
    wg: int = ROUNDS_WG  # Apply's
    LABEL = "scatter {k.name}[wg={k.wg}]"
    PARAMS = ROUND_PARAMS
    bindings = (Binding(0, "targets", "read", "u32"),  # data element of each update
                Binding(1, "claim", "read_write", "atomic<u32>"),  # per element: ~u of its earliest pending u; 0 none
                Binding(2, "done", "read_write", "atomic<u32>"),  # one bit per update
                Binding(3), Binding(4, "list", "read", "u32"),  # the pending updates (compact)
                Binding(5, "status", "read_write", "atomic<u32>"),
                Binding(6, "next", "read_write", "u32"))  # compact: the next list; band: the rebased targets

    @property
    def schedule(self) -> Elements:  # type: ignore[override]
        return Elements(self.wg)

    def main(self) -> str:
        skip = "" if self.name == "band" else (
            "    if ((atomicLoad(&done[u >> 5u]) & bit) != 0u) {\n        return;\n    }\n")
        return first("i") + _PENDING + "    let bit = 1u << (u & 31u);\n" + skip + PASSES[self.name]

