"""What both other runtimes (other_onnxruntime.py, other_reference.py) and
--verify (verify.py) share: host Tensors to numpy arrays (for onnx.reference)
and what a runtime made to Tensors, and an exception's message as one short line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import OnnxopError

if TYPE_CHECKING:
    from .tensor import Tensor


def as_arrays(feeds: dict[str, Tensor]) -> dict:
    return {n: t.to_numpy() for n, t in feeds.items()}


def as_tensors(names: list[str], made, label: str, needed: set[str] | None = None) -> dict[str, Tensor]:
    """The tensors among ``made`` (Tensors from onnxruntime, numpy arrays from onnx.reference); a
    sequence or map is an error when it is ``needed`` (another region reads it), else left out (a value
    --verify or --dump asked for: they read tensors)."""
    import numpy as np

    from .tensor import Tensor

    tensors = {}
    for name, a in zip(names, made):
        if isinstance(a, Tensor):
            tensors[name] = a
        elif isinstance(a, np.ndarray):
            tensors[name] = Tensor.from_numpy(a, name)
        elif needed is None or name in needed:
            what = a.data_type() if hasattr(a, "data_type") else type(a).__name__  # (onnxruntime's OrtValue)
            raise OnnxopError(f"{label}: {name!r} is a {what}, not a tensor; onnxop passes tensors between regions")
    return tensors


def first_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text[:300] + ("..." if len(text) > 300 else "")
