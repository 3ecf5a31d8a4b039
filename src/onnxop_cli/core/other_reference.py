"""Regions of nodes onnxop does not run, on onnx.reference
(``--others reference``; core/others.py runs them), and the conversions
both other runtimes share: host Tensors to numpy arrays and back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import OnnxopError

if TYPE_CHECKING:
    from .tensor import Tensor


def run(model, feeds: dict[str, Tensor], outputs: list[str], label: str) -> dict[str, Tensor]:
    from onnx.reference import ReferenceEvaluator

    from .other_onnxruntime import first_line

    try:
        made = ReferenceEvaluator(model).run(outputs, as_arrays(feeds))
    except Exception as e:  # noqa: BLE001 - the evaluator raises any kind
        raise OnnxopError(f"{label}: onnx.reference: {type(e).__name__}: {first_line(e)}") from None
    return as_tensors(outputs, made, label)


def as_arrays(feeds: dict[str, Tensor]) -> dict:
    return {n: t.to_numpy() for n, t in feeds.items()}


def as_tensors(names: list[str], arrays, label: str) -> dict[str, Tensor]:
    import numpy as np

    from .tensor import Tensor

    made = {}
    for name, a in zip(names, arrays):
        if not isinstance(a, np.ndarray):
            raise OnnxopError(f"{label}: {name!r} is a {type(a).__name__}, not a tensor; "
                              "onnxop passes tensors between regions")
        made[name] = Tensor.from_numpy(a, name)
    return made
