"""Regions of nodes onnxop does not run, on onnxruntime's CPU provider
(``--others onnxruntime``; core/others.py runs them).

Graph optimizations are off, so a region computes what onnxruntime computes
for the same nodes of the whole model run without optimizations: no fused
kernel changes a rounding. onnxruntime is imported only here, when a region
needs it (``pip install 'onnxop[models]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InputError, OnnxopError, UsageError

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
    from .other_common import as_arrays, as_tensors, first_line

    try:
        made = run_arrays(model, outputs, as_arrays(feeds))
    except OnnxopError:
        raise
    except Exception as e:  # noqa: BLE001 - onnxruntime raises its own kinds
        hint = ("; --others reference runs the others on onnx.reference, which has every opset's kernels"
                if "NOT_IMPLEMENTED" in str(e) else "")
        raise OnnxopError(f"{label}: onnxruntime: {first_line(e)}{hint}") from None
    return as_tensors(outputs, made, label, needed)


def run_arrays(model, outputs: list[str], arrays: dict) -> list:
    """``model``'s ``outputs`` on onnxruntime (``session``) from numpy ``arrays``, in the types it says
    they have (``_retyped``)."""
    s = session(model)
    return _retyped(s, outputs, s.run(outputs, arrays))


def _retyped(s, names: list[str], arrays: list) -> list:
    """``arrays`` in the types the session says its outputs have: onnxruntime's Python API hands a
    float8e4m3fn tensor back as uint8 (the same bytes), which onnxop took for uint8 values (a Cast of
    it to float16 made 56.0 of 1.0)."""
    import numpy as np

    from .tensor import dtype_by_name

    said = {o.name: o.type for o in s.get_outputs()}
    out = []
    for name, a in zip(names, arrays):
        t = said.get(name, "")
        if isinstance(a, np.ndarray) and a.dtype == np.uint8 and t.startswith("tensor(") and t != "tensor(uint8)":
            try:
                want = dtype_by_name(t[len("tensor("):-1].lower())
            except InputError:  # a type onnxop has no name for: as onnxruntime gave it
                want = None
            if want is not None and want.bits == 8 and not want.is_string and want.name != "bool":
                a = a.view(want.numpy)
        out.append(a)
    return out
