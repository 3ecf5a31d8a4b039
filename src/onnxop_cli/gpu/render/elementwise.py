"""The elementwise kernel, rendered from a description (``Elementwise``):
the operator's expression is data (``EXPRESSIONS``, one entry per operator
and type class), and one renderer turns it, the input and output types and
the parameter struct (``PARAMS``, declared once, gpu/layout.py's Struct) into WGSL.

Type classes: integers of 32 bits or fewer compute in WGSL's ``i32``
(``s32``: signed, loaded sign-extended) or ``u32`` (``u32``: unsigned and
bool, zero-extended); 64-bit integers in ``vec2<u32>`` (``s64``, ``u64``;
x the low word), through shaders/lib/int64_ops.wgsl and int64_div.wgsl.
Cast's ``Convert`` reads a float as its bits (``f``: zero-extended to 64)
and converts through lib/float_convert.wgsl, as gpu/render/convert.py says
(2-, 4-, 8- and 16-bit elements packed in words; the formats as ``Params``).
Every result is truncated to the output's width when stored, so overflow
wraps as numpy and onnxruntime wrap (int8 127 + 1 is -128; INT_MIN / -1 is
INT_MIN). Integer division truncates toward zero; a zero divisor is
reported through the ``fault`` buffer (the smallest output element that
met one), never stored as a value the caller could take for a result.

Each invocation makes one output word (elements narrower than 32 bits,
packed) or one element (32 and 64 bits). An input is read at the output
element's broadcast offset: element ``eg - base`` of its window where it is
the output's own shape in row-major order (``direct``), else through the
axes table (``axes[j]``: the output's extent on axis j and each input's
element stride there, 0 where it is broadcast).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.tensor import DTYPES
from ..layout import Struct
from ..shaders import shader_source
from .convert import (FORMAT, FORMATS, NATIVE, ROUND_MODES, SATURATING, decode, encode, format_params, lib_constant,
                      nan_mode)
from .frame import Binding, Frame, first
from .schedule import Elements

PARAMS = Struct("Params", (
    ("units", "u32"),     # invocations' units of this band: output words (< 32 bits) or elements
    ("groups_x", "u32"),  # workgroups per row of the dispatch grid
    ("count", "u32"),     # output elements of this band
    ("e0", "u32"),        # the band's first output element
    ("rank", "u32"),      # entries of the axes table
    ("strided", "u32"),   # bit k: input k is read through the axes table (else directly)
    ("saturate", "u32"),  # Convert to a float8 type: 1, overflow and infinity are its largest finite value
    ("round", "u32"),     # Convert to float8e8m0: the lib's round (ROUND_MODES)
    ("base", "vec4<u32>"),   # input k's window starts at its element base[k]
    ("konst", "vec4<u32>"),  # Range: start (x, y) and delta (z, w), as 64-bit words
    ("from_format", "Format"),  # Convert from a float: its format
    ("to_format", "Format"),    # Convert to a float: its format
    ("nan", "u32"),       # Convert to a float: what a NaN becomes (the lib's NAN_*, nan_mode)
    ("bits", "u32"),      # Convert to an integer: its bits
    ("signed", "u32"),    # Convert to an integer: 1, it is signed
    ("pad0", "u32"),
), members=(FORMAT,))
# an entry of the axes table: the output's extent on the axis and each input's stride along it
AXIS = Struct("Axis", (("extent", "u32"), ("s0", "u32"), ("s1", "u32"), ("s2", "u32")))
SCHEDULE = Elements(64)  # Mesa 22.3's (128 and 256 did not win on both Mesas: docs/performance-adapters.md)
INPUTS = 3  # input bindings: binary operators, and Min/Max of up to three
NONE = 0xFFFFFFFF  # the fault word when no divisor was zero

# operator -> type class (s32, u32, s64, u64, or 32 / 64 / * for several) -> WGSL over a, b, c
# (the inputs), eg (the output element) and params; a "bool:" prefix: the result is a WGSL bool
EXPRESSIONS: dict[str, dict[str, str]] = {
    "Add": {"32": "a + b", "64": "add64(a, b)"},
    "Sub": {"32": "a - b", "64": "sub64(a, b)"},
    "Mul": {"32": "a * b", "64": "mul64(a, b)"},
    # signed 32-bit division through magnitudes: WGSL defines i32 / and %, but GLSL (naga's GL output) leaves
    # them undefined for negative operands (llvmpipe's GL took -7 % 3 for 2); a zero divisor divides by 1
    "Div": {"s32": "sdiv32(a, b)", "u32": "a / max(b, 1u)", "s64": "sdiv64(a, b)", "u64": "udiv64(a, b)"},
    "ModTrunc": {"s32": "srem32(a, b)", "u32": "a % max(b, 1u)", "s64": "srem64(a, b)",  # fmod=1
                 "u64": "urem64(a, b)"},
    "ModFloor": {"s32": "mod_floor(a, b)", "u32": "a % max(b, 1u)", "s64": "smod64(a, b)", "u64": "urem64(a, b)"},
    "Neg": {"s32": "bitcast<i32>(0u - bitcast<u32>(a))", "64": "neg64(a)"},
    "Abs": {"s32": "select(a, bitcast<i32>(0u - bitcast<u32>(a)), a < 0)", "u32": "a", "s64": "abs64(a)",
            "u64": "a"},
    "Min": {"32": "min(a, b)", "s64": "select(a, b, slt(b, a))", "u64": "select(a, b, ult(b, a))"},
    "Min3": {"32": "min(min(a, b), c)", "s64": "smin3(a, b, c)", "u64": "umin3(a, b, c)"},
    "Max": {"32": "max(a, b)", "s64": "select(a, b, slt(a, b))", "u64": "select(a, b, ult(a, b))"},
    "Max3": {"32": "max(max(a, b), c)", "s64": "smax3(a, b, c)", "u64": "umax3(a, b, c)"},
    "Equal": {"32": "bool:a == b", "64": "bool:all(a == b)"},
    "Less": {"32": "bool:a < b", "s64": "bool:slt(a, b)", "u64": "bool:ult(a, b)"},
    "LessOrEqual": {"32": "bool:a <= b", "s64": "bool:!slt(b, a)", "u64": "bool:!ult(b, a)"},
    "Greater": {"32": "bool:a > b", "s64": "bool:slt(b, a)", "u64": "bool:ult(b, a)"},
    "GreaterOrEqual": {"32": "bool:a >= b", "s64": "bool:!slt(a, b)", "u64": "bool:!ult(a, b)"},
    "Not": {"u32": "bool:a == 0u"},
    "And": {"u32": "bool:a != 0u && b != 0u"},
    "Or": {"u32": "bool:a != 0u || b != 0u"},
    "Xor": {"u32": "bool:(a != 0u) != (b != 0u)"},
    "Cast": {"*": "a"},
    # between any two types but integer to integer: FORMATS, lib/float_convert.wgsl
    "Convert": {"*": "convert:"},
    "Range": {"s32": "bitcast<i32>(params.konst.x) + bitcast<i32>(eg) * bitcast<i32>(params.konst.z)",
              "64": "add64(params.konst.xy, mul64(vec2<u32>(eg, 0u), params.konst.zw))"},
}
DIVIDES = ("Div", "ModTrunc", "ModFloor")  # b is a divisor: a zero one is a fault
# in every rendered kernel
LIBS = ("lib/bswap.wgsl", "lib/int64_ops.wgsl", "lib/int64_div.wgsl", "lib/float_convert.wgsl")

_HELPERS = """
fn magnitude(a: i32) -> u32 {
    return select(bitcast<u32>(a), 0u - bitcast<u32>(a), a < 0);
}

// the divisor's sign
fn mod_floor(a: i32, b: i32) -> i32 {
    let r = srem32(a, b);
    return select(r, r + b, r != 0 && ((r < 0) != (b < 0)));
}
"""
# Min and Max of three 64-bit words, signed (slt) and unsigned (ult): smin3, umin3, smax3, umax3
_HELPERS += "".join(f"""
fn {s}{op}3(a: vec2<u32>, b: vec2<u32>, c: vec2<u32>) -> vec2<u32> {{
    let m = select(a, b, {s}lt({"b, a" if op == "min" else "a, b"}));
    return select(m, c, {s}lt({"c, m" if op == "min" else "m, c"}));
}}
""" for op in ("min", "max") for s in "su")
# sdiv32 truncates toward zero (INT_MIN / -1 wraps to INT_MIN); srem32 takes the dividend's sign
_HELPERS += "".join(f"""
fn s{name}32(a: i32, b: i32) -> i32 {{
    let m = magnitude(a) {op} max(magnitude(b), 1u);
    return bitcast<i32>(select(m, 0u - m, {negative}));
}}
""" for name, op, negative in (("div", "/", "(a < 0) != (b < 0)"), ("rem", "%", "a < 0")))

_WGSL = {"s32": "i32", "u32": "u32", "s64": "vec2<u32>", "u64": "vec2<u32>", "f": "vec2<u32>"}
# element bits of the types the kernel reads and writes: every type but strings and complex numbers
BITS = {d.name: d.bits for d in DTYPES if not d.is_string and not d.name.startswith("complex")}



def conversion(source: str, target: str, *, saturate: bool, round_mode: str) -> dict[str, object]:
    """The Params fields of a Convert from ``source`` to ``target`` (numpy's names): the formats and modes
    that the kernel's text leaves to its parameters."""
    return {"from_format": format_params(source), "to_format": format_params(target),
            "saturate": int(saturate and target in SATURATING), "round": ROUND_MODES[round_mode],
            "nan": lib_constant(nan_mode(source, target)), "bits": BITS[target],
            "signed": int(target.startswith("int"))}


def convert_class(dtype: str, *, target: bool) -> str:
    """What a Cast or Convert kernel's text depends on of a type: bool; a float's width (a target's e8m0 apart); an
    integer's width, and a source's sign (a target's is a parameter)."""
    bits = BITS[dtype]
    if dtype == "bool" or (target and dtype in FORMATS and FORMATS[dtype].style == "E8M0"):
        return "bool" if dtype == "bool" else "e8m0"
    if dtype in FORMATS:
        return f"f{bits}"
    return f"i{bits}" if target else f"{type_class(dtype)[0]}{bits}"


def type_class(dtype: str) -> str:
    """The class an integer or bool type (numpy's name) computes in."""
    if dtype in FORMATS:
        return "f"  # a float's bits, zero-extended to 64
    if dtype not in BITS:
        raise ValueError(f"no class for {dtype}")
    signed = dtype.startswith("int")
    return ("s" if signed else "u") + ("64" if BITS[dtype] == 64 else "32")


@dataclass(frozen=True)
class Operand:
    dtype: str  # numpy's name: int8 ... uint64, bool
    swap: int = 0  # big-endian bytes: the element's width in bytes (0: little-endian)


BINDINGS = (*(Binding(k, f"in{k}", "read", "u32") for k in range(INPUTS)), Binding(3, "dst", "read_write", "u32"),
            Binding(4), Binding(5, "axes", "read", "Axis"), Binding(6, "fault", "read_write", "atomic<u32>"))


@dataclass(frozen=True)
class Elementwise(Frame):
    """One kernel: ``op`` (a key of EXPRESSIONS) over ``inputs``, made as ``out``, ``schedule.wg``
    invocations a workgroup."""

    PARAMS = PARAMS
    bindings = BINDINGS

    op: str
    inputs: tuple[Operand, ...]
    out: str
    saturate: bool = False  # Convert to a float8 type: overflow and infinity are its largest finite value
    round_mode: str = "up"  # Convert to float8e8m0 (Cast-24's round_mode)
    schedule: Elements = SCHEDULE

    @property
    def cls(self) -> str:
        return type_class(self.inputs[0].dtype if self.inputs else self.out)

    @property
    def expression(self) -> str:
        table, cls = EXPRESSIONS[self.op], self.cls
        for key in (cls, cls[1:], "*"):
            if key in table:
                return table[key]
        raise ValueError(f"{self.op} has no expression for {cls}")

    @property
    def faults(self) -> bool:
        return self.op in DIVIDES or (
            self.op == "Convert" and self.out not in FORMATS and self.out != "bool" and BITS[self.out] >= 8)

    @property
    def fault(self) -> str:
        """What a fault word means: said with the output element it names."""
        if self.op == "Convert":
            return (f"the input is NaN, infinite or outside {self.out} at output element {{at}}: onnx.reference's "
                    "result there is numpy's, which the platform defines, so onnxop refuses it")
        return "division by zero: B is 0 at output element {at}"

    @property
    def label(self) -> str:
        """What its text depends on, and only that: the device caches the compiled kernel by label (a
        Cast's and Convert's types by class, convert_class: the formats and modes are parameters)."""
        ins = ",".join(self._named(o.dtype, False) + (f"/be{o.swap}" if o.swap else "") for o in self.inputs)
        wg = "" if self.schedule == SCHEDULE else f"[wg={self.schedule.wg}]"
        return f"elementwise {self.op}({ins})->{self._named(self.out, True)}{wg}"

    def _named(self, dtype: str, target: bool) -> str:
        converts = self.op in ("Cast", "Convert") and not self.fixed and dtype not in NATIVE  # a numpy float's by name
        return convert_class(dtype, target=target) if converts else dtype

    @property
    def fixed(self) -> bool:
        """A Convert from numpy's own floats (the hot pairs): formats, NaN mode, integer bits written in (as Params,
        float32->float8e4m3fn took 1.2-2x the CPU s on lavapipe; so does a numpy float target's: int64->float32)."""
        return self.op == "Convert" and self.inputs[0].dtype in NATIVE

    @property
    def conversion(self) -> dict[str, object]:
        """Its Params fields of Cast's formats and modes (the other operators read none of them)."""
        src = self.inputs[0].dtype if self.op == "Convert" else self.out
        return conversion(src, self.out, saturate=self.saturate, round_mode=self.round_mode)

    def parts(self) -> list[str]:
        return [*(shader_source(lib) for lib in LIBS), _HELPERS, AXIS.wgsl(), _OFFSETS,
                *(_load(k, o) for k, o in enumerate(self.inputs)), self._value()]

    def main(self) -> str:
        return _main(BITS[self.out])

    def _value(self) -> str:
        expr = self.expression
        is_bool = expr.startswith("bool:")  # the expression is a WGSL bool
        if is_bool:
            raw = f"vec2<u32>(select(0u, 1u, {expr[len('bool:'):]}), 0u)"
        elif expr.startswith("convert:"):
            cls = self.cls
            src, fixed = self.inputs[0].dtype, self.fixed
            num = decode(src, cls.startswith("s"), "a" if cls == "f" else "raw(a)", fixed)
            raw = encode(src, self.out, num, fixed, BITS[self.out])
        else:
            raw = f"raw({expr})"
        if self.out == "bool" and not is_bool:  # Cast to bool: any bit set is true
            raw = f"nonzero({raw})"
        loads = "".join(f"    let {'abc'[k]} = load{k}(off[{k}]);\n" for k in range(len(self.inputs)))
        check = ""
        if self.op in DIVIDES:
            zero = {"s32": "b == 0", "u32": "b == 0u"}.get(self.cls, "all(b == vec2<u32>(0u))")
            check = f"    if ({zero}) {{\n        atomicMin(&fault[0], eg);\n    }}\n"
        return (f"{_raw(self.cls)}\nfn nonzero(v: vec2<u32>) -> vec2<u32> {{\n"
                "    return vec2<u32>(select(0u, 1u, v.x != 0u || v.y != 0u), 0u);\n}\n\n"
                f"fn value(e: u32) -> vec2<u32> {{\n    let eg = params.e0 + e;\n    let off = offsets(eg);\n"
                f"{loads}{check}    return {raw};\n}}\n")


def _raw(cls: str) -> str:
    """raw(v): a value of the class as 64 bits (sign-extended for s32), the store truncates it."""
    body = {
        "s32": "vec2<u32>(bitcast<u32>(v), select(0u, 0xffffffffu, v < 0))",
        "u32": "vec2<u32>(v, 0u)",
    }.get(cls, "v")
    return f"fn raw(v: {_WGSL[cls]}) -> vec2<u32> {{\n    return {body};\n}}\n"


_OFFSETS = """
// each input's element (in its window) for output element eg
fn offsets(eg: u32) -> vec4<u32> {
    var off = vec4<u32>(eg);
    if (params.strided != 0u) {
        var rem = eg;
        var acc = vec4<u32>(0u);
        for (var j = params.rank; j > 0u; j = j - 1u) {
            let a = axes[j - 1u];
            let c = rem % a.extent;
            rem = rem / a.extent;
            acc = acc + c * vec4<u32>(a.s0, a.s1, a.s2, 0u);
        }
        let bit = (vec4<u32>(params.strided) >> vec4<u32>(0u, 1u, 2u, 3u)) & vec4<u32>(1u);
        off = select(off, acc, bit == vec4<u32>(1u));
    }
    return off - params.base;
}
"""


# a big-endian element's bytes reversed, by its bits (8-bit elements have no order)
_SWAPS = {64: "vec2<u32>(bswap32(x.y), bswap32(x.x))", 32: "bswap32(x)", 16: "((x >> 8u) | (x << 8u)) & 0xffffu"}


def _load(k: int, o: Operand) -> str:
    """load{k}(i): element i of input k's window, as its class computes (64 bits: x the low word)."""
    bits, cls = BITS[o.dtype], type_class(o.dtype)
    per = max(1, 32 // bits)
    read = {64: f"vec2<u32>(in{k}[2u * i], in{k}[2u * i + 1u])", 32: f"in{k}[i]"}.get(
        bits, f"(in{k}[i / {per}u] >> ((i % {per}u) * {bits}u)) & {(1 << bits) - 1}u")
    swap = f"    x = {_SWAPS[bits]};\n" if o.swap and bits in _SWAPS else ""
    if o.dtype == "bool":  # any byte but 0 is true, as numpy reads it (a view can hold 2 or 255): Cast made 2, Equal false
        ret = "select(0u, 1u, x != 0u)"
    elif bits == 64 or cls == "u32":
        ret = "x"
    elif cls == "f":
        ret = "vec2<u32>(x, 0u)"
    else:  # signed: sign-extended
        ret = "bitcast<i32>(x)" if bits == 32 else f"bitcast<i32>(x << {32 - bits}u) >> {32 - bits}u"
    return f"fn load{k}(i: u32) -> {_WGSL[cls]} {{\n    var x = {read};\n{swap}    return {ret};\n}}\n"


def _main(bits: int) -> str:
    if bits == 64:
        body = "    let v = value(u);\n    dst[2u * u] = v.x;\n    dst[2u * u + 1u] = v.y;\n"
    elif bits == 32:
        body = "    dst[u] = value(u).x;\n"
    else:
        per, mask = 32 // bits, (1 << bits) - 1
        body = (f"    var word = 0u;\n    for (var k = 0u; k < {per}u; k = k + 1u) {{\n"
                f"        let e = u * {per}u + k;\n        if (e < params.count) {{\n"
                f"            word = word | ((value(e).x & {mask}u) << (k * {bits}u));\n        }}\n    }}\n"
                "    dst[u] = word;\n")
    return first("u", count="units") + body
