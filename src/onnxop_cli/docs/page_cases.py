"""The reader of printed pages (pages.py): an example as a case for the one
checker (check.py). The node is the page's (at its opset; constant inputs
such as Unsqueeze's axes become the node's values); the expected output is
the reference result for the page's inputs (``reference``). An example that
cannot be run is skipped with the reason (another operator, an unknown
opset, an input printed with ``...``, a dtype whose values cannot be read);
one that contradicts the spec or itself fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .outcome import Case, Fail, Skip
from .pages import DocTensor, Example
from .values import ValuesError, to_array
from ..errors import UsageError

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


# ------------------------------------------------------------------ reference


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




def case_of(ex: Example) -> Case:
    """The example as the checker runs it; raises Skip or Fail."""
    from ..core.tensor import Tensor

    prep = prepare(ex)
    data = Tensor.from_numpy(prep.data, name=prep.data_name)
    case = Case(prep.node, [data], [], [prep.output_name], "the reference", [data], prep.names)
    if ex.expected:  # a page made from a node test: its expected output, as conformance holds it
        case.expected = [Tensor.from_numpy(a, name=prep.output_name) for a in ex.expected]
        case.against = "the example's expected output"
        return case
    try:
        case.expected = [Tensor.from_numpy(reference(ex, prep), name=prep.output_name)]
    except Exception as e:  # noqa: BLE001 - numpy or the evaluator refuses (axis out of range, ...)
        case.refused = f"{type(e).__name__}: {e}"
    return case
