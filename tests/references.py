"""Independent references for the type and format tests: onnxruntime (CPU)
running a one-node model, and TensorProtos built by hand from onnx.proto's
field rules (decoded by onnx.numpy_helper.to_array, never by onnxop)."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnxop_cli.core.tensor import DType

OPSET = 25


def _model(op_type: str, onnx_type: int, attrs: dict) -> bytes:
    inputs = [helper.make_tensor_value_info("x", onnx_type, None)]
    if op_type == "Unsqueeze":
        inputs.append(helper.make_tensor_value_info("axes", TensorProto.INT64, None))
    node = helper.make_node(op_type, [i.name for i in inputs], ["y"], **attrs)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", onnx_type, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 11
    return model.SerializeToString()


@functools.lru_cache(maxsize=None)
def _session(op_type: str, onnx_type: int, axis: int | None):
    import onnxruntime as ort

    attrs = {"axis": axis} if axis is not None else {}
    try:
        return ort.InferenceSession(_model(op_type, onnx_type, attrs), providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001 - onnxruntime has no kernel for this type
        return None


def ort_supports(op_type: str, dtype: DType) -> bool:
    return _session(op_type, dtype.onnx_type, 1 if op_type == "Flatten" else None) is not None


def ort_run(op_type: str, dtype: DType, x: np.ndarray, *, axis=None, axes=None, out_shape=None) -> np.ndarray:
    """onnxruntime's output for ``x`` (bfloat16 through an io binding: its
    Python API has no numpy type for it)."""
    import onnxruntime as ort

    session = _session(op_type, dtype.onnx_type, axis if op_type == "Flatten" else None)
    assert session is not None
    feeds = {"x": x}
    if op_type == "Unsqueeze":
        feeds["axes"] = np.asarray(axes, dtype=np.int64)
    if dtype.name != "bfloat16":
        return session.run(None, feeds)[0]
    out = np.empty(out_shape, dtype=np.uint16)
    binding = session.io_binding()
    binding.bind_ortvalue_input("x", ort.OrtValue.ortvalue_from_numpy_with_onnx_type(
        np.array(x, order="C").view(np.uint16), TensorProto.BFLOAT16))
    if "axes" in feeds:
        binding.bind_ortvalue_input("axes", ort.OrtValue.ortvalue_from_numpy(feeds["axes"]))
    binding.bind_ortvalue_output("y", ort.OrtValue.ortvalue_from_numpy_with_onnx_type(out, TensorProto.BFLOAT16))
    session.run_with_iobinding(binding)
    return out.view(dtype.numpy)


def typed_proto(raw: np.ndarray, dtype: DType, shape, name: str) -> TensorProto:
    """A TensorProto holding ``raw`` (the little-endian bytes, packed for 2/4-bit
    types) in the typed field onnx.proto assigns to ``dtype``, not raw_data."""
    proto = TensorProto()
    proto.name = name
    proto.dims.extend(shape)
    proto.data_type = dtype.onnx_type
    field = helper.tensor_dtype_to_field(dtype.onnx_type)
    raw = np.ascontiguousarray(raw).view(np.uint8)
    if field == "int32_data":
        # integers as their values (sign-extended), everything else bit-wise unsigned
        signed = dtype.name.startswith("int") and not dtype.is_packed
        width = {4: "<i4", 2: "<u2", 1: "u1"}[max(dtype.bits, 8) // 8]
        if signed:
            width = width.replace("u", "i")
        proto.int32_data.extend(int(v) for v in raw.view(width))
    elif field == "uint64_data":
        proto.uint64_data.extend(int(v) for v in raw.view("<u4" if dtype.bits == 32 else "<u8"))
    elif field == "int64_data":
        proto.int64_data.extend(int(v) for v in raw.view("<i8"))
    elif field == "float_data":
        proto.float_data.extend(float(v) for v in raw.view("<f4"))
    elif field == "double_data":
        proto.double_data.extend(float(v) for v in raw.view("<f8"))
    else:
        raise AssertionError(field)
    return proto


def raw_proto(raw: np.ndarray, dtype: DType, shape, name: str) -> TensorProto:
    proto = TensorProto()
    proto.name = name
    proto.dims.extend(shape)
    proto.data_type = dtype.onnx_type
    proto.raw_data = np.ascontiguousarray(raw).view(np.uint8).tobytes()
    return proto


def to_array(proto: TensorProto) -> np.ndarray:
    return numpy_helper.to_array(proto)


def load_pb(path) -> TensorProto:
    return onnx.load_tensor(str(path))


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Same shape, dtype and bits (NaN payloads and -0.0 count); strings equal."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "OUS" or b.dtype.kind in "OUS":
        return a.astype(object).tolist() == b.astype(object).tolist()
    if a.dtype.newbyteorder("=") != b.dtype.newbyteorder("="):
        return False
    le = lambda x: np.ascontiguousarray(x).astype(x.dtype.newbyteorder("<")).tobytes()  # noqa: E731
    return le(a) == le(b)


def node_tests_module():
    """scripts/node_tests.py: writes onnx's official Flatten/Unsqueeze node tests."""
    path = Path(__file__).resolve().parents[1] / "scripts" / "node_tests.py"
    spec = importlib.util.spec_from_file_location("node_tests", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
