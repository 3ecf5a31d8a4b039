"""ONNX-doc-style text for a node, its inputs and its outputs.

Returns text (the CLI adds colour for a terminal: cli/console.stylize); never prints. The layout is
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

Values are formatted by values.py (numpy's layout, the summary rule the pages imply).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Sequence

from .values import format_shape, format_values

if TYPE_CHECKING:
    import numpy as np

    from ..ops import Node

INDENT = "  "


@dataclass(frozen=True)
class Shown:
    """A named tensor as it is printed: name, shape, dtype name, values."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    values: np.ndarray | None = None  # None: print the header line only
    note: str = ""
    summarised: bool = False  # values are only the shown elements (core/summary.py): always summarise


def tensor_lines(t: Shown, *, full: bool = False, precision: int | None = None,
                 edgeitems: int | None = None) -> Iterator[str]:
    """One tensor's lines, as the docs list an input or output (indented,
    values below). With ``full`` the values are made line by line
    (fulltext.py), so a caller that prints each line as it comes streams them."""
    note = f"  ({t.note})" if t.note else ""
    yield f"{INDENT}{quote(t.name)}: shape={format_shape(t.shape)}, dtype={t.dtype}{note}"
    if t.values is not None:
        if full:
            from .fulltext import lines as body
        else:
            def body(values):
                return format_values(values, summarised=t.summarised, precision=precision,
                                     edgeitems=edgeitems).split("\n")

        for line in body(t.values):
            yield f"{INDENT * 2}{line}" if line else ""


def format_attribute(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(quote(v) for v in value) + "]"
    return quote(value)


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
    names_in = ", ".join(quote(t.name) for t in inputs)
    names_out = ", ".join(quote(t.name) for t in outputs)

    yield from ["Node:", f"{INDENT}{quote(node.op_type)}({names_in}) -> ({names_out})", ""]
    if attributes:
        yield "Attributes:"
        yield from (f"{INDENT}{quote(k)} = {format_attribute(v)}" for k, v in attributes.items())
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
    return "".join(c if c.isprintable() or c in keep or c == "\\" else _quote_char(c) for c in text)


def quote(name: object) -> str:
    """A name from a file (tensor, member, file, node, attribute value) as it
    may appear inside a line of text, quoted as ``ls -b`` does: every control
    character (newline, tab, CR, ESC, ...) and the backslash itself written as
    an escape (``\\n``, ``\\t``, ``\\x1b``, ``\\\\``), and each byte of invalid
    UTF-8 (kept by Python as a lone surrogate) as ``\\xNN``. So no name can
    end a line, start a forged one or move the cursor, and the quoted form
    tells names apart. The one place names are quoted; --json writes names
    exactly instead (JSON escapes them)."""
    # bytes: a name protobuf found not UTF-8, its bytes shown as a file name's are
    text = name.decode("utf-8", "surrogateescape") if isinstance(name, bytes) else str(name)
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(_quote_char(c) for c in text)


def quoted(name: object) -> str:
    """``quote(name)`` between single quotes, where a name is set in running
    text (``names 'a' and 'b'``, a node's name, a string attribute)."""
    return f"'{quote(name)}'"


def _quote_char(c: str) -> str:
    if c == "\\":
        return "\\\\"
    if c.isprintable():
        return c
    if "\udc80" <= c <= "\udcff":  # a byte of invalid UTF-8 (os.fsdecode's surrogateescape)
        return f"\\x{ord(c) - 0xDC00:02x}"
    return repr(c)[1:-1]
