"""The reader of onnx's node tests: the official examples of an operator
(the ``expect()`` cases of ``onnx/backend/test/case/node/<op>.py``) as cases
the one checker runs (check.py).

An ONNX operator page's examples are those cases: each ``export*`` method
is one example of the page ("concat", "gather_0", "scatternd_add"), its
code builds the inputs and the expected outputs, and each ``expect()`` call
in it is one case (``test_gather_0``). Each case is one Example here, named
as the case, its ``section`` the page's example. Its node is built from the
case's model (``ops/tensor_nodes.py``), its inputs and expected outputs
read as ``onnxop conformance`` reads their .pb files. An example onnxop
cannot build fails with the reason; one whose values are sequences or
optionals is skipped, with the reason (onnxop runs tensors).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .outcome import Case, Fail, Skip
from .pages import DocTensor, Example

if TYPE_CHECKING:
    from ..core.tensor import Tensor


def examples(op_type: str) -> list[Example]:
    """Every official example of ``op_type``, in onnx's order."""
    from .nodetests import node_testcases, sections

    by_case = sections(op_type)
    return [example_of(case, by_case.get(case.name, ("", ""))[0]) for case in node_testcases([op_type])]


def example_of(case, section: str = "") -> Example:
    """One node-test case (onnx's TestCase: name, one-node model, data sets) as an example."""
    from .nodetests import is_tensor_case

    model = case.model
    proto = model.graph.node[0]
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    ex = Example(case.name, f"{proto.op_type}-{opset} (onnx expect cases)", opset, "",
                 op_type=proto.op_type, input_names=list(proto.input), output_names=list(proto.output),
                 attributes=_attributes(proto), section=section, case=case)
    if not is_tensor_case(case):
        kinds = sorted({v.type.WhichOneof("value") for v in (*model.graph.input, *model.graph.output)} - {"tensor_type"})
        ex.problem = f"{', '.join(kinds)} values; onnxop runs tensors"
    else:
        inputs, outputs = case.data_sets[0]
        ex.inputs = [_doc_tensor(v, a) for v, a in zip(model.graph.input, inputs)]
        ex.outputs = [_doc_tensor(v, a) for v, a in zip(model.graph.output, outputs)]
        ex.exact = {v.name: a for v, a in zip(model.graph.input, inputs)}
    return ex


def _attributes(proto) -> dict[str, object]:
    """The node's attributes as a listing shows them (tensors as lists)."""
    from onnx import helper, numpy_helper

    out: dict[str, object] = {}
    for a in proto.attribute:
        value = helper.get_attribute_value(a)
        if isinstance(value, bytes):
            value = value.decode(errors="replace")
        elif hasattr(value, "dims"):
            value = numpy_helper.to_array(value).tolist()
        out[a.name] = value
    return out


def _doc_tensor(info, values) -> DocTensor:
    from ..core.tensor import dtype_by_onnx

    shape = values.dims if hasattr(values, "dims") else values.shape  # a TensorProto (Cast's float8 cases)
    return DocTensor(info.name, tuple(int(d) for d in shape), dtype_by_onnx(info.type.tensor_type.elem_type).name)


def _tensor(name: str, values, label: str) -> Tensor:
    """An array the example builds, read as conformance reads its .pb files."""
    from ..io.tensorproto import tensor_from_proto
    from .nodetests import proto_of

    return tensor_from_proto(proto_of(values, name), Path("."), label, name)


# ------------------------------------------------------------------ case


def case_of(ex: Example) -> Case:
    """The official example as the checker runs it; raises Skip or Fail
    (with onnxop's message) when onnxop cannot build its node."""
    from ..errors import OnnxopError, OutOfScope
    from ..ops.tensor_nodes import build_tensor_node, node_inputs

    if ex.problem:
        raise Skip(ex.problem)
    case = ex.case
    proto = case.model.graph.node[0]
    inputs, outputs = case.data_sets[0]
    try:
        node = build_tensor_node(proto, ex.opset)
        feeds = {v.name: _tensor(v.name, a, f"{ex.name} input {v.name}") for v, a in zip(case.model.graph.input, inputs)}
        expected = [_tensor(v.name, a, f"{ex.name} output {v.name}") for v, a in zip(case.model.graph.output, outputs)]
    except OutOfScope as e:  # float arithmetic: the operator allows it, onnxop does not run it
        raise Skip(str(e)) from None
    except OnnxopError as e:
        raise Fail(str(e)) from None
    tensors = node_inputs(proto, lambda name: feeds.get(name))
    return Case(node, tensors, expected, list(proto.output), "the example's expected output",
                [t for t in tensors if t is not None])
