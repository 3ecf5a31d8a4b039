"""Regions of nodes onnxop does not run, on onnx.reference
(``--others reference``; core/others.py runs them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import OnnxopError

if TYPE_CHECKING:
    from .tensor import Tensor


def run(model, feeds: dict[str, Tensor], outputs: list[str], label: str,
        needed: set[str] | None = None) -> dict[str, Tensor]:
    from onnx.reference import ReferenceEvaluator

    from .other_common import as_arrays, as_tensors, first_line

    try:
        made = ReferenceEvaluator(model).run(outputs, as_arrays(feeds))
    except Exception as e:  # noqa: BLE001 - the evaluator raises any kind
        raise OnnxopError(f"{label}: onnx.reference: {type(e).__name__}: {first_line(e)}") from None
    return as_tensors(outputs, made, label, needed)
