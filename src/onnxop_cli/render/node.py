"""ONNX-doc-style text for a node, its inputs and its outputs.

Returns text (and rich objects for a terminal); never prints. The layout is
the one the ONNX operator pages use for their examples::

    Node:
      Flatten(a) -> (b)

    Attributes:
      axis = 0

    Inputs:
      a: shape=(2, 3, 4, 5), dtype=float32
        [[[[-30. , -29.5, ...

    Outputs:
      b: shape=(1, 120), dtype=float32
        [[-30. , -29.5, -29. , ...,  28.5,  29. ,  29.5]]

Values are numpy's ``array2string`` with ``", "`` separators. The summary rule
is derived from the 17 examples on the seed pages (``samples/Flatten-25.txt``,
``samples/Unsqueeze-13.rst``; tests/test_render.py re-derives it): an array
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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Sequence

if TYPE_CHECKING:
    import numpy as np
    from rich.text import Text

    from ..ops import Node

SUMMARY_THRESHOLD = 100
EDGE_ITEMS = 3
LINE_WIDTH = 75
PRECISION = 8  # numpy's default digits, spelled out so global print options cannot leak in
INDENT = "  "


@dataclass(frozen=True)
class Shown:
    """A named tensor as it is printed: name, shape, dtype name, values."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    values: np.ndarray | None = None  # None: print the header line only
    note: str = ""


def format_values(values: np.ndarray, *, full: bool = False) -> str:
    """The values as the docs print them (numpy layout, ``, `` separators)."""
    import numpy as np

    values = np.asarray(values)
    threshold = values.size + 1 if full else SUMMARY_THRESHOLD
    return np.array2string(
        values,
        # strings (str, or bytes when not UTF-8) stay objects: each shown one is
        # formatted as numpy shows text, long ones cut short; no fixed-width copy
        formatter={"object": short_repr},
        separator=", ",
        threshold=threshold,
        edgeitems=EDGE_ITEMS,
        max_line_width=LINE_WIDTH,
        precision=PRECISION,
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


def tensor_lines(t: Shown, *, full: bool = False) -> Iterator[str]:
    """One tensor's lines, as the docs list an input or output (indented,
    values below). With ``full`` the values are made line by line
    (fulltext.py), so a caller that prints each line as it comes streams them."""
    note = f"  ({t.note})" if t.note else ""
    yield f"{INDENT}{t.name}: shape={format_shape(t.shape)}, dtype={t.dtype}{note}"
    if t.values is not None:
        if full:
            from .fulltext import lines as body
        else:
            def body(values):
                return format_values(values).split("\n")

        for line in body(t.values):
            yield f"{INDENT * 2}{line}" if line else ""


def render_tensor(t: Shown, *, full: bool = False) -> str:
    """One tensor as the docs list an input or output (indented, values below)."""
    return "\n".join(tensor_lines(t, full=full))


def format_attribute(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def render_node(
    node: Node,
    inputs: Sequence[Shown],
    outputs: Sequence[Shown],
    *,
    full: bool = False,
    axes_name: str = "axes",
    names: dict[str, str] | None = None,
) -> str:
    """The doc block for one node (``node_lines`` joined)."""
    return "\n".join(node_lines(node, inputs, outputs, full=full, axes_name=axes_name, names=names))


def node_lines(
    node: Node,
    inputs: Sequence[Shown],
    outputs: Sequence[Shown],
    *,
    full: bool = False,
    axes_name: str = "axes",
    names: dict[str, str] | None = None,
) -> Iterator[str]:
    """The doc block for one node, line by line. ``inputs`` are the tensor
    inputs; the node's constant inputs (Unsqueeze's axes from opset 13,
    Reshape's shape, Slice's starts, ...) are listed after them as int64
    tensors, named as in the schema unless ``names`` (or, for axes,
    ``axes_name``) says otherwise; attributes go under Attributes."""
    inputs = list(inputs) + constant_inputs(node, {"axes": axes_name, **(names or {})})
    attributes = dict(node.attributes)
    names_in = ", ".join(t.name for t in inputs)
    names_out = ", ".join(t.name for t in outputs)

    yield from ["Node:", f"{INDENT}{node.op_type}({names_in}) -> ({names_out})", ""]
    if attributes:
        yield "Attributes:"
        yield from (f"{INDENT}{k} = {format_attribute(v)}" for k, v in attributes.items())
        yield ""
    yield "Inputs:"
    for t in inputs:
        yield from tensor_lines(t, full=full)
    yield from ["", "Outputs:"]
    for t in outputs:
        yield from tensor_lines(t, full=full)


def constant_inputs(node: Node, names: dict[str, str] | None = None) -> list[Shown]:
    """The node's constant inputs, in schema order, as int64 tensors."""
    import numpy as np

    names = names or {}
    shown = []
    for name in node.op.inputs[1:]:
        if name in node.inputs:
            values = np.asarray(node.inputs[name], dtype=np.int64)
            shown.append(Shown(names.get(name, name), values.shape, "int64", values))
    return shown


def normalise(text: str) -> str:
    """Whitespace-insensitive form used to compare against the docs' text
    (the Flatten page lost its indentation): one space between tokens, no
    blank lines."""
    return "\n".join(" ".join(line.split()) for line in text.splitlines() if line.strip())


def printable(text: str, keep: str = "") -> str:
    """``text`` with control characters (but those in ``keep``) written as
    escapes: names come from files, and a name holding a terminal escape
    sequence must not reach the terminal as one, nor a newline split an
    error line in two."""
    if text.isprintable() and not keep:
        return text
    return "".join(c if c.isprintable() or c in keep else repr(c)[1:-1] for c in text)


def stylize(text: str) -> Text:
    """The same text with colour for a terminal (the characters are unchanged)."""
    from rich.text import Text

    styled = Text(text)
    styled.highlight_regex(r"(?m)^(Node|Attributes|Inputs|Outputs):", "bold")
    styled.highlight_regex(r"(?m)^\s+\w[\w.\-]*(?=: shape=)", "bold cyan")
    styled.highlight_regex(r"shape=\([^)]*\)", "green")
    styled.highlight_regex(r"dtype=\S+", "magenta")
    styled.highlight_regex(r"(?m)^\s+\w+(?=\()", "bold yellow")
    return styled
