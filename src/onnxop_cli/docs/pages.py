"""ONNX operator pages, read as data: their header and their examples.

Two formats are read, told apart by their markup:

- reStructuredText (the ``docs/`` sources): examples follow an ``Examples``
  heading; each is a ``**test_name**`` line followed by ``.. code-block::``
  blocks holding the Node/Attributes/Inputs/Outputs text.
- flattened web text (a rendered page saved as text, indentation lost):
  examples follow an ``Examples#`` line; each is a bare name line followed by
  ``Node:``, up to the next example or ``Differences with previous version``.

The page's opset comes from the page itself (``Since version: 25``, ``This
page documents version **13**``). Parsing never raises on a page's content:
an example that cannot be read carries the reason in ``problem``, and the
checker reports it as skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .values import Printed, ValuesError, parse_printed
from ..errors import UsageError

MAX_PAGE_BYTES = 16 * 1024 * 1024  # a page is text; refuse anything far larger
SEED_PAGES = ("Flatten-25.txt", "Unsqueeze-13.rst")  # shipped in onnxop_cli.samples

_HEADER = re.compile(r"^(\S+): shape=\(([^)]*)\), dtype=(\S+)$")
_NODE = re.compile(r"^([A-Za-z_]\w*)\((.*)\)\s*->\s*\((.*)\)$")
_ATTRIBUTE = re.compile(r"^([A-Za-z_]\w*)\s*=\s*(.+)$")
_SECTIONS = ("Node:", "Attributes:", "Inputs:", "Outputs:")
_RST_NAME = re.compile(r"^\*\*([A-Za-z_][\w.\-]*)\*\*\s*$")
_TEXT_NAME = re.compile(r"^[A-Za-z_][\w.\-]*$")
_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1+\s*$")  # rst: as long as the title, 2+ here


@dataclass
class DocTensor:
    """A tensor as a page declares it: name, shape, dtype name, printed values."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    values: Printed | None = None
    problem: str = ""  # why the values cannot be read, if they cannot


@dataclass
class Example:
    """One example of a page, parsed as far as it goes."""

    name: str
    page: str  # the page it came from, for messages
    opset: int | None
    block: str  # the documented text, compared (normalised) with onnxop's rendering
    block_lines: list[int] = field(default_factory=list)  # page line of each non-blank block line
    op_type: str = ""
    input_names: list[str] = field(default_factory=list)
    output_names: list[str] = field(default_factory=list)
    attributes: dict[str, object] = field(default_factory=dict)
    inputs: list[DocTensor] = field(default_factory=list)
    outputs: list[DocTensor] = field(default_factory=list)
    problem: str = ""  # why it cannot be run; empty when it parsed
    exact: dict = field(default_factory=dict)  # input arrays by name, when the page was made from them
    expected: list = field(default_factory=list)  # output arrays, when the page was made from a node test
    section: str = ""  # the ONNX page's example it belongs to ("concat", "gather_0"), when known
    case: object = None  # onnx's TestCase, for an operator with tensor inputs (expect.py runs it)


@dataclass
class Page:
    source: str
    format: str  # "rst" or "text"
    op_type: str
    opset: int | None
    examples: list[Example]


# ------------------------------------------------------------------ loading


def read_page(path: Path) -> Page:
    """Read and parse a page file; an unreadable file is a UsageError."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_PAGE_BYTES:
            raise UsageError(f"{path}: {path.stat().st_size} bytes is too large for a doc page")
        data = path.read_bytes()
    except OSError as e:
        raise UsageError(f"{path}: cannot read the page: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"{path}: not a text page (invalid UTF-8 at byte {e.start})") from None
    return parse_page(text, str(path))


def seed_pages() -> list[Page]:
    """The two ONNX pages shipped inside the package."""
    from importlib.resources import files

    root = files("onnxop_cli.samples")
    return [parse_page(root.joinpath(name).read_text(encoding="utf-8"), name) for name in SEED_PAGES]


# ------------------------------------------------------------------ pages


def parse_page(text: str, source: str) -> Page:
    """Parse one page in either format."""
    text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    is_rst = ".. code-block::" in text or any(_RST_NAME.match(line) for line in lines)
    opset = _page_opset(text)
    op_type = _page_op(lines, is_rst)
    chunks = _rst_examples(lines) if is_rst else _text_examples(lines)
    examples = [_parse_example(name, body, source, opset) for name, body in chunks]
    return Page(source, "rst" if is_rst else "text", op_type, opset, examples)


def _page_opset(text: str) -> int | None:
    for pattern in (r"documents version \*\*(\d+)\*\*", r"Since version\**\s*:\s*\**\s*(\d+)"):
        m = re.search(pattern, text)
        if m:
            return int(m.group(1))
    return None


def _page_op(lines: list[str], is_rst: bool) -> str:
    """The operator in the page title (``Flatten#``, ``Unsqueeze - version 13``)."""
    for i, line in enumerate(lines):
        s = line.strip()
        if not s or s.startswith(("..", ":")) or _UNDERLINE.match(s):
            continue
        if is_rst and not (i + 1 < len(lines) and _UNDERLINE.match(lines[i + 1].strip())):
            continue
        m = re.match(r"[A-Za-z_]\w*", s)
        return m.group() if m else ""
    return ""


Numbered = list[tuple[int, str]]  # (line number in the page, text)


def _rst_examples(lines: list[str]) -> list[tuple[str, Numbered]]:
    """(name, lines of its code blocks) for each ``**name**`` after ``Examples``."""
    start = _rst_heading(lines, "Examples")
    chunks: list[tuple[str, Numbered]] = []
    i = 0 if start is None else start + 2
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and line.strip() and _UNDERLINE.match(lines[i + 1].strip()):
            if start is not None:
                break  # the next section ends the examples
        m = _RST_NAME.match(line.strip())
        if m and not line.startswith(" "):
            chunks.append((m.group(1), []))
        elif line.strip().startswith(".. code-block::") and chunks:
            indent = len(line) - len(line.lstrip())
            body, i = _rst_block(lines, i + 1, indent)
            chunks[-1][1].extend(([(0, "")] if chunks[-1][1] else []) + body)
            continue
        i += 1
    # a bold line without code blocks is prose (``**Inputs**``), not an example
    return [(name, body) for name, body in chunks if body]


def _rst_heading(lines: list[str], title: str) -> int | None:
    for i in range(len(lines) - 1):
        if lines[i].strip() == title and _UNDERLINE.match(lines[i + 1].strip()):
            return i
    return None


def _rst_block(lines: list[str], i: int, indent: int) -> tuple[Numbered, int]:
    """The dedented, numbered body of a directive starting at line ``i``."""
    body: Numbered = []
    while i < len(lines):
        line = lines[i]
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append((i + 1, line))
        i += 1
    while body and not body[-1][1].strip():
        body.pop()
    while body and not body[0][1].strip():
        body.pop(0)
    margin = min((len(s) - len(s.lstrip()) for _, s in body if s.strip()), default=0)
    return [(n, s[margin:]) for n, s in body], i


def _text_examples(lines: list[str]) -> list[tuple[str, Numbered]]:
    """(name, lines) for each bare name line followed by ``Node:``."""
    stripped = [line.strip() for line in lines]
    start = next((i for i, s in enumerate(stripped) if re.fullmatch(r"Examples#?", s)), -1)
    chunks: list[tuple[str, Numbered]] = []
    for i in range(start + 1, len(stripped)):
        s = stripped[i]
        if s.startswith("Differences with previous version"):
            break
        nxt = next((t for t in stripped[i + 1 :] if t), "")
        if _TEXT_NAME.match(s) and s not in _SECTIONS and nxt == "Node:":
            chunks.append((s, []))
        elif chunks:
            chunks[-1][1].append((i + 1, lines[i]))
    return chunks


# ------------------------------------------------------------------ examples


def _parse_example(name: str, body: Numbered, source: str, opset: int | None) -> Example:
    while body and not body[-1][1].strip():
        body = body[:-1]
    ex = Example(name, source, opset, "\n".join(s for _, s in body))
    ex.block_lines = [n for n, s in body if s.strip()]
    try:
        _fill(ex, [line.strip() for _, line in body])
    except _Unparsed as e:
        ex.problem = str(e)
    return ex


class _Unparsed(Exception):
    pass


def _fill(ex: Example, lines: list[str]) -> None:
    section = ""
    current: DocTensor | None = None
    values: list[str] = []

    def close() -> None:
        nonlocal current, values
        if current is not None:
            _set_values(current, values)
        current, values = None, []

    for line in lines:
        if not line:
            continue
        if line in _SECTIONS:
            close()
            section = line[:-1]
            continue
        if section == "Node":
            m = _NODE.match(line)
            if not m or ex.op_type:
                raise _Unparsed(f"cannot read the node line {line!r}")
            ex.op_type = m.group(1)
            ex.input_names = _names(m.group(2))
            ex.output_names = _names(m.group(3))
        elif section == "Attributes":
            m = _ATTRIBUTE.match(line)
            if not m:
                raise _Unparsed(f"cannot read the attribute line {line!r}")
            ex.attributes[m.group(1)] = _attribute_value(m.group(1), m.group(2))
        elif section in ("Inputs", "Outputs"):
            m = _HEADER.match(line)
            if m:
                close()
                current = DocTensor(m.group(1), _shape(m.group(2), line), m.group(3))
                (ex.inputs if section == "Inputs" else ex.outputs).append(current)
            elif current is None:
                raise _Unparsed(f"expected 'name: shape=(...), dtype=...', found {line!r}")
            else:
                values.append(line)
        else:
            raise _Unparsed(f"text before 'Node:': {line!r}")
    close()
    if not ex.op_type:
        raise _Unparsed("no 'Node:' line")
    for kind, names, tensors in (("input", ex.input_names, ex.inputs), ("output", ex.output_names, ex.outputs)):
        declared = [t.name for t in tensors]
        if declared != names:
            raise _Unparsed(f"the node's {kind}s {names} do not match the {kind}s shown {declared}")


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def _shape(text: str, line: str) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in text.split(",") if d.strip())
    except ValueError:
        raise _Unparsed(f"cannot read the shape in {line!r}") from None


def _attribute_value(name: str, text: str) -> object:
    """``0`` -> 0, ``[0, 2]`` -> [0, 2], ``CRD`` -> "CRD" (DepthToSpace's mode)."""
    s = text.strip()
    if re.fullmatch(r"[A-Za-z_]\w*", s):
        return s
    try:
        if s.startswith("[") and s.endswith("]"):
            return [int(v) for v in s[1:-1].split(",") if v.strip()]
        return int(s)
    except ValueError:
        raise _Unparsed(f"attribute {name} = {s} is not an integer, a list of integers or a name") from None


def _set_values(tensor: DocTensor, lines: list[str]) -> None:
    if not lines:
        tensor.problem = "no values are printed"
        return
    try:
        tensor.values = parse_printed(" ".join(lines))
    except ValuesError as e:
        tensor.problem = f"cannot read the values: {e}"
