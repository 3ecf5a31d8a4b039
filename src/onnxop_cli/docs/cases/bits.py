"""Bits that must arrive unchanged: NaN payloads (quiet and signalling, both
signs), -0.0, infinities and subnormals in every float type, through
Transpose, Gather, Concat, Where and Pad (edge mode, and a constant value that
is a NaN with a payload, or -0.0), where the operator's schema takes the type; odd lengths of bool, int8 and the 2- and 4-bit types
(whose last byte is half used) through Transpose, Slice, Concat and Gather;
int64 values past 32 bits through Transpose, Concat and Gather."""

from __future__ import annotations

from .case import Case, typed

# Special bit patterns of the 16-, 32- and 64-bit float types: +-0, +-inf,
# quiet and signalling NaNs with payloads and both signs, subnormals, 1.
SPECIAL = {
    "float16": [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7C01, 0x7E00, 0x7FFF, 0xFE01, 0xFD55, 0x0001, 0x83FF, 0x3C00, 0x7BFF],
    "bfloat16": [0x0000, 0x8000, 0x7F80, 0xFF80, 0x7F81, 0x7FC0, 0x7FFF, 0xFFC1, 0xFFAA, 0x0001, 0x807F, 0x3F80, 0x7F7F],
    "float32": [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7F800001, 0x7FC00000, 0x7FFFFFFF, 0xFFC00001,
                0xFFAAAAAA, 0x00000001, 0x807FFFFF, 0x3F800000, 0x7F7FFFFF],
    "float64": [0, 1 << 63, 0x7FF0 << 48, 0xFFF0 << 48, (0x7FF0 << 48) | 1, 0x7FF8 << 48, (1 << 63) - 1,
                (0xFFF8 << 48) | 1, 0xFFF5555555555555, 1, 0x800FFFFFFFFFFFFF, 0x3FF0 << 48, 0x7FEFFFFFFFFFFFFF],
}
SMALL_FLOATS = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn")
# the opset that first takes the type in these operators
OPSET = {"float4_e2m1fn": 23, "float8_e8m0fnu": 24, "int2": 25, "uint2": 25}


def _dtype(name: str):
    import ml_dtypes
    import numpy as np

    return np.dtype(getattr(ml_dtypes, name, None) or name)


def patterns(name: str):
    """Every bit pattern of a type of 8 bits or fewer (float4: its 16), else
    the special ones and random ones after them, 13 x 3 in all."""
    import numpy as np

    dt = _dtype(name)
    if name in SMALL_FLOATS:
        count = 16 if name == "float4_e2m1fn" else 256
        return np.arange(count, dtype=np.uint8).view(dt) if count == 256 else np.arange(16, dtype=np.uint8).astype(dt)
    unsigned = np.dtype(f"u{dt.itemsize}")
    special = np.array(SPECIAL[name], unsigned)
    noise = np.random.default_rng(dt.itemsize).integers(0, np.iinfo(unsigned).max, 26, dtype=unsigned, endpoint=True)
    return np.concatenate([special, noise]).view(dt)


def _float4(values):
    """float4 from its 16 codes (numpy cannot view 4-bit codes, so they are decoded)."""
    import ml_dtypes
    import numpy as np

    table = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], np.float32)
    codes = np.asarray(values, np.uint8)
    mags = table[codes & 7]
    return np.where(codes & 8, -mags, mags).astype(ml_dtypes.float4_e2m1fn)


def float_bits() -> list[Case]:
    import numpy as np

    out = []
    for name in (*SPECIAL, *SMALL_FLOATS):
        v = _float4(np.arange(16)) if name == "float4_e2m1fn" else patterns(name)
        v = v.reshape(-1, 4 if v.size % 4 == 0 else 3)
        opset = OPSET.get(name, 21)
        rows = v.shape[0]
        out += [
            Case(f"transpose_{name}_bits", "float_bits", "Transpose", [("x", v)], {"perm": [1, 0]}, opset=opset),
            Case(f"gather_{name}_bits", "float_bits", "Gather",
                 [("x", v), ("i", np.arange(rows - 1, -rows - 1, -1, dtype=np.int64))], {"axis": 0}, opset=opset),
            Case(f"concat_{name}_bits", "float_bits", "Concat", [("a", v[::-1].copy()), ("b", v)], {"axis": 0},
                 opset=opset),
            Case(f"where_{name}_bits", "float_bits", "Where",
                 [("c", (np.arange(v.size) % 3 == 0).reshape(v.shape)), ("a", v), ("b", v[::-1].copy())],
                 opset=max(opset, 16)),
        ]
        out.append(Case(f"pad_{name}_edge_bits", "float_bits", "Pad",
                        [("x", v), ("pads", np.array([1, 2, 2, 1], np.int64))], {"mode": "edge"}, opset=opset))
        if name in SPECIAL:  # Pad's value: a NaN with a payload, and -0.0
            unsigned = np.dtype(f"u{v.dtype.itemsize}")
            for tag, bits in (("nan_payload", SPECIAL[name][7]), ("negative_zero", SPECIAL[name][1])):
                value = np.array(bits, unsigned).view(v.dtype)
                out.append(Case(f"pad_{name}_value_{tag}", "float_bits", "Pad",
                                [("x", v[:3]), ("pads", np.array([1, 0, 2, 1], np.int64)), ("value", value)],
                                {"mode": "constant"}, opset=opset))
    return out


ODD = ("bool", "int8", "uint8", "int4", "uint4", "int2", "uint2")


def _values(name: str, n: int, seed: int):
    import numpy as np

    dt = _dtype(name)
    rng = np.random.default_rng(seed)
    if name == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if name in ("int4", "uint4", "int2", "uint2"):
        bits = int(name[-1])
        low = -(1 << (bits - 1)) if name.startswith("int") else 0
        return rng.integers(low, low + (1 << bits), n).astype(np.int8).astype(dt)
    return rng.integers(-128 if name == "int8" else 0, 128 if name == "int8" else 256, n).astype(dt)


def odd_lengths() -> list[Case]:
    import numpy as np

    out = []
    for k, name in enumerate(ODD):
        opset = OPSET.get(name, 21)
        x = _values(name, 15, k).reshape(3, 5)
        line = _values(name, 13, 10 + k)
        out += [
            Case(f"transpose_{name}_3x5", "odd_lengths", "Transpose", [("x", x)], {"perm": [1, 0]}, opset=opset),
            Case(f"slice_{name}_odd_step", "odd_lengths", "Slice",
                 [("x", line), ("starts", np.array([1], np.int64)), ("ends", np.array([12], np.int64)),
                  ("axes", np.array([0], np.int64)), ("steps", np.array([2], np.int64))], opset=opset),
            Case(f"concat_{name}_3_and_4", "odd_lengths", "Concat",
                 [("a", line[:3].copy()), ("b", line[5:9].copy())], {"axis": 0}, opset=opset),
            Case(f"gather_{name}_7_of_13", "odd_lengths", "Gather",
                 [("x", line), ("i", np.array([12, 0, -1, 5, 6, 3, 11], np.int64))], {"axis": 0}, opset=opset),
        ]
    return out


# int64 values that need their high word: a runtime that keeps int64 data in 32
# bits (or sends it to a CPU provider) shows here
INT64_VALUES = [2**32, 2**32 + 1, -(2**32) - 1, 2**63 - 1, -(2**63), 2**40 + 7, -1, 0]


def int64_values() -> list[Case]:
    import numpy as np

    v = np.array(INT64_VALUES, np.int64).reshape(2, 4)
    return [
        Case("transpose_int64_above_2pow32", "int64_data", "Transpose", [("x", v)], {"perm": [1, 0]}),
        Case("concat_int64_above_2pow32", "int64_data", "Concat", [("a", v), ("b", v[::-1].copy())], {"axis": 1}),
        Case("gather_int64_above_2pow32", "int64_data", "Gather",
             [("x", v), ("i", np.array([1, 0, 1], np.int64))], {"axis": 0}),
    ]


def cases() -> list[Case]:
    """Those whose operator takes the type at its opset (Transpose and Pad take
    every type; Gather, Concat, Slice and Where not the 8-, 4- and 2-bit floats
    and ints: a case of a type the schema refuses would test nothing)."""
    return [c for c in (*float_bits(), *odd_lengths(), *int64_values()) if typed(c)]
