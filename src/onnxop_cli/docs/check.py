"""The one checker of ``onnxop doc-examples``: every example, whichever
reader made it a case -- a printed page's (page_cases.py: the expected
output is the reference result) or onnx's node tests' (expect.py: the
expected outputs are the case's) -- runs through the one apply path
(``core/apply_tensors.py``, through ``_apply``) and is checked the same way:

1. every output against the expected one bit for bit (``conformance.held_to``:
   shape, dtype, NaN payloads, -0.0); nothing expected never passes;
2. where the example is a printed page's: the output shape and dtype against
   the page's ``shape=``/``dtype=``, the values at every position the page
   prints (all of them, or the edges around ``...``), and onnxop's rendering
   of the node against the page's block, line by line and token by token
   (``tokens``: spacing ignored).

Skipped when it cannot be run (the reason said); failed, every disagreement named.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from .outcome import Case, Fail, Outcome, Skip
from .pages import Example
from .values import ValuesError, count_printed, first_difference


# ------------------------------------------------------------------ select


def select(examples: list[Example], pattern: str | None) -> list[Example]:
    """Examples whose name matches ``pattern``: a glob (``test_cc_*``), or a
    substring when it has no glob characters. None selects all."""
    if not pattern:
        return list(examples)
    if any(c in pattern for c in "*?["):
        return [e for e in examples if fnmatch.fnmatchcase(e.name, pattern)]
    return [e for e in examples if pattern in e.name]


# ------------------------------------------------------------------ run


def case_of(ex: Example) -> Case:
    """The example as a case, from its reader; raises Skip or Fail."""
    from . import expect, page_cases

    return (page_cases if ex.case is None else expect).case_of(ex)


def _apply(case: Case, backend: str | None):
    """(outputs, note): the case through the one apply path. Raises Skip
    (out of scope) or Fail (onnxop's refusal); a GPU failure (no adapter)
    or an interrupt is raised as it is: it is not the example's."""
    from ..core.apply_tensors import apply_node
    from ..errors import GpuError, Interrupted, OnnxopError, OutOfScope

    try:
        result = apply_node(case.node, case.inputs, backend=backend, names=case.names)
    except (GpuError, Interrupted):
        raise
    except OutOfScope as e:  # float arithmetic: the operator allows it, onnxop does not run it
        raise Skip(str(e)) from None
    except OnnxopError as e:
        raise Fail(str(e)) from None
    return result.outputs, result.note


def render(case: Case, outputs, *, full: bool = False) -> str:
    """The example as the ONNX pages print one (Node, Attributes, Inputs, Outputs)."""
    from ..render.node import Shown, render_node

    def shown(t) -> Shown:
        return Shown(t.name, tuple(t.shape), t.dtype.name, t.strings if t.dtype.is_string else t.to_numpy())

    return render_node(case.node, [shown(t) for t in case.shown], [shown(t) for t in outputs],
                       full=full, names=case.constants)


def rendered(ex: Example, backend: str | None, *, full: bool = False) -> str:
    """onnxop's block for an example, its outputs computed on the GPU;
    raises Skip or Fail when the example cannot be run."""
    case = case_of(ex)
    return render(case, _apply(case, backend)[0], full=full)


# ------------------------------------------------------------------ check


def check_example(ex: Example, backend: str | None) -> Outcome:
    """Run one example and hold it to its expected outputs (and its page)."""
    try:
        case = case_of(ex)
        outputs, note = _apply(case, backend)
    except Skip as e:
        return Outcome(ex, "skipped", str(e))
    except Fail as e:
        return Outcome(ex, "failed", str(e))
    out = Outcome(ex, "passed", output=", ".join(f"{t.name} {tuple(t.shape)} {t.dtype.name}" for t in outputs))
    problems = _held(case, outputs)
    if ex.case is None:
        problems += _page_problems(ex, case, outputs[0], out)
    elif not problems:
        elements = sum(t.size for t in outputs)
        out.note = f"{elements} element{'s' * (elements != 1)} bit-exact" + (f" ({note})" if note else "")
    if problems:
        out.status = "failed"
        out.reason = "; ".join(p for p, _ in problems)
        out.details = [d for _, details in problems for d in details]
    return out


def _held(case: Case, outputs) -> list[tuple[str, list[str]]]:
    """Every output against the expected one, bit for bit; a problem where one differs or none is expected."""
    from .conformance import held_to

    if case.refused:
        return [("the reference refuses the example", [case.refused])]
    try:
        held_to(outputs, case.expected, case.names)
    except Fail as e:
        if e.output is None:
            return [(str(e), [])]
        k = case.names.index(e.output)
        actual, want = outputs[k], case.expected[k]
        return [(f"output {e.output} differs from {case.against}", [
            str(e), f"onnxop:   {e.output}: shape={tuple(actual.shape)}, dtype={actual.dtype.name}",
            f"expected: {e.output}: shape={tuple(want.shape)}, dtype={want.dtype.name}"])]
    return []


def _page_problems(ex: Example, case: Case, output, out: Outcome) -> list[tuple[str, list[str]]]:
    """The page's printed output (shape, dtype, values) and block against onnxop's."""
    from ..render.values import format_values

    actual = output.to_numpy()
    documented, name = ex.outputs[0], output.name
    problems: list[tuple[str, list[str]]] = []
    if tuple(actual.shape) != documented.shape:
        problems.append(("output shape differs from the page", [
            f"page:   {documented.name}: shape={documented.shape}",
            f"onnxop: {name}: shape={tuple(actual.shape)}",
        ]))
    if output.dtype.name != documented.dtype:
        problems.append(("output dtype differs from the page", [
            f"page:   dtype={documented.dtype}", f"onnxop: dtype={output.dtype.name}",
        ]))
    if documented.problem or documented.values is None:
        problems.append((f"output {documented.name}: {documented.problem or 'no values'}", []))
    elif tuple(actual.shape) == documented.shape:
        try:
            first = first_difference(documented.values, actual)
            out.shown = f"{count_printed(documented.values, documented.shape)}/{actual.size}"
        except ValuesError as e:
            problems.append((f"output values on the page do not fit: {e}", []))
        else:
            if first is not None:
                where, token, value = first
                at = f"{documented.name}[{', '.join(map(str, where))}]"
                problems.append(("output values differ from the page", [
                    f"page:   {at} = {token}", f"onnxop: {at} = {format_values(value)}",
                ]))
    out.rendered = render(case, [output])
    line = _first_line_difference(ex, out.rendered)
    if line:
        problems.append(("rendered block differs from the page", line))
    return problems


def check_all(examples: list[Example], backend: str | None, *, contain: bool = True) -> list[Outcome]:
    """Check every example. With ``contain``, an unexpected exception in one
    example is reported as its failure and the others still run; onnxop's own
    errors (no adapter, GPU failure) stop the run: they are not the page's."""
    from ..errors import OnnxopError

    outcomes = []
    for ex in examples:
        try:
            outcomes.append(check_example(ex, backend))
        except OnnxopError:
            raise
        except Exception as e:  # noqa: BLE001 - reported, not swallowed
            if not contain:
                raise
            outcomes.append(Outcome(ex, "failed", f"internal error: {type(e).__name__}: {e} (--debug shows the traceback)"))
    return outcomes


def _first_line_difference(ex: Example, ours: str) -> list[str]:
    """The first line where onnxop's block and the page's differ in tokens
    (``tokens``: spacing is ignored, so ``[1.5, -0., nan]`` equals numpy's
    padded ``[ 1.5, -0. , nan]``), with its line in the page."""
    from ..render.node import normalise

    a, b = normalise(ex.block).split("\n"), normalise(ours).split("\n")
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else "(end of block)"
        y = b[i] if i < len(b) else "(end of block)"
        if tokens(x) != tokens(y):
            where = f"{Path(ex.page).name} line {ex.block_lines[i]}" if i < len(ex.block_lines) else "after the block"
            return [f"first different line ({where}, spacing ignored):", f"page:   {x}", f"onnxop: {y}"]
    return []


_TOKEN = re.compile(r"[\[\](){},:=]|[^\s\[\](){},:=]+")


def tokens(line: str) -> list[str]:
    """A printed line as tokens: brackets, commas, colons and ``=`` each one,
    and every run of other non-space characters (a value, a name) one."""
    return _TOKEN.findall(line)


# ------------------------------------------------------------------ summary


def counts(outcomes: list[Outcome]) -> dict[str, int]:
    return {s: sum(o.status == s for o in outcomes) for s in ("passed", "failed", "skipped")}


def summary_line(outcomes: list[Outcome]) -> str:
    """``17 passed, 0 failed``, with ``, K skipped`` only when K > 0."""
    c = counts(outcomes)
    line = f"{c['passed']} passed, {c['failed']} failed"
    return line + (f", {c['skipped']} skipped" if c["skipped"] else "")


def all_passed(outcomes: list[Outcome]) -> bool:
    """Success means something was checked and nothing failed (skips are
    reported, not failures; a run that checked nothing is not a success)."""
    c = counts(outcomes)
    return c["failed"] == 0 and c["passed"] > 0
