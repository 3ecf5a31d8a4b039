"""What scripts/fuzz_graphs.py holds onnxop's outputs to: onnx.reference, with its own Expand, Unsqueeze,
Slice, Resize (nearest), OneHot, Squeeze and Shape where onnx.reference computes, clamps or counts otherwise than
ONNX says a copy does, and the others' nodes (Relu, MatMul, Softmax) run as onnxruntime runs them; and
onnxruntime's plain outputs, the second opinion. Independent of src/ on purpose: onnxop's own reading of
an operator is what the fuzzer checks, so the oracle never borrows it."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
from fuzz_oracles import native
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun
from onnx.reference.ops.op_resize import Resize as _Computed


def elem(x: np.ndarray) -> int:
    return helper.np_dtype_to_tensor_dtype(x.dtype)


class Expand(OpRun):
    """A copy (onnx.reference multiplies by ones: a signalling NaN quieted)."""

    def _run(self, data, shape):
        return (np.broadcast_to(data, np.broadcast_shapes(data.shape, tuple(int(d) for d in shape))).copy(),)


class Unsqueeze(OpRun):
    """Negative axes counted in the output's rank, all at once (onnx.reference's Unsqueeze-1/11 inserts them
    one by one, each against the rank so far: (4, 2) with axes [-2, -1] is (4, 1, 2, 1), not (4, 2, 1, 1))."""

    def _run(self, data, axes=None, **kw):
        axes = [int(a) for a in (axes if axes is not None else self.axes)]
        return (np.expand_dims(data, tuple(a % (data.ndim + len(axes)) for a in axes)),)


class Slice(OpRun):
    """ONNX's clamping (onnx.reference's numpy slicing takes a negative step's start of -n-1 as empty)."""

    def _run(self, data, starts, ends, axes=None, steps=None):
        axes = range(len(starts)) if axes is None else [int(a) % data.ndim for a in axes]
        steps = [1] * len(starts) if steps is None else steps
        index = [slice(None)] * data.ndim
        for a, s, e, st in zip(axes, starts, ends, steps):
            n, s, e, st = data.shape[a], int(s), int(e), int(st)
            s, e = s + n if s < 0 else s, e + n if e < 0 else e
            if st > 0:
                s, e = min(max(s, 0), n), min(max(e, 0), n)
            else:
                s, e = min(max(s, 0), n - 1), min(max(e, -1), n - 1)
            index[a] = range(s, e, st)
        out = data
        for a, r in enumerate(index):
            if isinstance(r, range):
                out = np.take(out, np.array(r, dtype=np.int64), axis=a)
        return (out,)


class Resize(_Computed):
    """Nearest mode as a copy: run on the elements' labels (float64, exact), each output the element its
    label names (onnx.reference's weights times values quiet NaNs, lose -0.0, round 64-bit integers)."""

    def _run(self, X, *args, **kw):
        if kw.get("mode") != "nearest" or kw.get("coordinate_transformation_mode") == "tf_crop_and_resize" \
                or X.dtype == object or not X.size:
            return super()._run(X, *args, **kw)
        at = super()._run(np.arange(1, X.size + 1, dtype=np.float64).reshape(X.shape), *args, **kw)[0]
        return (X.reshape(-1)[at.astype(np.int64) - 1],)


class OneHot(OpRun):
    """A copy of the on and off values (onnx.reference computes hot * (on - off) + off)."""

    def _run(self, indices, depth, values, axis=None):
        from onnx.reference.ops.op_one_hot import _one_hot

        return (np.where(_one_hot(indices, depth, axis=axis, dtype=np.bool_), values[1], values[0]),)


class Squeeze(OpRun):
    """An empty axes tensor: every size-1 axis, as onnxruntime and onnxop read it (onnx.reference: none)."""

    def _run(self, data, axes=None):
        return (np.squeeze(data, axis=None if axes is None or not len(axes) else tuple(int(a) for a in axes)),)


class Shape(OpRun):
    """start and end counted from the back and clamped to [0, rank] (onnx.reference's Shape-15 slices with an
    end of n + end, which below -rank counts from the back once more: rank 3, end -5 keeps one axis, not none)."""

    def _run(self, data, end=None, start=None):
        n = data.ndim
        s = 0 if start is None else int(start)
        e = n if end is None else int(end)
        s, e = (min(max(v + n if v < 0 else v, 0), n) for v in (s, e))
        return (np.array(data.shape[s:e], dtype=np.int64),)


OPSET = [21]  # the model's opset, for the nodes run on onnxruntime


class _OnOnnxruntime(OpRun):
    """The others' nodes as onnxruntime runs them (what --others runs them on): onnx.reference's Softmax-11
    at opset < 13 takes the last axis, not the 2-D coercion at ``axis``."""

    def _run(self, *args, **kw):
        import onnxruntime

        node = self.onnx_node
        ins = [f"i{k}" for k in range(len(args))]
        one = helper.make_node(node.op_type, ins, ["o"], **{a.name: helper.get_attribute_value(a)
                                                              for a in node.attribute})
        graph = helper.make_graph([one], "one", [helper.make_tensor_value_info(n, elem(a), a.shape)
                                                 for n, a in zip(ins, args)],
                                  [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET[0])])
        opts = onnxruntime.SessionOptions()
        opts.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        opts.log_severity_level = 4
        s = onnxruntime.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        return (s.run(None, dict(zip(ins, args)))[0],)


Relu = type("Relu", (_OnOnnxruntime,), {})
Softmax = type("Softmax", (_OnOnnxruntime,), {})
MatMul = type("MatMul", (_OnOnnxruntime,), {})
OVERRIDES = [Expand, Unsqueeze, Slice, Resize, OneHot, Squeeze, Shape, Relu, Softmax, MatMul]


def expected(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return [native(np.asarray(x)) for x in ReferenceEvaluator(model, new_ops=OVERRIDES).run(None, feeds)]
    except Exception:  # noqa: BLE001
        return None


def ort_plain(model, feeds) -> list | None:
    """onnxruntime's CPU outputs with its graph optimizations off (what --others promises to equal)."""
    try:
        import onnxruntime

        opts = onnxruntime.SessionOptions()
        opts.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        opts.log_severity_level = 4
        session = onnxruntime.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        return [native(np.asarray(x)) for x in session.run(None, feeds)]
    except Exception:  # noqa: BLE001 (no kernel for the type)
        return None
