"""Cast's conversions as data: how each type is read and written by the
elementwise kernel's ``Convert`` (gpu/render/elementwise.py renders it with
shaders/lib/float_convert.wgsl). A source is decoded into the lib's ``Num``
(an integer: ``decode_int``; a float: ``decode_float`` with its format), and
``Num`` is encoded as the target (a float: ``encode_float``; float8e8m0:
through float32, then ``encode_e8m0``; an integer: ``to_int``; bool:
nonzero). One place per type, not one kernel per pair.

NaN: numpy and ml_dtypes do not agree on what a NaN becomes, and this is what
onnx.reference gives (x86, numpy 2, ml_dtypes 0.5), checked bit for bit by
tests/gpu/test_cast.py: numpy narrowing to float16, and widening from it,
keeps the fraction's top bits (at least one set); the hardware conversions
between float32 and float64 keep them and set the quiet bit; bfloat16 to
float32 is a shift (kept), to float64 through float32 (quieted); every other
pair through ml_dtypes is the target's canonical NaN with the sign.
"""

from __future__ import annotations

from typing import NamedTuple


class Format(NamedTuple):
    mant: int  # fraction bits
    ebits: int  # exponent bits
    bias: int
    style: str  # the lib's constant: which patterns are NaN and infinity


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
SATURATING = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")  # the saturate attribute
ROUND_MODES = {"up": 0, "nearest": 1, "down": 2}  # float8e8m0's round_mode attribute (Cast-24)
NATIVE = ("float16", "float32", "float64")  # numpy's own floats


def nan_mode(source: str, target: str) -> str:
    """What a NaN of ``source`` becomes in ``target`` (the lib's NAN_* constant)."""
    if source in NATIVE and target in NATIVE:
        return "NAN_KEEP" if "float16" in (source, target) else "NAN_QUIET"
    if source == "bfloat16" and target in ("float32", "float64"):
        return "NAN_KEEP" if target == "float32" else "NAN_QUIET"
    return "NAN_CANON"


def _fmt(f: Format) -> str:
    return f"{f.mant}u, {f.ebits}u, {f.bias}, {f.style}"


def decode(source: str, signed: bool, value: str) -> str:
    """WGSL of the ``Num`` that ``value`` (the loaded element: a float's bits,
    an integer as 64 bits) holds."""
    if source in FORMATS:
        return f"decode_float({value}, {_fmt(FORMATS[source])})"
    return f"decode_int({value}, {str(signed).lower()})"


def encode(source: str, target: str, num: str, *, saturate: bool, round_mode: str, tbits: int) -> str:
    """WGSL of ``target``'s 64-bit pattern for the ``Num`` ``num``."""
    if target in FORMATS:
        if FORMATS[target].style == "E8M0":
            f32 = encode(source, "float32", num, saturate=False, round_mode=round_mode, tbits=32)
            return f"encode_e8m0({f32}.x, {ROUND_MODES[round_mode]}u, {str(saturate).lower()})"
        sat = str(saturate and target in SATURATING).lower()
        return f"encode_float({num}, {_fmt(FORMATS[target])}, {sat}, {nan_mode(source, target)})"
    if target == "bool":
        return f"nonzero_num({num})"
    return f"to_int({num}, {tbits}u, {str(target.startswith('int')).lower()}, eg)"
