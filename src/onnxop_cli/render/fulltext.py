"""``--full``: every value, exactly as ``numpy.array2string`` prints an array
with no summary, produced line by line in bounded memory, so that
``onnxop show big.npy --full | head`` answers at once.

numpy builds the whole text as one string (a 16 MiB tensor took 52 s and
2.1 GB), and its number format depends on every value: the widths of the
widest integer and fractional parts. Two things make streaming exact:

1. The format.  numpy's formatter reads the data only through maxima (the
   longest integer part, fractional part and exponent, the smallest and
   largest magnitudes) and through the presence of NaN and infinities. So we
   scan the tensor in slices for the *witnesses* of those maxima and hand
   numpy those few values: its own formatter, built on them, is the one it
   would build on the whole tensor. Integer and fractional lengths are
   capped at the precision, so the scan stops early once the cap is reached
   (random data reaches it in the first slice).
2. The layout.  numpy wraps a row's words (all of one width) at the line
   width and separates rows with ``,`` and a blank line per axis closed; we
   generate the same lines row by row (``_formatArray``'s rules).

Types whose words do not depend on other values (bool, ml_dtypes' types,
printed by ``str``) take numpy's formatter from one element. Strings and
0-d or empty arrays are left to numpy (``render.format_values``).
tests/unit/test_fulltext.py compares the result with ``array2string``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Callable, Iterator

from .values import LINE_WIDTH, PRECISION, format_values

if TYPE_CHECKING:
    import numpy as np

SEPARATOR = ", "
SLICE = 1 << 16  # elements formatted or scanned at a time
SAMPLE = 16  # elements of each slice formatted before the slice is grouped by digits


def lines(values: np.ndarray) -> Iterator[str]:
    """The lines of ``render.format_values(values, full=True)``, one at a time."""
    import numpy as np

    a = np.asarray(values)
    word = None if a.ndim == 0 or a.size == 0 else _format_function(a)
    if word is None:
        yield from format_values(a, full=True).split("\n")
        return
    yield from _layout(a, word)


def _fixed_width(a: np.ndarray) -> bool:
    """Whether numpy prints ``a``'s words without reading other values (ml_dtypes' types)."""
    import numpy as np

    return a.dtype.kind == "V" and not issubclass(a.dtype.type, (np.void,))


# ------------------------------------------------------------------ format


def _options() -> dict:
    """The options ``render.format_values`` gives ``array2string``, as numpy merges them."""
    from numpy._core.arrayprint import _make_options_dict, format_options

    options = format_options.get().copy()
    options.update(_make_options_dict(
        precision=PRECISION, threshold=sys.maxsize, edgeitems=3, linewidth=LINE_WIDTH,
        suppress=False, nanstr=None, infstr=None, sign="-", formatter=None, floatmode="maxprec", legacy=False,
    ))
    return options


def _format_function(a: np.ndarray) -> Callable | None:
    """numpy's word formatter for the whole of ``a``, built on a few witnesses."""
    import numpy as np
    from numpy._core.arrayprint import _get_format_function

    options = _options()
    flat = a.reshape(-1)
    kind = a.dtype.kind
    if kind == "b" or _fixed_width(a):
        return _get_format_function(flat[:1], **options)
    if kind in "iu":
        lo = min(flat[i : i + SLICE].min() for i in range(0, flat.size, SLICE))
        hi = max(flat[i : i + SLICE].max() for i in range(0, flat.size, SLICE))
        return _get_format_function(np.array([lo, hi], a.dtype), **options)
    if kind == "f" and a.dtype.itemsize <= 8:
        return _get_format_function(_float_witnesses(flat, "-"), **options)
    if kind == "c" and a.dtype.itemsize <= 16:
        real = _float_witnesses(flat.real, "-")
        imag = _float_witnesses(flat.imag, "+")
        both = np.zeros(max(real.size, imag.size), a.dtype)
        both.real[:] = real[0]
        both.imag[:] = imag[0]
        both.real[: real.size] = real
        both.imag[: imag.size] = imag
        return _get_format_function(both, **options)
    return None


def _float_witnesses(flat: np.ndarray, sign: str) -> np.ndarray:
    """Values of ``flat`` on which numpy's FloatingFormat comes out as on all of it."""
    import numpy as np
    from numpy._core.arrayprint import FloatingFormat

    dtype = flat.dtype
    picks: list = []
    lo_abs = hi_abs = None
    nonfinite = {"nan": False, "inf": False, "-inf": False}
    with np.errstate(all="ignore"):
        for i in range(0, flat.size, SLICE):
            part = flat[i : i + SLICE]
            finite = part[np.isfinite(part)]
            nonfinite["nan"] |= bool(np.isnan(part).any())
            nonfinite["inf"] |= bool((part == np.inf).any())
            nonfinite["-inf"] |= bool((part == -np.inf).any())
            if finite.size:
                picks += [finite.min(), finite.max()]  # the longest integer parts (and signs)
                zeros = finite[(finite == 0) & np.signbit(finite)]
                picks += list(zeros[:1])  # -0.0 prints "-0."
                nonzero = np.abs(finite[finite != 0])
                if nonzero.size:
                    lo_abs = nonzero.min() if lo_abs is None else min(lo_abs, nonzero.min())
                    hi_abs = nonzero.max() if hi_abs is None else max(hi_abs, nonzero.max())
    extremes = [v for v in (lo_abs, hi_abs) if v is not None]  # decide exponential notation
    picks += extremes
    base = np.array(picks or [0], dtype)
    fmt = FloatingFormat(base, PRECISION, "maxprec", False, sign=sign, legacy=sys.maxsize)
    picks += _longest_fraction(flat, fmt.exp_format, sign)
    picks += [np.nan] * nonfinite["nan"] + [np.inf] * nonfinite["inf"] + [-np.inf] * nonfinite["-inf"]
    return np.array(picks, dtype)


def _longest_fraction(flat: np.ndarray, exp_format: bool, sign: str) -> list:
    """The value with the most fractional digits as numpy prints them
    (positional or scientific); the scan ends when one reaches PRECISION.
    Formatting every value would cost as much as printing them all, so each
    slice is first sampled, then grouped by an upper bound on its values'
    digits (``_groups``), and a group whose bound is no better than the best
    found is not formatted."""
    import numpy as np

    if exp_format:
        def digits(x) -> int:
            text = np.format_float_scientific(x, precision=PRECISION, unique=True, trim=".", sign=sign == "+")
            return len(text.partition("e")[0].partition(".")[2])
    else:
        def digits(x) -> int:
            text = np.format_float_positional(
                x, precision=PRECISION, unique=True, fractional=True, trim=".", sign=sign == "+"
            )
            return len(text.partition(".")[2])

    best, best_digits = None, -1
    with np.errstate(all="ignore"):
        for i in range(0, flat.size, SLICE):
            part = flat[i : i + SLICE]
            part = part[np.isfinite(part)]
            for x in part[:SAMPLE]:  # random data reaches the cap at once: no need to group
                n = digits(x)
                if n > best_digits:
                    best, best_digits = x, n
            if best_digits >= PRECISION:
                return [best]
            for group, bound in _groups(part, exp_format):
                if bound <= best_digits:
                    break
                for x in group:
                    n = digits(x)
                    if n > best_digits:
                        best, best_digits = x, n
                        if n >= min(bound, PRECISION):
                            break
                if best_digits >= PRECISION:
                    return [best]
    return [] if best is None else [best]


def _groups(part: np.ndarray, exp_format: bool):
    """``part`` as (values, bound on their fractional digits) groups, largest
    bound first. A float32 or float16 ``x`` whose ``x * 10**k`` is an integer
    ``m`` (exact in float64: 24 + 27 bits) has an exact decimal of ``k``
    fractional digits and of as many significant digits as ``m`` without its
    trailing zeros; numpy's shortest form has no more (positional: ``k``;
    scientific: the significant digits less one). So values like ``k/8`` need
    one formatted value per bound. The rest (and float64) are bounded only by
    the precision."""
    import numpy as np

    if part.dtype.itemsize > 4:
        yield part, PRECISION
        return
    wide = part.astype(np.float64)
    frac = np.full(part.size, PRECISION + 1, np.int64)  # PRECISION + 1: no exact decimal found
    todo, left = np.arange(part.size), wide
    for k in range(PRECISION + 1):  # the smallest k first; each pass looks only at what is left
        scaled = left * 10.0**k
        hit = (np.rint(scaled) == scaled) & (np.abs(scaled) < 2.0**53)
        frac[todo[hit]] = k
        todo, left = todo[~hit], left[~hit]
        if not todo.size:
            break
    bound = frac
    if exp_format:
        known = np.flatnonzero(frac <= PRECISION)
        m = np.abs(np.rint(wide[known] * 10.0 ** frac[known])).astype(np.int64)
        # with the smallest k > 0, m ends in no zero; an integer (k = 0) may: drop them
        ints = np.flatnonzero((frac[known] == 0) & (m != 0))
        while ints.size:
            tens = ints[m[ints] % 10 == 0]
            m[tens] //= 10
            ints = tens
        significant = np.searchsorted(10 ** np.arange(17, dtype=np.int64), m, side="right")
        bound = np.full(part.size, PRECISION + 1, np.int64)
        bound[known] = np.maximum(significant - 1, 0)
    for k in range(int(bound.max(initial=0)), -1, -1):
        chosen = part[bound == k]
        if chosen.size:
            yield chosen, min(k, PRECISION)


# ------------------------------------------------------------------ layout


def _layout(a: np.ndarray, word: Callable) -> Iterator[str]:
    """numpy's ``_formatArray`` for a summary-free array, one line at a time:
    rows wrap at the line width, ``,`` ends a row, and each axis that closes
    adds a blank line."""
    import numpy as np

    n = a.ndim
    rows = a.reshape(-1, a.shape[-1])
    outer = a.shape[:-1]
    for r in range(rows.shape[0]):
        idx = np.unravel_index(r, outer) if outer else ()
        opened = _run(idx, lambda k: idx[k] == 0)
        closed = _run(idx, lambda k: idx[k] == outer[k] - 1)
        head = " " * (n - 1 - opened) + "[" * opened
        last = r == rows.shape[0] - 1
        tail = "]" * closed + ("" if last else ",")
        text = list(_row(rows[r], word, n, head))
        text[-1] += tail
        yield from text
        if not last:
            yield from [""] * closed


def _run(idx: tuple, test: Callable[[int], bool]) -> int:
    """How many of the last positions of ``idx`` pass ``test``, in a row."""
    count = 0
    for k in range(len(idx) - 1, -1, -1):
        if not test(k):
            break
        count += 1
    return count


def _row(row: np.ndarray, word: Callable, n: int, head: str) -> Iterator[str]:
    """One row's lines: ``[`` + words wrapped as numpy's ``_extendLine`` wraps
    them (the first line begins with ``head``, the others with n spaces)."""
    hang = " " * n
    width = LINE_WIDTH - (n - 1) - max(len(SEPARATOR.rstrip()), len("]"))
    line, first, count = hang, True, row.size
    for start in range(0, count, SLICE):
        for i, x in enumerate(row[start : start + SLICE], start):
            w = word(x)
            if len(line) + len(w) > width and len(line) > len(hang):
                yield (head + "[" + line[n:] if first else line).rstrip()
                first, line = False, hang
            line += w
            if i < count - 1:
                line += SEPARATOR
    yield (head + "[" + line[n:] if first else line) + "]"
