"""What ``onnxop doc-examples`` shows: tables of examples and of results
(rows; cli/tables.py draws them), failure details, and the blocks for
``--show``. Returns text; only the CLI prints."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ..render import json
from ..render.node import printable, quote  # names from the pages, in a line of text
from .check import all_passed, counts
from .pages import DocTensor, Example, read_page, seed_pages
from ..errors import UsageError

if TYPE_CHECKING:
    from .check import Outcome

Rows = list[list[str]]
STATUS = {"passed": "passed", "failed": "FAILED", "skipped": "skipped"}


NO_EXAMPLES = (
    "no examples found (an example is a name line followed by 'Node:', or in rst "
    "a **name** line followed by code blocks, after the Examples heading)"
)


def load_examples(pages: Sequence[Path] | None, op: str | None = None) -> list[Example]:
    """Every example of the given page files, of the official examples of
    the operators ``op`` names (onnx's expect() cases: one name, a comma
    list, or ``all``), or of the shipped seed pages. A page without
    examples stands in as one unreadable example, so it is reported
    (skipped, with the reason) rather than silently passing."""
    if op is not None:
        return [ex for name in operators(op) for ex in op_examples(name)]
    loaded = [read_page(p) for p in pages] if pages else seed_pages()
    return _examples_of(loaded)


def _examples_of(loaded: list) -> list[Example]:
    examples = []
    for page in loaded:
        examples += page.examples or [Example("(no examples)", page.source, page.opset, "", problem=NO_EXAMPLES)]
    return examples


ALL = "all"


def operators(op: str) -> list[str]:
    """The operators ``--op`` names, as onnxop spells them: ``all`` (every
    operator onnxop runs), or names separated by commas, in any case, with
    or without ``-``/``_`` (``gather-nd``, ``Scatter_ND``)."""
    from ..ops import OPERATORS

    if op.strip().lower() == ALL:
        return list(OPERATORS)
    known = {name.lower(): name for name in OPERATORS}
    names = []
    for given in op.split(","):
        match = known.get(given.strip().lower().replace("-", "").replace("_", ""))
        if match is None:
            raise UsageError(f"--op {given.strip() or op}: not an operator onnxop runs ({', '.join(OPERATORS)}; or all)")
        if match not in names:
            names.append(match)
    return names


def op_examples(name: str) -> list[Example]:
    """The official examples of one operator: an operator with tensor inputs
    runs each case as it is (expect.py); a view operator's cases become
    pages in the docs' format, checked as any page is (nodetests.expect_pages)."""
    from ..ops import OPERATORS
    from ..ops.tensor_nodes import is_tensor_op

    from .expect import examples

    if is_tensor_op(OPERATORS[name][0]):
        return examples(name)
    # the pages hold the tensor cases; the others (Identity's sequence and
    # optional) are listed as examples that cannot run, with the reason
    return _examples_of(op_pages(name)) + [ex for ex in examples(name) if ex.problem]


def op_pages(op: str) -> list:
    from .pages import parse_page
    from .nodetests import expect_pages

    (match,) = operators(op)
    pages = []
    for source, text, exact in expect_pages(match):
        page = parse_page(text, source)
        for ex in page.examples:
            ex.exact, ex.expected = exact.get(ex.name, ({}, []))
        pages.append(page)
    return pages


def select_or_fail(examples: list[Example], pattern: str | None) -> list[Example]:
    from .check import select

    chosen = select(examples, pattern)
    if not chosen:
        raise UsageError(f"no example name matches {pattern!r} (e.g. {examples[0].name})")
    return chosen


# ------------------------------------------------------------------ listing


def listing(examples: Sequence[Example]) -> tuple[list[str], Rows]:
    """One row per example: page, name, op, opset, attributes, inputs, outputs."""
    from ..render.node import format_attribute

    rows = []
    for ex in examples:
        attrs = ", ".join(f"{k}={format_attribute(v)}" for k, v in ex.attributes.items())
        if ex.problem:
            inputs, outputs = f"(cannot be read: {ex.problem})", ""
        else:
            inputs = ", ".join(_tensor_summary(t) for t in ex.inputs)
            outputs = ", ".join(_tensor_summary(t) for t in ex.outputs)
        opset = "?" if ex.opset is None else str(ex.opset)
        rows.append([Path(ex.page).name, ex.name, ex.op_type or "?", opset, attrs, inputs, outputs])
    return ["page", "example", "op", "opset", "attributes", "inputs", "outputs"], rows


def _tensor_summary(t: DocTensor) -> str:
    """``a (2, 3, 4, 5) float32``; a short 1-D int64 input (Unsqueeze's axes)
    is shown by its values, ``axes=[0, 2]``."""
    v = t.values
    if t.dtype == "int64" and len(t.shape) == 1 and v and not v.summarised and len(v.tree) <= 8:
        return f"{t.name}=[{', '.join(v.tree)}]"
    return f"{t.name} {tuple(t.shape)} {t.dtype}"


# ------------------------------------------------------------------ results


def results(outcomes: Sequence[Outcome]) -> tuple[list[str], Rows]:
    """One row per checked example: page, name, result, output, note."""
    rows = []
    for o in outcomes:
        if o.status == "passed":
            note = o.note or (f"{o.shown} values on the page" if o.shown else "")
        else:
            note = o.reason
        rows.append([Path(o.example.page).name, o.example.name, STATUS[o.status], o.output, note])
    return ["page", "example", "result", "output", "note"], rows


def per_operator(outcomes: Sequence[Outcome]) -> list[str]:
    """``Concat: 12 passed, 0 failed``, one line per operator, in the order they ran."""
    from .check import summary_line

    by_op: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_op.setdefault(o.example.op_type or "?", []).append(o)
    return [f"{op}: {summary_line(list(rs))}" for op, rs in by_op.items()]


def failure_details(outcomes: Sequence[Outcome]) -> str:
    """Expected vs actual for every failure, for a person to read."""
    blocks = []
    for o in outcomes:
        if o.status != "failed":
            continue
        lines = [f"FAILED {quote(o.example.name)} ({quote(Path(o.example.page).name)}): {printable(o.reason)}"]
        lines += [f"  {printable(d)}" for d in o.details]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def show_title(ex: Example) -> str:
    """``# test_cc_flatten_axis0 (Flatten-25.txt)``; an official example
    also names the page's example it belongs to (``example gather_0``)."""
    section = f", example {quote(ex.section)}" if ex.section else ""
    return f"# {quote(ex.name)} ({quote(Path(ex.page).name)}{section})"


# ------------------------------------------------------------------ --json


def example_entry(ex: Any) -> dict[str, Any]:
    """One doc-examples example as listed: page, name, op, opset, tensors."""

    def tensors(ts: Sequence[Any]) -> list[dict[str, Any]]:
        return [{"name": t.name, "shape": list(t.shape), "dtype": t.dtype} for t in ts]

    return {
        "page": Path(ex.page).name,
        "name": ex.name,
        "op": ex.op_type or None,
        "opset": ex.opset,
        "attributes": dict(ex.attributes),
        "inputs": tensors(ex.inputs),
        "outputs": tensors(ex.outputs),
        "problem": ex.problem or None,
    } | ({"example_of": ex.section} if ex.section else {})


def doc_examples_document(examples: Sequence[Any], outcomes: Sequence[Any] | None, shown: dict[int, str]) -> dict[str, Any]:
    """doc-examples: the examples; with --check each one's result and the
    counts (status "failed", exit code 1, when the check fails)."""
    entries = [example_entry(ex) for ex in examples]
    for entry, ex in zip(entries, examples):
        if id(ex) in shown:
            entry["rendered"] = shown[id(ex)]
    doc = json.base("doc-examples")
    if outcomes is not None:
        by_example = {id(o.example): o for o in outcomes}
        for entry, ex in zip(entries, examples):
            o = by_example.get(id(ex))
            if o is not None:
                entry["result"] = o.status
                entry["output"] = o.output or None
                entry["reason"] = o.reason or None
                entry["details"] = list(o.details)
                entry["shown"] = o.shown or None
        c = counts(list(outcomes))
        doc["summary"] = {k: int(c.get(k, 0)) for k in ("passed", "failed", "skipped")}
        if not all_passed(list(outcomes)):
            doc["status"], doc["exit_code"] = "failed", 1
    doc["examples"] = entries
    return doc
