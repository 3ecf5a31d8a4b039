"""Independent references for the operators with tensor inputs (Concat, Split, Pad, ...):
a one-node model run by onnx.reference.ReferenceEvaluator and, where it has
the kernel, by onnxruntime's CPU provider. Never onnxop."""

from __future__ import annotations

import numpy as np
from onnx import helper

from onnxop_cli.core.tensor import dtype_of_numpy


def model(op_type: str, opset: int, inputs: list, attrs: dict, n_outputs: int = 1, names=None, out_types=None):
    names = names or [f"in{i}" for i in range(len(inputs))]
    ins, node_inputs = [], []
    for name, x in zip(names, inputs):
        if x is None:
            node_inputs.append("")
            continue
        ins.append(helper.make_tensor_value_info(name, dtype_of_numpy(np.asarray(x).dtype).onnx_type, None))
        node_inputs.append(name)
    outs = [f"out{k}" for k in range(n_outputs)]
    node = helper.make_node(op_type, node_inputs, outs, **attrs)
    first = next(np.asarray(x) for x in inputs if x is not None)
    types = out_types or [dtype_of_numpy(first.dtype).onnx_type] * n_outputs
    graph = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info(o, t, None) for o, t in zip(outs, types)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10 if opset <= 23 else 11
    return m, {n: x for n, x in zip(names, inputs) if x is not None}


def reference(op_type: str, opset: int, inputs: list, attrs: dict | None = None, n_outputs: int = 1, **kw):
    from onnx.reference import ReferenceEvaluator

    m, feeds = model(op_type, opset, inputs, attrs or {}, n_outputs, **kw)
    return [np.asarray(o) for o in ReferenceEvaluator(m).run(None, feeds)]


def ort(op_type: str, opset: int, inputs: list, attrs: dict | None = None, n_outputs: int = 1, **kw):
    """onnxruntime's outputs, or None where it has no kernel for these types."""
    import onnxruntime as rt

    m, feeds = model(op_type, opset, inputs, attrs or {}, n_outputs, **kw)
    if any(np.asarray(x).dtype.type.__module__.startswith("ml_dtypes") for x in feeds.values()):
        return None  # its Python API takes no ml_dtypes arrays
    try:
        session = rt.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001 - no kernel for this type/opset
        return None
    return session.run(None, feeds)


def same(got: np.ndarray, want: np.ndarray) -> bool:
    """Byte-identical (NaN payloads and -0.0 included), same shape and type."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype == object or want.dtype == object:
        return got.shape == want.shape and [_b(v) for v in got.reshape(-1)] == [_b(v) for v in want.reshape(-1)]
    return got.shape == want.shape and got.dtype == want.dtype and (
        np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()
    )


def _b(v) -> bytes:
    return v.encode() if isinstance(v, str) else bytes(v)


def quiet(x: np.ndarray) -> np.ndarray:
    """onnxruntime's float16 Pad and Trilu do not keep NaN payloads (0x7c01 comes out
    as 0x7e01 or 0x7e00: its padded elements go through float). onnx.reference
    and onnxop keep every bit; against onnxruntime, float16 NaNs are compared
    as NaNs (sign kept)."""
    if x.dtype != np.float16:
        return x
    bits = x.view(np.uint16).copy()
    nan = ((bits & 0x7C00) == 0x7C00) & ((bits & 0x3FF) != 0)
    bits[nan] = (bits[nan] & 0x8000) | 0x7E00
    return bits.view(np.float16)
