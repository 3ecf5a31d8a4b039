"""What ``onnxop show`` prints: each tensor of a file in the docs' layout,
with min, max and mean for numeric types. Returns text; never prints.

    samples/x.npy:
      x: shape=(3, 4, 5), dtype=float32  (min=0.0, max=59.0, mean=29.5)
        [[[ 0.,  1.,  2.,  3.,  4.],
        ...

Numeric means integer or real floating (float8, bfloat16 and the 4- and
2-bit types included); bool, complex and string tensors get no statistics.
NaNs are left out of min, max and mean, and counted. Statistics are computed
in float64 over bounded slices. A large tensor of a file (one that is mapped
to be printed) is read for them slice by slice into one reused buffer
(``file_stats``; ``--hist`` too), so memory stays a few slices whatever the file's size and
a signal (Ctrl-C) ends the read between two slices; the values printed are
read from the mapping, which touches only the pages shown.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from .histogram import render as render_histogram
from .node import Shown, quote, tensor_lines
from .values import NOT_NUMERIC, SLICE, float_text, is_float, is_numeric  # noqa: F401 - re-exported

if TYPE_CHECKING:
    import numpy as np

    from ..core.tensor import DType, Tensor

def stats(values: np.ndarray, dtype: DType) -> dict[str, Any] | None:
    """``{"min", "max", "mean", "std", "nan", "count"}`` or None for non-numeric types.

    min and max are values of the tensor (exact: python ints, or floats that
    the tensor's type holds exactly); mean and std (the population standard
    deviation, as numpy's ``std``) are float64; all four are None when there
    is no non-NaN value. ``nan`` counts NaNs, ``count`` elements.
    """
    import numpy as np

    if not is_numeric(dtype):
        return None
    with np.errstate(all="ignore"):  # signalling NaNs and overflowing sums are data, not warnings
        flat = np.asarray(values).reshape(-1)
        return _stats(lambda: (flat[start : start + SLICE] for start in range(0, flat.size, SLICE)), dtype, flat.size)


def file_stats(tensor: Tensor, source: Any = None) -> dict[str, Any] | None:
    """``stats`` of a tensor read from its bytes (``source``, by default its
    own) in storage order, ``SLICE`` elements at a time into one buffer: the
    whole tensor is never in memory, mapped or read."""
    import numpy as np

    if not is_numeric(tensor.dtype):
        return None
    with np.errstate(all="ignore"):
        return _stats(lambda: file_slices(tensor, source), tensor.dtype, tensor.size)


def file_slices(tensor: Tensor, source: Any = None) -> Iterator[np.ndarray]:
    """The values of a tensor read from its bytes (``source``, by default its
    own) in storage order, ``SLICE`` elements at a time into one buffer (each
    slice is overwritten by the next): what file_stats and --hist read."""
    import numpy as np

    from ..core.tensor import unpack_subbyte

    dtype = tensor.dtype
    source = tensor.data if source is None else source
    count = tensor.size
    per = SLICE - SLICE % 8  # whole bytes of packed elements
    buf = np.empty(dtype.nbytes(min(per, count)), dtype=np.uint8)
    np_dtype = dtype.numpy.newbyteorder(">") if tensor.byteswap else dtype.numpy

    for first in range(0, count, per):
        n = min(per, count - first)
        raw = buf[: dtype.nbytes(n)]
        source.readinto(dtype.nbytes(first), memoryview(raw))
        yield unpack_subbyte(raw, dtype, n) if dtype.is_packed else raw.view(np_dtype)


OVERFLOW_SCALE = 2.0**-600  # float64s near its largest, scaled so that their sums and squares stay finite


def _stats(slices: Callable[[], Iterator[np.ndarray]], dtype: DType, count: int) -> dict[str, Any]:
    """``stats`` over ``slices()``; read a second time, every value scaled by
    OVERFLOW_SCALE, when finite values made a mean or std past float64's
    largest (3 x 1.8e308: mean=inf), which the mean of finite values never is."""
    first = _stats_pass(slices(), dtype, count, 1.0)
    if not (math.isfinite(first["mean"] or 0.0) and math.isfinite(first["std"] or 0.0)) \
            and math.isfinite(first["min"]) and math.isfinite(first["max"]):
        again = _stats_pass(slices(), dtype, count, OVERFLOW_SCALE)
        first["mean"], first["std"] = again["mean"], again["std"]
    return first


def _stats_pass(slices: Iterator[np.ndarray], dtype: DType, count: int, scale: float) -> dict[str, Any]:
    import numpy as np

    lo = hi = None
    mean = m2 = 0.0  # running mean and sum of squared deviations (Chan et al.'s merge)
    seen = nans = 0
    negative_zeros = True  # every value so far is -0.0: the mean is -0.0 (numpy's sum starts at +0.0)
    floating = is_float(dtype)
    for part in slices:
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
        if floating and (p_lo == 0 or p_hi == 0):  # numpy's min and max pick either zero: -0.0 < 0.0 here
            zeros = np.signbit(part[part == 0])
            p_lo = -0.0 if p_lo == 0 and zeros.any() else p_lo
            p_hi = 0.0 if p_hi == 0 and not zeros.all() else p_hi
        lo = p_lo if lo is None else _signed(min, lo, p_lo)
        hi = p_hi if hi is None else _signed(max, hi, p_hi)
        wide = part.astype(np.float64, copy=False) * scale if scale != 1.0 else part.astype(np.float64, copy=False)
        p_mean = float(np.mean(wide))
        negative_zeros = negative_zeros and floating and p_mean == 0 and bool(np.all((wide == 0) & np.signbit(wide)))
        p_m2 = float(np.sum(np.square(wide - p_mean)))
        n = seen + part.size
        delta = p_mean - mean
        mean = mean + delta * part.size / n if seen else p_mean
        m2 = m2 + p_m2 + delta * delta * seen * part.size / n if seen else p_m2
        seen = n

    def exact(v: Any) -> Any:
        if v is None:
            return None
        return float(v) if floating else int(v)

    return {
        "min": exact(lo),
        "max": exact(hi),
        "mean": (-0.0 if negative_zeros else mean / scale) if seen else None,
        "std": math.sqrt(m2 / seen) / scale if seen and m2 == m2 and m2 >= 0 else (math.nan if seen else None),
        "nan": nans,
        "count": int(count),
    }


def _signed(pick, a: Any, b: Any) -> Any:
    """``pick`` (min or max) of a and b, with -0.0 below 0.0 (Python's min
    and max return the first of two equal values)."""
    if a == b == 0 and isinstance(a, float):
        return pick(a, b, key=lambda v: math.copysign(1.0, v))
    return pick(a, b)


def stats_note(s: dict[str, Any] | None, dtype: DType) -> str:
    """``min=0.0, max=59.0, mean=29.5, std=17.3181`` (``, 2 NaN`` when there
    are NaNs): min and max as the tensor's type prints them, mean and std
    (float64) to six digits, every float written as Python writes floats
    (``-3.0``, ``-0.0``), whatever the type."""
    if s is None:
        return ""
    if s["count"] == 0:
        return "empty"
    if s["min"] is None:
        return f"all {s['nan']} values NaN"
    text = (
        f"min={value_text(s['min'], dtype)}, max={value_text(s['max'], dtype)}, "
        f"mean={float_text(s['mean'], 6)}, std={float_text(s['std'], 6)}"
    )
    return text + (f", {s['nan']} NaN" if s["nan"] else "")


def value_text(v: Any, dtype: DType) -> str:
    """A min or max (or any one value) of ``dtype`` as the values printed
    under it show it, so that the two never disagree: for ml_dtypes' types
    (bfloat16, float8) six significant digits, as ml_dtypes prints them
    (``3.38953e+38``, ``448.0``); for numpy's, the shortest form that reads
    back as the same value, whole numbers with all their digits as numpy
    prints them (float16's largest is ``65504.0``, not ``65500.0``)."""
    if isinstance(v, int):
        return str(v)
    if not math.isfinite(v) or dtype.is_packed:
        return float_text(v)  # the packed types' values are few and exact in a few digits
    import numpy as np

    if dtype.numpy_native and float(v).is_integer() and abs(v) < 2**53:
        return repr(float(v))
    same = dtype.numpy.type
    with np.errstate(over="ignore"):  # a short form of float16's 65504 overflows: not it
        for digits in range(1 if dtype.numpy_native else 6, 18):
            text = float_text(v, digits)
            if same(float(text)) == same(v):
                return text
    return float_text(v)


def render_file(label: str, entries: Sequence[tuple[Tensor, np.ndarray, dict[str, Any] | None]], *, full: bool = False,
                histograms: Sequence[dict[str, Any] | None] | None = None, **printing: int | None) -> str:
    """One file: a ``label:`` line, then each tensor as the docs show an input
    (``file_lines`` joined)."""
    return "\n".join(file_lines(label, entries, full=full, histograms=histograms, **printing))


def brief_rows(entries: Sequence[tuple[Tensor, Any, dict[str, Any] | None]]) -> list[list[str]]:
    """``--brief``: one row per tensor (name, shape, dtype, min, max, mean);
    - where a type has no statistics or a tensor no values."""
    rows = []
    for tensor, _, s in entries:
        have = s is not None and s["min"] is not None
        rows.append([
            tensor.name, str(tensor.shape), tensor.dtype.name,
            value_text(s["min"], tensor.dtype) if have else "-",
            value_text(s["max"], tensor.dtype) if have else "-",
            float_text(s["mean"], 6) if have else "-",
        ])
    return rows


BRIEF_HEADERS = ["name", "shape", "dtype", "min", "max", "mean"]


def file_lines(label: str, entries: Sequence[tuple[Tensor, np.ndarray, dict[str, Any] | None]], *, full: bool = False,
               histograms: Sequence[dict[str, Any] | None] | None = None, **printing: int | None) -> Iterator[str]:
    """The lines of ``render_file``, made one at a time (``--full`` streams
    them), each tensor followed by its histogram when one is given."""
    yield f"{quote(label)}:"
    for i, (tensor, values, s) in enumerate(entries):
        notes = [
            stats_note(s, tensor.dtype),
            "Fortran order" if tensor.order == "F" else "",
            "big-endian" if tensor.byteswap else "",
        ]
        shown = Shown(tensor.name, tensor.shape, tensor.dtype.name, values, note="; ".join(n for n in notes if n))
        yield from tensor_lines(shown, full=full, **printing)
        h = histograms[i] if histograms else None
        if h is not None:
            yield from render_histogram(tensor.name, h).split("\n")
