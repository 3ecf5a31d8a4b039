"""``onnxop show --hist``: a small text histogram of a tensor's values, as
polygraphy's ``inspect data --histogram`` prints one.

    histogram of a (120 finite values):
      [-30.0, -24.05)     12  ########################################
      ...
      [23.55, 29.5]       12  ########################################

Ten equal bins between the smallest and the largest finite value (numpy's
``histogram`` rule: the last bin holds its right edge); NaN and infinities are
counted apart. Counted over bounded slices, as the statistics are. Returns
data and text; never prints.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Iterable

from .node import quote
from .values import SLICE, float_text, is_numeric

if TYPE_CHECKING:
    import numpy as np

    from ..core.tensor import DType

BINS = 10
BAR = 40  # characters of the longest bar


def histogram(values: np.ndarray, dtype: DType, *, bins: int = BINS,
              parts: Callable[[], Iterable[np.ndarray]] | None = None) -> dict[str, Any] | None:
    """``{"edges": [bins + 1 floats], "counts": [bins ints], "other": int}``
    (``other``: NaN and infinite values, left out), or None for types without
    statistics. With no finite value, edges and counts are empty. ``parts``,
    called once per pass, gives the values slice by slice in place of
    slicing ``values`` (show.file_slices: a large file is read, not mapped)."""
    import numpy as np

    if not is_numeric(dtype):
        return None
    flat = np.asarray(values).reshape(-1)
    if parts is None:
        def parts():
            return (flat[start : start + SLICE] for start in range(0, flat.size, SLICE))
    lo = hi = None
    with np.errstate(all="ignore"):
        for part in _finite_slices(parts()):
            if part.size:
                lo = part.min() if lo is None else min(lo, part.min())
                hi = part.max() if hi is None else max(hi, part.max())
        if lo is None:
            return {"edges": [], "counts": [], "other": int(flat.size)}
        if np.isfinite(hi - lo):
            try:  # float64's largest, all equal: numpy's +-0.5 edges are nan and inf, and count nothing
                edges = np.histogram_bin_edges(np.array([lo, hi]), bins=bins)
                ok = bool(np.all(np.isfinite(edges)) and np.all(np.diff(edges) > 0))
            except ValueError:  # 'Too many bins for data range'
                ok = False
            if not ok:
                edges = _fine_edges(float(lo), float(hi), bins)
        else:  # float64's extremes, lo < 0 < hi: hi - lo is inf, which numpy's rule cannot cut; the two
            # terms of each edge are finite and of opposite signs, so their sum is too
            edges = np.array([lo / bins * (bins - i) + hi / bins * i for i in range(bins)] + [hi])
        counts = np.zeros(bins, dtype=np.int64)
        finite = 0
        for part in _finite_slices(parts()):
            counts += np.histogram(part, bins=edges)[0]
            finite += part.size
    return {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts], "other": int(flat.size - finite)}


def _fine_edges(lo: float, hi: float, bins: int) -> np.ndarray:
    """Edges around [lo, hi] where numpy's rule cannot cut it into ``bins``
    increasing float64 edges: a range of fewer than ``bins`` float64 steps
    (every value equal, or int64s near 2**63 read as float64, where numpy's
    +-0.5 is below one step or past float64's largest, or two neighbouring
    float64s). Each bin is one
    step of the values' magnitude (or (hi - lo) / bins if wider), centred on
    the range, moved inside float64's range at its ends."""
    import numpy as np

    step = max((hi - lo) / bins, math.ulp(max(abs(lo), abs(hi))))
    edges = lo + (hi - lo) / 2 + step * (np.arange(bins + 1) - bins / 2)
    if not np.isfinite(edges[-1]) or edges[-1] < hi:
        edges = hi - step * np.arange(bins, -1, -1)
    if not np.isfinite(edges[0]) or edges[0] > lo:
        edges = lo + step * np.arange(bins + 1)
    return edges


def _edge_texts(edges: list[float]) -> list[str]:
    """The edges to six digits, or to as many more as it takes for each to
    differ from the next (bins narrower than six digits: each label names
    its own range, not ten times the same one)."""
    for digits in range(6, 18):
        texts = [float_text(e, digits) for e in edges]
        if all(a != b for a, b in zip(texts, texts[1:])):
            break
    return texts


def _finite_slices(parts: Iterable[np.ndarray]):
    import numpy as np

    for part in parts:
        part = part.astype(np.float64)
        yield part[np.isfinite(part)]


def render(name: str, h: dict[str, Any], indent: str = "    ") -> str:
    """The histogram as lines of ``[lo, hi)  count  ####``."""
    total = sum(h["counts"])
    other = f"; {h['other']} NaN or infinite left out" if h["other"] else ""
    lines = [f"{indent}histogram of {quote(name)} ({total} finite values{other}):"]
    if not h["counts"]:
        return lines[0]
    edges = _edge_texts(h["edges"])
    ranges = [f"[{a}, {b}{']' if i == len(h['counts']) - 1 else ')'}" for i, (a, b) in enumerate(zip(edges, edges[1:]))]
    width = max(len(r) for r in ranges)
    digits = max(len(str(c)) for c in h["counts"])
    top = max(h["counts"]) or 1
    for r, c in zip(ranges, h["counts"]):
        bar = "#" * (round(BAR * c / top) if c else 0)
        lines.append(f"{indent}  {r.ljust(width)}  {str(c).rjust(digits)}  {bar}".rstrip())
    return "\n".join(lines)
