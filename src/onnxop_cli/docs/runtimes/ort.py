"""onnxruntime, the Python package, on one execution provider (CPU by default):
``--runtime onnxruntime`` or ``--runtime onnxruntime:CUDAExecutionProvider``.

Tensors cross as raw bytes, not through onnxruntime's numpy bridge, as they
do for ``run --others onnxruntime`` (core/ort_values.py): each input an
OrtValue of the model's ONNX type and shape, filled with the bytes ONNX stores,
each output's bytes copied back as they lie in onnxruntime's memory. So what is
compared is what onnxruntime computed, nothing our side converted."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ...errors import OnnxopError, UsageError
from .base import Lacks, Loaded, refusal

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
        from ...core import ort_values

        try:  # (conformance refuses a model of other values than tensors before it runs: these are Tensors)
            return ort_values.run(self.session, self.outputs, dict(zip(self.inputs, feeds)), self.types)
        except ort_values.Unheld as e:
            raise Lacks(str(e)) from None
        except OnnxopError:  # ours (Interrupted): never onnxruntime's refusal
            raise
        except Exception as e:  # noqa: BLE001
            raise refusal(e) from None
