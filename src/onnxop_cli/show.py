"""What ``onnxop show`` prints: each tensor of a file in the docs' layout,
with min, max and mean for numeric types. Returns text; never prints.

    samples/x.npy:
      x: shape=(3, 4, 5), dtype=float32  (min=0.0, max=59.0, mean=29.5)
        [[[ 0.,  1.,  2.,  3.,  4.],
        ...

Numeric means integer or real floating (float8, bfloat16 and the 4- and
2-bit types included); bool, complex and string tensors get no statistics.
NaNs are left out of min, max and mean, and counted. Statistics are computed
in float64 over bounded slices, so memory stays near the tensor's own size.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from .render import Shown, render_tensor

if TYPE_CHECKING:
    import numpy as np

    from .tensor import DType, Tensor

NOT_NUMERIC = {"bool", "complex64", "complex128", "object"}
SLICE = 1 << 22  # elements per slice when computing statistics


def is_numeric(dtype: DType) -> bool:
    return dtype.name not in NOT_NUMERIC and not dtype.is_string


def is_float(dtype: DType) -> bool:
    return dtype.name.startswith(("float", "bfloat"))


def stats(values: np.ndarray, dtype: DType) -> dict[str, Any] | None:
    """``{"min", "max", "mean", "nan", "count"}`` or None for non-numeric types.

    min and max are values of the tensor (exact: python ints, or floats that
    the tensor's type holds exactly); mean is a float64; all three are None
    when there is no non-NaN value. ``nan`` counts NaNs, ``count`` elements.
    """
    import numpy as np

    if not is_numeric(dtype):
        return None
    with np.errstate(all="ignore"):  # signalling NaNs and overflowing sums are data, not warnings
        return _stats(np.asarray(values).reshape(-1), dtype)


def _stats(flat: np.ndarray, dtype: DType) -> dict[str, Any]:
    import numpy as np

    lo = hi = None
    total = 0.0
    seen = nans = 0
    floating = is_float(dtype)
    for start in range(0, flat.size, SLICE):
        part = flat[start : start + SLICE]
        if floating:
            part = part.astype(np.float64)
            mask = np.isnan(part)
            n_nan = int(mask.sum())
            if n_nan:
                nans += n_nan
                part = part[~mask]
        elif not dtype.numpy_native:
            part = part.astype(np.int64)  # ml_dtypes' int4/int2 types: compare as ints
        if part.size == 0:
            continue
        p_lo, p_hi = part.min(), part.max()
        lo = p_lo if lo is None else min(lo, p_lo)
        hi = p_hi if hi is None else max(hi, p_hi)
        total += float(np.sum(part, dtype=np.float64))
        seen += part.size

    def exact(v: Any) -> Any:
        if v is None:
            return None
        return float(v) if floating else int(v)

    return {
        "min": exact(lo),
        "max": exact(hi),
        "mean": (total / seen) if seen else None,
        "nan": nans,
        "count": int(flat.size),
    }


def stats_note(s: dict[str, Any] | None, dtype: DType) -> str:
    """``min=0.0, max=59.0, mean=29.5`` (``, 2 NaN`` when there are NaNs)."""
    if s is None:
        return ""
    if s["count"] == 0:
        return "empty"
    if s["min"] is None:
        return f"all {s['nan']} values NaN"
    text = f"min={_value(s['min'], dtype)}, max={_value(s['max'], dtype)}, mean={s['mean']:.6g}"
    return text + (f", {s['nan']} NaN" if s["nan"] else "")


def _value(v: Any, dtype: DType) -> str:
    """A min or max as its own type prints it: float32 0.1 is ``0.1``."""
    if isinstance(v, int):
        return str(v)
    return str(dtype.numpy.type(v)) if not dtype.is_packed else str(v)


def render_file(label: str, entries: Sequence[tuple[Tensor, np.ndarray, dict[str, Any] | None]], *, full: bool = False) -> str:
    """One file: a ``label:`` line, then each tensor as the docs show an input."""
    lines = [f"{label}:"]
    for tensor, values, s in entries:
        notes = [n for n in (stats_note(s, tensor.dtype), "Fortran order" if tensor.order == "F" else "") if n]
        shown = Shown(tensor.name, tensor.shape, tensor.dtype.name, values, note="; ".join(notes))
        lines.append(render_tensor(shown, full=full))
    return "\n".join(lines)
