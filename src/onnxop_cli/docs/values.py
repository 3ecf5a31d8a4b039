"""Tensor values as the ONNX pages print them, read back.

The pages print values with numpy's ``array2string`` (``", "`` separators,
default precision 8) and summarise long axes with ``...``. This module parses
that text into a tree of tokens -- nested lists of strings, with ``...``
(Python's Ellipsis) where entries were left out -- and compares a tree with
an array at exactly the positions the page prints.

Tokens are cut at brackets and commas, never at spaces: numpy pads complex
numbers inside the token (``10. +20.5j``), and the flattened web pages have
lost part of their spacing anyway.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from types import EllipsisType
from typing import TYPE_CHECKING, Iterator, Union

from ..render.values import PRECISION as PRINT_PRECISION  # a float with this many digits may be rounded

if TYPE_CHECKING:
    import numpy as np


Tree = Union[str, EllipsisType, list]  # a token, a left-out run, or a nested list
_TOKEN = re.compile(r"\[|\]|,|[^\[\],]+")
_FLOAT = re.compile(r"^[+-]?(?:(\d*)\.?(\d*)(?:e([+-]?\d+))?|nan|inf)$")
_PADDING = re.compile(r"\s+(?=[+-])")  # numpy pads a complex number before its imaginary sign
_COMPLEX = re.compile(
    r"^([+-]?(?:nan|inf|[\d.]+(?:e[+-]?\d+)?))([+-](?:nan|inf|[\d.]+(?:e[+-]?\d+)?))j$"
)


MAX_RANK = 64  # numpy's limit; deeper brackets are not an array


class ValuesError(ValueError):
    """Printed values that cannot be read, or do not fit the declared shape/dtype."""


@dataclass(frozen=True)
class Printed:
    """Values as printed: the token tree and whether anything was left out."""

    tree: Tree
    summarised: bool


def parse_printed(text: str) -> Printed:
    """Parse numpy's printed form (full or summarised) into a token tree."""
    tokens = [t for t in (m.group().strip() for m in _TOKEN.finditer(text)) if t]
    if not tokens:
        raise ValuesError("no values printed")
    pos = 0
    summarised = False

    def value(depth: int = 0) -> Tree:
        nonlocal pos, summarised
        if depth > MAX_RANK:
            raise ValuesError(f"values are nested more than {MAX_RANK} deep")
        if pos >= len(tokens):
            raise ValuesError("values end early (missing ']')")
        tok = tokens[pos]
        pos += 1
        if tok == "]" or tok == ",":
            raise ValuesError(f"unexpected {tok!r} in the values")
        if tok == "...":
            summarised = True
            return ...
        if tok != "[":
            return _PADDING.sub("", tok)
        items: list = []
        if pos < len(tokens) and tokens[pos] == "]":
            pos += 1
            return items
        while True:
            items.append(value(depth + 1))
            if pos >= len(tokens):
                raise ValuesError("values end early (missing ']')")
            sep = tokens[pos]
            pos += 1
            if sep == "]":
                return items
            if sep != ",":
                raise ValuesError(f"expected ',' or ']' in the values, found {sep!r}")

    tree = value()
    if pos != len(tokens):
        raise ValuesError(f"unexpected {tokens[pos]!r} after the values")
    if tree is ...:
        raise ValuesError("values are only '...'")
    return Printed(tree, summarised)


# ---------------------------------------------------------------- positions


def _positions(tree: Tree, shape: tuple[int, ...], where: tuple[int, ...] = ()) -> Iterator[tuple[tuple[int, ...], str]]:
    """(index, token) for every printed scalar, checking the tree fits ``shape``.

    An Ellipsis in a list of length n for an axis of length d stands for the
    d - (n - 1) entries between the ones printed before and after it.
    """
    axis = len(where)
    if axis == len(shape):
        if isinstance(tree, list):
            raise ValuesError(f"too many nested brackets at {_at(where)} for shape {shape}")
        yield where, tree
        return
    if not isinstance(tree, list):
        raise ValuesError(f"expected {len(shape) - axis} more nested brackets at {_at(where)} for shape {shape}")
    dim = shape[axis]
    gaps = [i for i, item in enumerate(tree) if item is ...]
    if len(gaps) > 1:
        raise ValuesError(f"more than one '...' on one axis at {_at(where)}")
    if gaps:
        (gap,) = gaps
        before, after = tree[:gap], tree[gap + 1 :]
        if len(before) + len(after) >= dim:
            raise ValuesError(
                f"axis {axis} has length {dim} but {len(before) + len(after)} entries "
                f"and '...' are printed at {_at(where)}"
            )
        indexed = list(enumerate(before)) + [(dim - len(after) + i, item) for i, item in enumerate(after)]
    else:
        if len(tree) != dim:
            raise ValuesError(
                f"axis {axis} has length {dim} but {len(tree)} entries are printed at {_at(where)}"
            )
        indexed = list(enumerate(tree))
    for i, item in indexed:
        yield from _positions(item, shape, where + (i,))


def _at(where: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in where) + "]"


# ---------------------------------------------------------------- tokens


def parse_token(token: str, dtype: np.dtype):
    """One printed scalar as a value of ``dtype`` (numpy scalar)."""
    import numpy as np

    kind = dtype.kind
    try:
        if kind == "b":
            if token not in ("True", "False"):
                raise ValueError
            return np.bool_(token == "True")
        if kind in "iu":
            info = np.iinfo(dtype)
            n = int(token)
            if not info.min <= n <= info.max:
                raise ValuesError(f"{token} is out of range for {dtype}")
            return dtype.type(n)
        if kind == "f":
            if not _FLOAT.match(token):
                raise ValueError
            with np.errstate(over="ignore"):  # 1e10 as float16 is inf, as numpy says
                return dtype.type(float(token))
        if kind == "c":
            return dtype.type(complex(token))
    except (ValueError, OverflowError) as e:
        if isinstance(e, ValuesError):
            raise
        raise ValuesError(f"{token!r} is not a {dtype} value") from None
    raise ValuesError(f"values of dtype {dtype} cannot be read from a page")


def to_array(printed: Printed, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """The full array the page prints (refused if any entry was left out)."""
    import numpy as np

    if printed.summarised:
        raise ValuesError("values are summarised with '...'")
    if any(d < 0 for d in shape):
        raise ValuesError(f"shape {shape} has a negative dimension")
    if math.prod(shape) == 0:
        if printed.tree != []:
            raise ValuesError(f"shape {shape} has no values but some are printed")
        return np.empty(shape, dtype=dtype)
    # every value is on the page, so the page's length bounds the allocation
    values = [(where, parse_token(token, dtype)) for where, token in _positions(printed.tree, shape)]
    out = np.empty(shape, dtype=dtype)
    for where, value in values:
        out[where] = value
    return out


# ---------------------------------------------------------------- compare


def token_matches(token: str, value, dtype: np.dtype) -> bool:
    """Whether ``value`` prints as ``token`` at the page's precision.

    Ints and bools must be equal. A float matches when it is the token's
    value exactly (-0.0 and NaN included), or when numpy would print it as
    the token: numpy rounds to PRINT_PRECISION fractional digits (of the
    mantissa, in scientific notation) and drops trailing zeros, so the value
    must lie within half a unit of that last digit -- 1.100000001 prints
    as ``1.1``, while 0.54 never prints as ``0.5``.
    """
    import numpy as np

    if dtype.kind == "c":
        m = _COMPLEX.match(token)
        if not m:
            return False
        real_type = np.dtype(f"f{dtype.itemsize // 2}")
        return token_matches(m.group(1), value.real, real_type) and token_matches(
            m.group(2).lstrip("+"), value.imag, real_type
        )
    try:
        expected = parse_token(token, dtype)
    except ValuesError:
        return False
    if dtype.kind != "f":
        return bool(expected == value)
    if np.isnan(value) or np.isnan(expected):
        return bool(np.isnan(value) and np.isnan(expected))
    if expected == value:
        return bool(np.signbit(expected) == np.signbit(value))
    if np.isinf(value) or np.isinf(expected) or np.signbit(expected) != np.signbit(value):
        return False
    exponent = int(_FLOAT.match(token).group(3) or 0)
    half_unit = 0.5 * 10.0 ** (exponent - PRINT_PRECISION)
    return abs(float(value) - float(token)) <= half_unit * (1 + 1e-9)


def first_difference(printed: Printed, actual: np.ndarray) -> tuple[tuple[int, ...], str, object] | None:
    """The first printed position whose token ``actual`` does not match:
    (index, documented token, actual value), or None when all match."""
    if actual.size == 0:
        if printed.tree != []:
            raise ValuesError(f"shape {actual.shape} has no values but some are printed")
        return None
    for where, token in _positions(printed.tree, tuple(actual.shape)):
        value = actual[where]
        if not token_matches(token, value, actual.dtype):
            return where, token, value
    return None


def count_printed(printed: Printed, shape: tuple[int, ...]) -> int:
    """How many values the page prints for ``shape``."""
    if math.prod(shape) == 0:
        return 0
    return sum(1 for _ in _positions(printed.tree, shape))
