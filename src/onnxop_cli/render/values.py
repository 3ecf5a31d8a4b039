"""Values as the ONNX operator pages print them: a leaf (numpy only, and only
inside the functions), used by node, fulltext, show and histogram alike.

Values are numpy's ``array2string`` with ``", "`` separators. The summary rule
is derived from the 17 examples on the seed pages (``samples/Flatten-25.txt``,
``samples/Unsqueeze-13.rst``; tests/unit/test_render.py re-derives it): an array
of more than SUMMARY_THRESHOLD elements is summarised, and then every axis
longer than 2 * EDGE_ITEMS shows its first and last EDGE_ITEMS entries around
``...``; shorter axes are printed in full even then.

- The Flatten page prints its 120-element (2, 3, 4, 5) and (5, 4, 3, 2) inputs
  in full (no axis is longer than 6) but summarises the 120-element outputs
  (1, 120), (2, 60), (6, 20), (24, 5) and (5, 24) along their long axes; the
  Unsqueeze page's 6- to 60-element tensors have no axis longer than 6. So
  the threshold is below 120 -- numpy's default of 1000 would print those
  outputs in full -- and every value in [0, 119] reproduces the 17 blocks. We
  take 100: it keeps small tensors whole and is numpy's own order of size.
- EDGE_ITEMS = 3 is the only value that reproduces them (1, 2, 4, 5 do not).
- Lines wrap at numpy's default width of 75 (any width >= 49 reproduces them).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    import numpy as np

    from ..core.tensor import DType

SUMMARY_THRESHOLD = 100
from ..core.summary import EDGE_ITEMS  # noqa: E402 - the rule the core applies too: it makes only the shown elements
LINE_WIDTH = 75
PRECISION = 8  # numpy's default digits, spelled out so global print options cannot leak in
NOT_NUMERIC = {"bool", "complex64", "complex128", "object"}
SLICE = 1 << 22  # elements per slice when computing statistics


def format_values(values: np.ndarray, *, full: bool = False, summarised: bool = False,
                  precision: int | None = None, edgeitems: int | None = None) -> str:
    """The values as the docs print them (numpy layout, ``, `` separators);
    ``precision`` and ``edgeitems`` as numpy's print options have them.
    ``summarised``: ``values`` are the shown elements of a larger array
    (core/summary.py), printed as its summary."""
    import numpy as np

    values = np.asarray(values)
    threshold = values.size + 1 if full else 0 if summarised else SUMMARY_THRESHOLD
    return np.array2string(
        values,
        # strings (str, or bytes when not UTF-8) stay objects: each shown one is
        # formatted as numpy shows text, long ones cut short; no fixed-width copy
        formatter={"object": short_repr},
        separator=", ",
        threshold=threshold,
        edgeitems=EDGE_ITEMS if edgeitems is None else edgeitems,
        max_line_width=LINE_WIDTH,
        precision=PRECISION if precision is None else precision,
        floatmode="maxprec",
        suppress_small=False,
        sign="-",
    )


LONG_STRING = 40  # characters shown of a longer string, then its length


def short_repr(value: object) -> str:
    """A string as numpy prints it (``'abc'``, ``b'\\xff'``); a long one cut
    short with its length: ``'abcdef...' (1048576 chars)``."""
    if not isinstance(value, (str, bytes)) or len(value) <= LONG_STRING:
        return repr(value)
    shown = repr(value[:LONG_STRING])
    unit = "bytes" if isinstance(value, bytes) else "chars"
    return f"{shown[:-1]}...{shown[-1]} ({len(value)} {unit})"


def format_shape(shape: Sequence[int]) -> str:
    return str(tuple(int(d) for d in shape))


def is_numeric(dtype: DType) -> bool:
    return dtype.name not in NOT_NUMERIC and not dtype.is_string


def is_float(dtype: DType) -> bool:
    return dtype.name.startswith(("float", "bfloat"))


def float_text(x: float, digits: int = 17) -> str:
    """``x`` rounded to ``digits`` significant digits, written as Python
    writes a float (``2.0``, ``-0.0``, ``1e-07``, ``inf``)."""
    if not math.isfinite(x):
        return repr(x)
    return repr(float(f"{x:.{digits}g}"))
