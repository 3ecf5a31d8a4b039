"""How far apart two floating tensors are, element by element: the largest
absolute error, relative error and ulp distance, gathered one chunk at a
time (compare.py reads the chunks; nothing here holds a whole tensor).

    |a - b|         both finite, in float64 (complex: the modulus)
    |a - b| / |b|   both finite; B is the reference, as in --rtol
                    (b = 0: 0 when a = 0 too, else inf)
    ulp             neither NaN: how many representable values of the type
                    lie between a and b, counted on the type's own codes
                    (infinities are the ends of the line; +0.0 and -0.0
                    are one value, 0 apart). Real floats only.
    NaN             every NaN is one value: NaN against NaN is 0 apart
                    whatever the payloads; NaN against a number has no
                    distance and is counted apart (``nan_vs_number``).

So an exact comparison can find bits that differ (a NaN payload, -0.0
against 0.0) at distance 0: the difference is in the bits only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import numpy as np

    from .tensor import DType

UNSIGNED = ("float8_e8m0fnu",)  # no sign bit: the codes are already in order


def is_real_float(dtype: DType) -> bool:
    return dtype.name.startswith(("float", "bfloat"))


def is_floating(dtype: DType) -> bool:
    return is_real_float(dtype) or dtype.name.startswith("complex")


def bits(values: np.ndarray) -> np.ndarray:
    """Each element's bit pattern as unsigned integers (complex: one row of two)."""
    import numpy as np

    width = values.dtype.itemsize
    if width == 16:
        return values.view(np.uint64).reshape(-1, 2)
    return values.view(f"u{width}")


def _line(values: np.ndarray, dtype: DType) -> np.ndarray:
    """Each value's place on the type's ordered line of codes (NaNs: anywhere)."""
    import numpy as np

    u = bits(values).astype(np.uint64)
    if dtype.name in UNSIGNED:
        return u
    width = dtype.bits if dtype.is_packed else values.dtype.itemsize * 8
    sign = np.uint64(1 << (width - 1))
    mag = u & (sign - np.uint64(1))
    return np.where((u & sign) != 0, sign - mag, sign + mag)  # -0.0 and +0.0 both at ``sign``


def ulp_apart(va: np.ndarray, vb: np.ndarray, dtype: DType) -> np.ndarray:
    """How many representable values of ``dtype`` lie between each a and b
    (NaN against NaN 0, against a number the most a uint64 holds)."""
    import numpy as np

    ka, kb = _line(va, dtype), _line(vb, dtype)
    apart = np.maximum(ka, kb) - np.minimum(ka, kb)
    na, nb = isnan(va), isnan(vb)
    apart = np.where(na & nb, np.uint64(0), apart)
    return np.where(na ^ nb, np.uint64(np.iinfo(np.uint64).max), apart)


def isnan(values: np.ndarray) -> np.ndarray:
    import numpy as np

    return np.isnan(values.astype(np.complex128 if values.dtype.kind == "c" else np.float64))


@dataclass
class Distance:
    """The largest distances of a pair so far; None where no element had one."""

    max_abs: Optional[float] = None
    max_rel: Optional[float] = None
    max_ulp: Optional[int] = None
    nan_vs_number: int = 0  # elements where exactly one side is NaN

    def add(self, va: np.ndarray, vb: np.ndarray, dtype: DType) -> None:
        """Take in one chunk of both tensors (their values side by side)."""
        import numpy as np

        wide = np.complex128 if dtype.name.startswith("complex") else np.float64
        with np.errstate(all="ignore"):
            wa, wb = va.astype(wide), vb.astype(wide)
            na, nb = np.isnan(wa), np.isnan(wb)
            self.nan_vs_number += int(np.count_nonzero(na ^ nb))
            both = np.isfinite(wa) & np.isfinite(wb)
            if both.any():
                gap = np.abs(wa[both] - wb[both])
                rel = np.where(gap == 0, 0.0, gap / np.abs(wb[both]))  # b = 0 < gap: inf
                self.max_abs = _larger(self.max_abs, float(gap.max()))
                self.max_rel = _larger(self.max_rel, float(rel.max()))
            numbers = ~(na | nb)
            if is_real_float(dtype) and numbers.any():
                self.max_ulp = _larger(self.max_ulp, int(ulp_apart(va[numbers], vb[numbers], dtype).max()))


def _larger(old, new):
    return new if old is None else max(old, new)
