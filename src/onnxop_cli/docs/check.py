"""Run a page's examples through the GPU kernels and hold them to the page.

For each example: build the node the page describes (at the page's opset),
run its input through ``core.apply`` (the WGSL kernels), and check

1. the GPU output against the reference result (numpy's reshape /
   expand_dims, or onnx's reference evaluator, see ``reference``) for the
   same inputs: shape, dtype and every byte;
2. the output shape and dtype against the page's ``shape=``/``dtype=``;
3. the output values against the page's values at every position the page
   prints (all of them, or the edges around ``...``);
4. onnxop's rendering of the node against the page's block, line by line
   and token by token (``tokens``: spacing ignored).

An example is *skipped*, with the reason, when it cannot be run: another
operator, an opset onnxop does not know, an input printed with ``...``, a
dtype whose values cannot be read, text that is not an example block. It
*fails* when the page and the kernels (or the spec) disagree, including a
page that contradicts itself (values that do not fit the declared shape).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .outcome import Fail, Outcome, Skip
from .pages import DocTensor, Example
from .values import ValuesError, count_printed, first_difference, to_array
from ..errors import OpError, UsageError

if TYPE_CHECKING:
    import numpy as np

    from ..ops import Node

READABLE_DTYPES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
)  # numpy's own types: the ones whose printed values read back exactly


@dataclass
class Prepared:
    """An example turned into what onnxop runs."""

    node: Node
    data: np.ndarray
    data_name: str
    output_name: str
    names: dict[str, str]  # the page's names of the constant inputs, by schema name
    feeds: dict[str, np.ndarray]  # every input the page gives, for the reference


# ------------------------------------------------------------------ select


def select(examples: list[Example], pattern: str | None) -> list[Example]:
    """Examples whose name matches ``pattern``: a glob (``test_cc_*``), or a
    substring when it has no glob characters. None selects all."""
    if not pattern:
        return list(examples)
    if any(c in pattern for c in "*?["):
        return [e for e in examples if fnmatch.fnmatchcase(e.name, pattern)]
    return [e for e in examples if pattern in e.name]


# ------------------------------------------------------------------ prepare


def prepare(ex: Example) -> Prepared:
    """The node and input arrays of an example; raises Skip or Fail."""
    from ..ops import OPERATORS, SPECS, make_node, op_version

    if ex.problem:
        raise Skip(ex.problem)
    if ex.op_type not in OPERATORS:
        raise Skip(f"{ex.op_type} is not an operator onnxop runs ({', '.join(OPERATORS)})")
    if ex.opset is None:
        raise Skip("the page does not state its opset ('Since version: N')")
    try:
        op = op_version(ex.op_type, ex.opset)
    except UsageError as e:
        raise Skip(str(e)) from None
    label = f"{ex.op_type}-{op.since_version}"
    if len(ex.outputs) != 1:
        raise Fail(f"{label} has 1 output, the example shows {len(ex.outputs)}")
    arrays = {t.name: ex.exact[t.name] if t.name in ex.exact else _input_array(t) for t in ex.inputs}

    low = len([i for i in op.inputs if i not in op.optional])
    if not low <= len(ex.inputs) <= len(op.inputs):
        takes = str(low) if low == len(op.inputs) else f"{low} to {len(op.inputs)}"
        raise Fail(f"{label} takes {takes} input(s), the example shows {len(ex.inputs)}")
    unknown = sorted(set(ex.attributes) - set(op.attribute_names))
    if unknown:
        raise Fail(f"{label} has no attribute {', '.join(unknown)} (its attributes: {list(op.attribute_names) or 'none'})")

    kinds = {p.name: p.kind for p in SPECS[ex.op_type].params}
    values: dict[str, object] = {}
    for name, value in ex.attributes.items():
        if kinds.get(name) == "int" and isinstance(value, list):
            raise Fail(f"{label}: {name} must be one integer, the example gives {value}")
        if kinds.get(name) == "ints" and not isinstance(value, list):
            raise Fail(f"{label} takes {name} as a list attribute, the example gives {value!r}")
        values[name] = value
    names = {}
    for schema_name, t in zip(op.inputs[1:], ex.inputs[1:]):
        given = arrays[t.name]
        if str(given.dtype) != "int64" or given.ndim > 1:
            raise Fail(f"{label}: {schema_name} must be a 1-D int64 tensor, the example gives {given.shape} {given.dtype}")
        values[schema_name], names[schema_name] = [int(v) for v in given.reshape(-1)], t.name
    try:
        node = make_node(ex.op_type, ex.opset, **values)
    except UsageError as e:  # OpError included
        raise Fail(str(e)) from None
    data_t = ex.inputs[0]
    return Prepared(node, arrays[data_t.name], data_t.name, ex.outputs[0].name, names, arrays)


def _input_array(t: DocTensor) -> np.ndarray:
    import numpy as np

    if t.problem:
        raise Skip(f"input {t.name}: {t.problem}")
    if t.dtype not in READABLE_DTYPES:
        raise Skip(f"input {t.name}: values of dtype {t.dtype} cannot be read from a page")
    assert t.values is not None
    if t.values.summarised:
        raise Skip(f"input {t.name} is summarised with '...', so it cannot be run")
    try:
        return to_array(t.values, t.shape, np.dtype(t.dtype))
    except ValuesError as e:
        raise Fail(f"input {t.name}: {e}") from None


# ------------------------------------------------------------------ run


def run_on_gpu(prep: Prepared, backend: str | None) -> np.ndarray:
    """The example's output as the WGSL kernel produces it."""
    from ..core import apply as core
    from ..core.tensor import Tensor

    tensor = Tensor.from_numpy(prep.data, name=prep.data_name)
    result = core.apply(prep.node, tensor, backend=backend, out_name=prep.output_name)
    return result.output.to_numpy()


def render(prep: Prepared, actual: np.ndarray, *, full: bool = False) -> str:
    from ..render.node import Shown, render_node
    from ..core.tensor import dtype_of_numpy

    def shown(name: str, a: np.ndarray) -> Shown:
        return Shown(name, tuple(a.shape), dtype_of_numpy(a.dtype).name, a)

    return render_node(
        prep.node, [shown(prep.data_name, prep.data)], [shown(prep.output_name, actual)],
        full=full, names=prep.names,
    )


def reference(ex: Example, prep: Prepared) -> np.ndarray:
    """The ONNX reference result, computed with numpy from what the page
    writes (its attributes and inputs), independently of ``onnxop.ops``.

    Flatten is ``reshape(prod(shape[:axis]), prod(shape[axis:]))`` and
    Unsqueeze is ``np.expand_dims(x, axes)`` -- the ONNX spec's definitions,
    not ``onnx.reference.ReferenceEvaluator``: in onnx 1.23 its Unsqueeze-1/11
    inserts unsorted axes one by one (wrong shape for axes=[2, 0]) and its
    Flatten cannot reshape an empty tensor (the tests cross-check this
    reference with onnxruntime). The other operators use the evaluator.
    """
    import math

    import numpy as np

    x = prep.feeds[ex.input_names[0]]
    if ex.op_type not in ("Flatten", "Unsqueeze"):
        return _evaluator(ex, prep)
    if ex.op_type == "Flatten":
        axis = int(ex.attributes.get("axis", 1))
        axis = axis + x.ndim if axis < 0 else axis
        return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))
    axes = prep.feeds[ex.input_names[1]] if len(ex.input_names) > 1 else ex.attributes["axes"]
    return np.expand_dims(x, tuple(int(a) for a in np.asarray(axes).reshape(-1)))


def _evaluator(ex: Example, prep: Prepared) -> np.ndarray:
    """ONNX's reference evaluator on a one-node model of the example."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    names = [t.name for t in ex.inputs]
    inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(prep.feeds[n].dtype), None)
              for n in names]
    node = helper.make_node(ex.op_type, names, [prep.output_name], **ex.attributes)
    graph = helper.make_graph([node], ex.name, inputs, [helper.make_tensor_value_info(prep.output_name, 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ex.opset)])
    return ReferenceEvaluator(model).run(None, {n: prep.feeds[n] for n in names})[0]


def rendered(ex: Example, backend: str | None, *, full: bool = False) -> str:
    """onnxop's block for an example, its output computed on the GPU;
    raises Skip or Fail when the example cannot be run."""
    if ex.case is not None:
        from .expect import rendered as rendered_case

        return rendered_case(ex, backend, full=full)
    prep = prepare(ex)
    try:
        actual = run_on_gpu(prep, backend)
    except OpError as e:
        raise Fail(str(e)) from None
    return render(prep, actual, full=full)


# ------------------------------------------------------------------ check


def check_example(ex: Example, backend: str | None) -> Outcome:
    """Run one example and compare it with the reference and the page (an
    official example of an operator with tensor inputs: with its expected
    outputs, expect.py)."""
    if ex.case is not None:
        from .expect import check_case

        return check_case(ex, backend)
    try:
        prep = prepare(ex)
    except Skip as e:
        return Outcome(ex, "skipped", str(e))
    except Fail as e:
        return Outcome(ex, "failed", str(e))
    try:
        actual = run_on_gpu(prep, backend)
    except OpError as e:
        return Outcome(ex, "failed", str(e))

    documented = ex.outputs[0]
    out = Outcome(ex, "passed", output=f"{prep.output_name} {tuple(actual.shape)} {actual.dtype}")
    problems: list[tuple[str, list[str]]] = []

    try:
        ref = reference(ex, prep)
    except Exception as e:  # noqa: BLE001 - numpy or the evaluator refuses (axis out of range, ...)
        problems.append(("the reference refuses the example", [f"{type(e).__name__}: {e}"]))
    else:
        diff = _byte_difference(ref, actual, prep.output_name)
        if diff:
            problems.append(("GPU output differs from the reference", diff))

    if tuple(actual.shape) != documented.shape:
        problems.append(("output shape differs from the page", [
            f"page:   {documented.name}: shape={documented.shape}",
            f"onnxop: {prep.output_name}: shape={tuple(actual.shape)}",
        ]))
    if str(actual.dtype) != documented.dtype:
        problems.append(("output dtype differs from the page", [
            f"page:   dtype={documented.dtype}", f"onnxop: dtype={actual.dtype}",
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
                    f"page:   {at} = {token}", f"onnxop: {at} = {_scalar(value)}",
                ]))

    out.rendered = render(prep, actual)
    line = _first_line_difference(ex, out.rendered)
    if line:
        problems.append(("rendered block differs from the page", line))

    if problems:
        out.status = "failed"
        out.reason = "; ".join(p for p, _ in problems)
        out.details = [d for _, details in problems for d in details]
    return out


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


def _scalar(value) -> str:
    from ..render.values import format_values

    return format_values(value)


def _byte_difference(ref: np.ndarray, actual: np.ndarray, name: str) -> list[str]:
    """Empty when ``actual`` is ``ref`` byte for byte; else the first difference."""
    import numpy as np

    if ref.shape != actual.shape or ref.dtype != actual.dtype:
        return [f"reference: shape={ref.shape}, dtype={ref.dtype}",
                f"onnxop:    shape={actual.shape}, dtype={actual.dtype}"]
    item = ref.dtype.itemsize
    a = np.ascontiguousarray(ref).reshape(-1).view(np.uint8).reshape(ref.size, item)
    b = np.ascontiguousarray(actual).reshape(-1).view(np.uint8).reshape(actual.size, item)
    rows = np.nonzero((a != b).any(axis=1))[0]
    if rows.size == 0:
        return []
    where = np.unravel_index(int(rows[0]), ref.shape)
    at = f"{name}[{', '.join(str(int(i)) for i in where)}]"
    return [f"reference: {at} = {_scalar(ref[where])} (bytes {a[rows[0]].tobytes().hex()})",
            f"onnxop:    {at} = {_scalar(actual[where])} (bytes {b[rows[0]].tobytes().hex()})",
            f"{rows.size} of {ref.size} elements differ"]


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
