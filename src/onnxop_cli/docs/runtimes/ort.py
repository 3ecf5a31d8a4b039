"""onnxruntime, the Python package, on one execution provider (CPU by default):
``--runtime onnxruntime`` or ``--runtime onnxruntime:CUDAExecutionProvider``.

Tensors cross as raw bytes, not through onnxruntime's numpy bridge (which has
no bfloat16, float8 or packed 4- and 2-bit types, and reads a numpy array of
4-bit values as packed bytes): each input is an OrtValue of the model's ONNX
type and shape, filled with the bytes ONNX stores (packed where packed), and
each output's bytes are copied back as they lie in onnxruntime's memory. So
what is compared is what onnxruntime computed, nothing our side converted."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ...errors import UsageError
from .base import Lacks, Loaded, message, passthrough, raw_bytes, refusal

CPU = "CPUExecutionProvider"


class OrtRuntime:
    webgpu = False

    def __init__(self, provider: str | None = None) -> None:
        try:
            import onnxruntime
        except ImportError:
            raise UsageError("--runtime onnxruntime: the onnxruntime package is not installed "
                             "(pip install onnxruntime)") from None
        self.provider = provider or CPU
        if self.provider not in onnxruntime.get_available_providers():
            raise UsageError(f"--runtime onnxruntime:{self.provider}: not a provider of this onnxruntime "
                             f"({', '.join(onnxruntime.get_available_providers())})")
        self.name = "onnxruntime" if provider is None else f"onnxruntime:{self.provider}"

    def load(self, model: Any, folder: Path) -> Loaded:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.log_severity_level = 4  # its errors come back as exceptions; no log lines on stderr
        try:
            session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=[self.provider])
        except Exception as e:  # noqa: BLE001 - onnxruntime raises its own classes
            raise refusal(e) from None
        return Loaded(_Session(session, model))


class _Session:
    def __init__(self, session, model) -> None:
        self.session = session
        self.inputs = [i.name for i in session.get_inputs()]
        self.outputs = [o.name for o in session.get_outputs()]
        self.types = {v.name: v.type.tensor_type.elem_type for v in model.graph.input}

    def run(self, feeds: Sequence[Any]) -> list[Any]:
        import onnxruntime

        values = {name: _value(t, self.types[name]) for name, t in zip(self.inputs, feeds)}
        options = onnxruntime.RunOptions()
        options.log_severity_level = 4
        try:
            results = self.session.run_with_ort_values(self.outputs, values, options)
        except Exception as e:  # noqa: BLE001
            raise refusal(e) from None
        return [_tensor(v, name) for name, v in zip(self.outputs, results)]


def _value(t, onnx_type: int):
    """An OrtValue of ``t``'s shape and ONNX type holding its bytes (strings through numpy)."""
    import ctypes

    import onnxruntime

    if t.dtype.is_string:
        return onnxruntime.OrtValue.ortvalue_from_numpy(t.to_numpy())
    raw = raw_bytes(t)
    try:
        value = onnxruntime.OrtValue.ortvalue_from_shape_and_type(list(t.shape), onnx_type)
    except Exception as e:  # noqa: BLE001
        passthrough(e)
        raise Lacks(f"input {t.name!r} ({t.dtype.name}) cannot be made an onnxruntime value: {message(e)}") from None
    if value.tensor_size_in_bytes() != raw.nbytes:
        raise Lacks(f"input {t.name!r}: onnxruntime holds {value.tensor_size_in_bytes()} bytes for "
                    f"{raw.nbytes} of {t.dtype.name}")
    if raw.nbytes:
        ctypes.memmove(value.data_ptr(), raw.ctypes.data, raw.nbytes)
    return value


def _tensor(value, name: str):
    """An OrtValue's bytes as an onnxop Tensor of its ONNX type."""
    import ctypes

    import numpy as np

    from ...core.sources import MemoryBytes
    from ...core.tensor import Tensor, dtype_by_onnx
    from .base import tensors

    type_name = value.data_type()  # "tensor(float8e4m3fn)"
    elem = _ONNX_TYPES().get(type_name.removeprefix("tensor(").removesuffix(")"))
    if elem is None or type_name == "tensor(string)":
        return tensors([value.numpy()], [name])[0]
    dtype = dtype_by_onnx(elem)
    size = value.tensor_size_in_bytes()
    raw = np.frombuffer(ctypes.string_at(value.data_ptr(), size) if size else b"", np.uint8).copy()
    return Tensor(name, tuple(value.shape()), dtype, MemoryBytes(raw))


def _ONNX_TYPES() -> dict[str, int]:
    """``float8e4m3fn`` -> 17: onnx's type names, as onnxruntime writes them in ``tensor(...)``."""
    import onnx

    return {n.lower(): v for n, v in onnx.TensorProto.DataType.items()}
