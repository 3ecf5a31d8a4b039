"""Cast's conversions as data, for the elementwise kernel's ``Convert``
(gpu/render/elementwise.py): each float type's format (``FORMATS``), what a
NaN becomes (``nan_mode``), and the WGSL that decodes a loaded element into
lib/float_convert.wgsl's ``Num`` (an integer: ``decode_int``; a float:
``decode_float``) and encodes it as the target (a float: ``encode_float``;
float8e8m0: through float32, then ``encode_e8m0``; an integer: ``to_int``;
bool: nonzero). The formats and modes are the kernel's parameters
(``Format``, packed by elementwise.conversion), read from ``params``, but
numpy's own floats' (the hot pairs): from one, a kernel has all written in
(``fixed``); to one, its format."""

from __future__ import annotations

import re
from functools import cache
from typing import NamedTuple

from ..layout import Struct
from ..shaders import shader_source


class Format(NamedTuple):
    mant: int  # fraction bits
    ebits: int  # exponent bits
    bias: int
    style: str  # the lib's constant: which patterns are NaN and infinity


# a float format of Convert (FORMATS) in the kernel's Params, as lib/float_convert.wgsl's functions take it
FORMAT = Struct("Format", tuple((name, "u32") for name in Format._fields))

# numpy's (ml_dtypes') names
FORMATS = {
    "float16": Format(10, 5, 15, "IEEE"),
    "bfloat16": Format(7, 8, 127, "IEEE"),
    "float32": Format(23, 8, 127, "IEEE"),
    "float64": Format(52, 11, 1023, "IEEE"),
    "float8_e4m3fn": Format(3, 4, 7, "FN"),
    "float8_e4m3fnuz": Format(3, 4, 8, "FNUZ"),
    "float8_e5m2": Format(2, 5, 15, "IEEE"),
    "float8_e5m2fnuz": Format(2, 5, 16, "FNUZ"),
    "float4_e2m1fn": Format(1, 2, 1, "FINITE"),
    "float8_e8m0fnu": Format(0, 8, 127, "E8M0"),
}
# the types the saturate attribute applies to
SATURATING = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu")
ROUND_MODES = {"up": 0, "nearest": 1, "down": 2}  # float8e8m0's round_mode attribute (Cast-24)
NATIVE = ("float16", "float32", "float64")  # numpy's own floats


# NaN: numpy and ml_dtypes do not agree on what a NaN becomes, and this is what onnx.reference gives (x86,
# numpy 2, ml_dtypes 0.5), checked bit for bit by tests/gpu/test_cast.py: numpy narrowing to float16, and
# widening from it, keeps the fraction's top bits (at least one set); the hardware conversions between
# float32 and float64 keep them and set the quiet bit; bfloat16 to float32 is a shift (kept), to float64
# through float32 (quieted); every other pair through ml_dtypes is the target's canonical NaN with the sign.
def nan_mode(source: str, target: str) -> str:
    """What a NaN of ``source`` becomes in ``target`` (the lib's NAN_* constant)."""
    if source in NATIVE and target in NATIVE:
        return "NAN_KEEP" if "float16" in (source, target) else "NAN_QUIET"
    if source == "bfloat16" and target in ("float32", "float64"):
        return "NAN_KEEP" if target == "float32" else "NAN_QUIET"
    return "NAN_CANON"


@cache
def lib_constant(name: str) -> int:
    """The value of lib/float_convert.wgsl's ``const NAME: u32`` (a style, a NaN mode): declared there once."""
    return int(re.search(rf"^const {name}: u32 = (\d+)u;", shader_source("lib/float_convert.wgsl"), re.M)[1])


def format_params(dtype: str) -> dict[str, int]:
    """``dtype``'s Params Format (zeros for a type that is no float)."""
    f = FORMATS.get(dtype, Format(0, 0, 0, "IEEE"))
    return {**f._asdict(), "style": lib_constant(f.style)}


def _fmt(of: str, dtype: str, fixed: bool) -> str:
    """The lib's format arguments: read from ``params.<of>``, or ``dtype``'s written in (``fixed``)."""
    if fixed:
        f = FORMATS[dtype]
        return f"{f.mant}u, {f.ebits}u, {f.bias}, {f.style}"
    return f"params.{of}.mant, params.{of}.ebits, i32(params.{of}.bias), params.{of}.style"


def decode(source: str, signed: bool, value: str, fixed: bool = False) -> str:
    """WGSL of the ``Num`` that ``value`` (the loaded element: a float's bits,
    an integer as 64 bits) holds."""
    if source in FORMATS:
        return f"decode_float({value}, {_fmt('from_format', source, fixed)})"
    return f"decode_int({value}, {str(signed).lower()})"


def encode(source: str, target: str, num: str, fixed: bool = False, tbits: int = 0) -> str:
    """WGSL of ``target``'s 64-bit pattern for the ``Num`` ``num`` (``fixed``: ``target``'s format, NaN
    mode, ``tbits`` and sign written in; else read from ``params``, but a numpy float's format)."""
    if target in FORMATS:
        if FORMATS[target].style == "E8M0":  # through float32: its NaN, whichever, is e8m0's 0xff
            return (f"encode_e8m0(encode_float({num}, {_fmt('', 'float32', True)}, false, NAN_CANON).x, "
                    "params.round, params.saturate != 0u)")
        nan = nan_mode(source, target) if fixed else "params.nan"
        to = _fmt("to_format", target, fixed or target in NATIVE)
        return f"encode_float({num}, {to}, params.saturate != 0u, {nan})"
    if target == "bool":
        return f"nonzero_num({num})"
    if fixed:
        return f"to_int({num}, {tbits}u, {str(target.startswith('int')).lower()}, eg)"
    return f"to_int({num}, params.bits, params.signed != 0u, eg)"
