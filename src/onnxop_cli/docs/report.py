"""What ``onnxop doc-examples`` shows: tables of examples and of results
(rows; cli/tables.py draws them), failure details, and the blocks for
``--show``. Returns text; only the CLI prints."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ..render import json
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
    ``op`` (onnx's expect() cases), or of the shipped seed pages. A page
    without examples stands in as one unreadable example, so it is reported
    (skipped, with the reason) rather than silently passing."""
    if op is not None:
        loaded = op_pages(op)
    else:
        loaded = [read_page(p) for p in pages] if pages else seed_pages()
    examples = []
    for page in loaded:
        examples += page.examples or [Example("(no examples)", page.source, page.opset, "", problem=NO_EXAMPLES)]
    return examples


def op_pages(op: str) -> list:
    from .pages import parse_page
    from .nodetests import expect_pages
    from ..ops import OPERATORS

    match = {name.lower(): name for name in OPERATORS}.get(op.lower().replace("-", "").replace("_", ""))
    if match is None:
        raise UsageError(f"--op {op}: not an operator onnxop runs ({', '.join(OPERATORS)})")
    pages = []
    for source, text, exact in expect_pages(match):
        page = parse_page(text, source)
        for ex in page.examples:
            ex.exact = exact.get(ex.name, {})
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
            note = f"{o.shown} values on the page" if o.shown else ""
        else:
            note = o.reason
        rows.append([Path(o.example.page).name, o.example.name, STATUS[o.status], o.output, note])
    return ["page", "example", "result", "output", "note"], rows


def failure_details(outcomes: Sequence[Outcome]) -> str:
    """Expected vs actual for every failure, for a person to read."""
    blocks = []
    for o in outcomes:
        if o.status != "failed":
            continue
        lines = [f"FAILED {o.example.name} ({Path(o.example.page).name}): {o.reason}"]
        lines += [f"  {d}" for d in o.details]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def show_title(ex: Example) -> str:
    return f"# {ex.name} ({Path(ex.page).name})"


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
    }


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
