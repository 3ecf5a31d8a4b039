"""The official examples of the operators with tensor inputs (ops/tensor_op.py:
Concat, Split, Gather, Pad, Where, ...), checked on the GPU.

An ONNX operator page's examples are the ``expect()`` cases of
``onnx/backend/test/case/node/<op>.py``: each ``export*`` method is one
example of the page ("concat", "gather_0", "scatternd_add"), its code builds
the inputs and the expected outputs, and each ``expect()`` call in it is one
case (``test_gather_0``). Each case is one Example here, named as the case,
its ``section`` the page's example. ``check_case`` runs it as
``onnxop conformance`` runs a one-node model: the node built from the case's
model (``ops/tensor_nodes.py``), the inputs the example builds, through
``core/apply_tensors.py`` (the WGSL kernels), and every output held to the
expected one bit for bit (shape, type, NaN payloads, -0.0). An example
onnxop cannot run fails with the reason; one whose values are sequences or
optionals is skipped, with the reason (onnxop runs tensors).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .outcome import Fail, Outcome, Skip
from .pages import DocTensor, Example

if TYPE_CHECKING:
    from ..core.tensor import Tensor


def examples(op_type: str) -> list[Example]:
    """Every official example of ``op_type``, in onnx's order."""
    from .nodetests import is_tensor_case, node_testcases, sections

    by_case = sections(op_type)
    found = []
    for case in node_testcases([op_type]):
        model = case.model
        proto = model.graph.node[0]
        opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
        ex = Example(case.name, f"{op_type}-{opset} (onnx expect cases)", opset, "",
                     op_type=proto.op_type, input_names=list(proto.input), output_names=list(proto.output),
                     attributes=_attributes(proto), section=by_case.get(case.name, ("", ""))[0], case=case)
        if not is_tensor_case(case):
            kinds = sorted({v.type.WhichOneof("value") for v in (*model.graph.input, *model.graph.output)} - {"tensor_type"})
            ex.problem = f"{', '.join(kinds)} values; onnxop runs tensors"
        else:
            inputs, outputs = case.data_sets[0]
            ex.inputs = [_doc_tensor(v, a) for v, a in zip(model.graph.input, inputs)]
            ex.outputs = [_doc_tensor(v, a) for v, a in zip(model.graph.output, outputs)]
            ex.exact = {v.name: a for v, a in zip(model.graph.input, inputs)}
        found.append(ex)
    return found


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
    from onnx import numpy_helper

    from ..io.tensorproto import tensor_from_proto

    if hasattr(values, "SerializeToString"):  # a case that gives a TensorProto (Cast's float8, int4)
        proto = type(values)()
        proto.CopyFrom(values)
        proto.name = name
    else:
        proto = numpy_helper.from_array(values, name)
    return tensor_from_proto(proto, Path("."), label, name)


# ------------------------------------------------------------------ run


def run(ex: Example, backend: str | None):
    """(node, inputs, expected outputs, result): the case through core/apply_tensors.py.
    Raises Skip when it cannot be run, Fail (with onnxop's message) when
    onnxop refuses it; a GPU failure (no adapter) is raised as it is."""
    from ..core.apply_tensors import apply_node
    from ..errors import GpuError, OnnxopError, OutOfScope
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
        tensors = node_inputs(proto, lambda name: feeds.get(name))
        result = apply_node(node, tensors, backend=backend, names=list(proto.output))
    except GpuError:
        raise
    except OutOfScope as e:  # float arithmetic: the operator allows it, onnxop does not run it
        raise Skip(str(e)) from None
    except OnnxopError as e:
        raise Fail(str(e)) from None
    return node, tensors, expected, result


def check_case(ex: Example, backend: str | None) -> Outcome:
    """Run one official example and hold every output to the expected one."""
    from .conformance import Fail as Mismatch, compare

    try:
        _, _, expected, result = run(ex, backend)
    except Skip as e:
        return Outcome(ex, "skipped", str(e))
    except Fail as e:
        return Outcome(ex, "failed", str(e))
    outs = result.outputs
    out = Outcome(ex, "passed", output=", ".join(f"{t.name} {tuple(t.shape)} {t.dtype.name}" for t in outs))
    if len(outs) != len(expected):
        out.status, out.reason = "failed", f"{len(outs)} outputs, the example expects {len(expected)}"
        return out
    for actual, want in zip(outs, expected):
        try:
            compare(actual, want, want.name)
        except Mismatch as e:
            out.status = "failed"
            out.reason = f"output {want.name} differs from the example's expected output"
            out.details = [str(e), f"onnxop:   {want.name}: shape={tuple(actual.shape)}, dtype={actual.dtype.name}",
                           f"expected: {want.name}: shape={tuple(want.shape)}, dtype={want.dtype.name}"]
            return out
    elements = sum(t.size for t in outs)
    out.note = f"{elements} element{'s' * (elements != 1)} bit-exact" + (f" ({result.note})" if result.note else "")
    return out


def rendered(ex: Example, backend: str | None, *, full: bool = False) -> str:
    """The example as the ONNX pages print one (Node, Attributes, Inputs,
    Outputs), its outputs as onnxop computed them; raises Skip or Fail."""
    from ..render.node import Shown, render_node

    node, tensors, _, result = run(ex, backend)

    def shown(t) -> Shown:
        values = t.strings if t.dtype.is_string else t.to_numpy()
        return Shown(t.name, tuple(t.shape), t.dtype.name, values)

    return render_node(node, [shown(t) for t in tensors if t is not None], [shown(t) for t in result.outputs], full=full)
