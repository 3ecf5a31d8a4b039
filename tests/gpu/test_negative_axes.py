"""Negative axes at every opset of every operator that takes an axis: onnxop
against onnx.reference, byte for byte, and what onnxruntime does.

Real exports use negative axes at old opsets (PyTorch's GLU is Split-2 with
axis -1; OneHot-9's own default is -1), and onnx.reference and onnxruntime
run them. So onnxop counts a negative axis from the back at every opset,
except where the version's text forbids it AND onnxruntime refuses it:
Flatten-1 and -9 (axis in [0, R]), Transpose's perm (a permutation of
0..r-1) and ReverseSequence's batch_axis and time_axis (0 or 1; the two
runtimes disagree on negative ones). ``ORT_REFUSES`` says which models
onnxruntime refuses (an old opset it has no kernel for, or the refusals
above); it is held to what the installed onnxruntime does.

Each case is a one-node model built with onnx.helper at the opset of each
version the operator has (ops.OPERATORS), run through ``onnxop_cli.backend``
(the graph route of ``onnxop run``).
"""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from onnxop_cli import backend as onnxop_backend
from onnxop_cli.errors import OnnxopError
from onnxop_cli.ops import OPERATORS

# The sweep is of the opset rules, not of a kernel: one backend (conftest).
ONE_BACKEND = True

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
X6 = np.arange(48, dtype=np.float32).reshape(2, 4, 6)
I64 = np.int64


def _model(op: str, opset: int, inputs, params, attrs, outputs) -> onnx.ModelProto:
    """One node: ``inputs`` graph inputs, ``params`` initializers (constant inputs); ``outputs`` the
    arrays whose types and shapes the outputs declare (or their count, untyped)."""
    if isinstance(outputs, int):
        declared = [onnx.ValueInfoProto(name=f"y{k}") for k in range(outputs)]
    else:
        declared = [helper.make_tensor_value_info(f"y{k}", helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                    for k, a in enumerate(outputs)]
    node = helper.make_node(op, [n for n, _ in inputs] + [n for n, _ in params],
                            [f"y{k}" for k in range(len(declared))], **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for n, v in inputs],
        declared,
        [numpy_helper.from_array(v, n) for n, v in params])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=7 if opset < 21 else 10)


def _axes(opset: int, since: int, values) -> tuple[list, dict]:
    """``axes`` as an attribute before ``since``, as an int64 input from it."""
    return ([("axes", np.array(values, I64))], {}) if opset >= since else ([], {"axes": list(values)})


def case(op: str, opset: int, axis):
    """(inputs, params, attrs, outputs) of the node ``op`` at ``opset`` with ``axis``; None where the
    version has no axis."""
    if op == "Concat":
        return [("a", X), ("b", X + 100)], [], {"axis": axis}, 1
    if op == "Split":
        return [("a", X6)], [], {"axis": axis, **({"num_outputs": 2} if opset >= 18 else {})}, 2
    if op == "Squeeze":
        params, attrs = _axes(opset, 13, [axis])
        return [("a", np.zeros((2, 1, 3, 1), np.float32))], params, attrs, 1
    if op == "Unsqueeze":
        params, attrs = _axes(opset, 13, axis)
        return [("a", X)], params, attrs, 1
    if op == "Flatten":
        return [("a", X)], [], {"axis": axis}, 1
    if op == "Slice":
        if opset < 10:
            return [("a", X)], [], {"starts": [1], "ends": [3], "axes": [axis]}, 1
        return [("a", X)], [("s", np.array([1], I64)), ("e", np.array([3], I64)), ("ax", np.array([axis], I64))], {}, 1
    if op == "Tile":
        return ([("a", X)], [("t", np.array(2, I64)), ("ax", np.array(axis, I64))], {}, 1) if opset < 6 else None
    if op == "OneHot":
        params = [("d", np.array(4, I64)), ("v", np.array([0, 1], np.float32))]
        return [("i", np.array([[0, 2], [1, -1]], I64))], params, {} if axis is None else {"axis": axis}, 1
    if op == "Compress":
        return [("a", X)], [("c", np.array([True, False, True]))], {"axis": axis}, 1
    if op == "Transpose":
        return [("a", X)], [], {"perm": axis}, 1
    if op == "Gather":
        return [("a", X)], [("i", np.array([1, 0], I64))], {"axis": axis}, 1
    if op == "GatherElements":
        return [("a", X)], [("i", np.zeros((2, 3, 4), I64))], {"axis": axis}, 1
    if op in ("Scatter", "ScatterElements"):
        return [("a", X)], [("i", np.zeros((2, 3, 1), I64)), ("u", np.ones((2, 3, 1), np.float32))], {"axis": axis}, 1
    if op == "ReverseSequence":
        data = np.arange(12, dtype=np.float32).reshape(3, 4)
        lens = np.array([1, 2, 3] if axis[0] in (0, -2) else [1, 2, 3, 4], I64)
        return [("a", data)], [("l", lens)], {"batch_axis": axis[0], "time_axis": axis[1]}, 1
    if op == "Pad":
        if opset < 18:
            return None
        return [("a", X)], [("p", np.array([1, 1], I64)), ("c", np.array(0, np.float32)),
                            ("ax", np.array([axis], I64))], {}, 1
    if op == "CenterCropPad":
        return [("a", X)], [("s", np.array([2], I64))], {"axes": [axis]}, 1
    if op == "Shape":
        return ([("a", X)], [], {"start": axis, "end": -1}, 1) if opset >= 15 else None
    if op == "Resize":  # axes from opset 18; the empty roi is an initializer, as PyTorch exports it
        if opset < 18:
            return None
        return [("a", X)], [("r", np.zeros(0, np.float32)), ("s", np.array([2.0], np.float32))], {"axes": [axis]}, 1
    if op == "TensorScatter":
        return [("a", np.zeros((2, 3, 4), np.float32)), ("u", np.ones((2, 1, 4), np.float32))], [], {"axis": axis}, 1
    raise AssertionError(op)


# operator -> the negative axes (or perms, or axis pairs) tried at each of its versions
AXES = {
    "Concat": [-1, -3], "Split": [-1, -2], "Squeeze": [-1, -3], "Unsqueeze": [[-1], [-4], [0, -1], [-1, -2]],
    "Flatten": [-1, -3], "Slice": [-1, -2], "Tile": [-1, -3], "OneHot": [None, -1, -3], "Compress": [-2],
    "Transpose": [[-1, 0, 1]], "Gather": [-1], "GatherElements": [-1], "Scatter": [-1], "ScatterElements": [-1],
    "ReverseSequence": [(-1, -2), (0, -1)], "Pad": [-1], "CenterCropPad": [-1], "Shape": [-2], "TensorScatter": [-2],
    "Resize": [-1, -3],
}
# (operator, version) that keeps refusing negative axes: the text forbids them and onnxruntime refuses
REFUSED = {("Flatten", 1), ("Flatten", 9), *(("Transpose", v.since_version) for v in OPERATORS["Transpose"]),
           *(("ReverseSequence", v.since_version) for v in OPERATORS["ReverseSequence"])}
# (operator, version) where onnxruntime refuses a negative axis tried: no kernel for the opset (Concat-1,
# Split-1, Tile-1), shape inference's refusal (Flatten-1 and -9, Transpose's perm at every opset), or a
# batch_axis of -1 read as 0 (ReverseSequence: "sequence_lens shape must be {batch_size}", the first axis's)
ORT_REFUSES = {("Concat", 1), ("Split", 1), ("Tile", 1), ("Flatten", 1), ("Flatten", 9),
               *((op, v.since_version) for op in ("Transpose", "ReverseSequence") for v in OPERATORS[op])}
# onnx.reference has no implementation of these: the operator whose rule is the same, at that opset
REFERENCE_AS = {("Split", 1): ("Split", 2), ("Scatter", 9): ("ScatterElements", 11),
                ("Scatter", 11): ("ScatterElements", 11)}

# Scatter-11 is onnx.checker's "deprecated" (onnxop, onnxruntime and onnx.reference refuse it at any axis)
CASES = [(op, v.since_version, axis) for op, axes in AXES.items() for v in OPERATORS[op] for axis in axes
         if case(op, v.since_version, axis) is not None and (op, v.since_version) != ("Scatter", 11)]


def _feeds(inputs) -> dict[str, np.ndarray]:
    return {n: v for n, v in inputs}


def reference(op: str, opset: int, axis) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    if (op, opset) == ("Tile", 1):  # onnx.reference has Tile-6 only: numpy's tile along the axis
        return [np.tile(X, [2 if k == axis % 3 else 1 for k in range(3)])]
    ref_op, ref_opset = REFERENCE_AS.get((op, opset), (op, opset))
    if op == "Resize":  # onnx.reference's Resize does not count a negative axis from the back (its transpose refuses it)
        axis = axis % X.ndim
    inputs, params, attrs, n = case(op, opset, axis)
    m = _model(ref_op, ref_opset, inputs, params, attrs, n)
    return [np.asarray(a) for a in ReferenceEvaluator(m).run(None, _feeds(inputs))]


def model(op: str, opset: int, axis) -> tuple[onnx.ModelProto, dict[str, np.ndarray], list[np.ndarray]]:
    """The case's model, its feeds and onnx.reference's outputs (whose types and shapes it declares)."""
    inputs, params, attrs, _ = case(op, opset, axis)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = reference(op, opset, axis)
    return _model(op, opset, inputs, params, attrs, want), _feeds(inputs), want


def ort_refuses(m: onnx.ModelProto, feeds) -> bool:
    import onnxruntime as ort

    ort.set_default_logger_severity(3)
    try:
        ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    except Exception:  # noqa: BLE001 - any refusal
        return True
    return False


def _id(c) -> str:
    op, opset, axis = c
    return f"{op}-{opset}-axis{axis}".replace(" ", "")


@pytest.mark.parametrize("op, opset, axis", CASES, ids=[_id(c) for c in CASES])
def test_a_negative_axis_at_every_opset(op, opset, axis, backend):
    m, feeds, want = model(op, opset, axis)
    if (op, opset) in REFUSED:
        with pytest.raises(OnnxopError):
            onnxop_backend.prepare(m, backend=backend).run(feeds)
        return
    got = onnxop_backend.prepare(m, backend=backend).run(feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        assert g.tobytes() == w.tobytes(), (g, w)


def test_what_onnxruntime_refuses():
    """ORT_REFUSES is what the installed onnxruntime does with these models (it
    prints nothing onnxop depends on: the table only documents the sweep)."""
    refused = set()
    for op, opset, axis in CASES:
        if ort_refuses(*model(op, opset, axis)[:2]):
            refused.add((op, opset))
    assert refused == ORT_REFUSES


def test_every_operator_with_an_axis_is_swept():
    """An operator whose parameters name an axis is in AXES (a new one cannot slip past)."""
    named = {op for op, versions in OPERATORS.items()
             for v in versions for p in v.params() if "axis" in p or "axes" in p or p in ("perm", "start")
             # the binary operators' axis (opsets 1-6) places a broadcast=1 operand, which onnxop refuses
             if not (p == "axis" and "broadcast" in v.params())}
    assert named - set(AXES) == set()
