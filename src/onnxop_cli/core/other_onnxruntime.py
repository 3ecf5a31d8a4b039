"""Regions of nodes onnxop does not run, on onnxruntime's CPU provider
(``--others onnxruntime``; core/others.py runs them).

Graph optimizations are off, so a region computes what onnxruntime computes
for the same nodes of the whole model run without optimizations: no fused
kernel changes a rounding. onnxruntime is imported only here, when a region
needs it (``pip install 'onnxop[models]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import OnnxopError, UsageError

if TYPE_CHECKING:
    from .tensor import Tensor

INSTALL = "pip install 'onnxop[models]'"


def module():
    try:
        import onnxruntime
    except ImportError:
        raise UsageError(f"--others onnxruntime needs the onnxruntime package, which is not installed ({INSTALL})") from None
    return onnxruntime


def session(model):
    """An onnxruntime session of ``model`` on the CPU, optimizations off."""
    ort = module()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4  # its warnings and errors are not ours to print: an error comes back as the
    # exception the one line names (3 let ERROR lines through, a failed initialization printed two before it)
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def run(model, feeds: dict[str, Tensor], outputs: list[str], label: str,
        needed: set[str] | None = None) -> dict[str, Tensor]:
    from .other_common import as_tensors, first_line

    try:
        made = run_tensors(model, outputs, feeds)
    except OnnxopError:
        raise
    except Exception as e:  # noqa: BLE001 - onnxruntime raises its own kinds
        hint = ("; --others reference runs the others on onnx.reference, which has every opset's kernels"
                if "NOT_IMPLEMENTED" in str(e) else "")
        raise OnnxopError(f"{label}: onnxruntime: {first_line(e)}{hint}") from None
    return as_tensors(outputs, made, label, needed)


def run_tensors(model, outputs: list[str], feeds: dict[str, Tensor]) -> list:
    """``model``'s ``outputs`` on onnxruntime (``session``) from ``feeds``, each crossing as the bytes of its
    ONNX type (ort_values.py): Tensors, and what is not a tensor (a sequence) as onnxruntime made it. The
    numpy arrays this took and gave had no bfloat16, float8, 4- or 2-bit type: a region's input of one was
    refused ("Numpy_type 256 can't be converted to MLDataType"), and so was its output, but float8e4m3fn's,
    which came back as uint8 values."""
    from . import ort_values

    return ort_values.run(session(model), outputs, feeds)
