"""What both other runtimes (other_onnxruntime.py, other_reference.py) and
--verify (verify.py) share: host Tensors to numpy arrays and back, and an
exception's message as one short line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import OnnxopError

if TYPE_CHECKING:
    from .tensor import Tensor


def as_arrays(feeds: dict[str, Tensor]) -> dict:
    return {n: t.to_numpy() for n, t in feeds.items()}


def as_tensors(names: list[str], arrays, label: str, needed: set[str] | None = None) -> dict[str, Tensor]:
    """The tensors among ``arrays``; a sequence or map is an error when it is
    ``needed`` (another region reads it), else left out (a value --verify
    or --dump asked for: they read tensors)."""
    import numpy as np

    from .tensor import Tensor

    made = {}
    for name, a in zip(names, arrays):
        if not isinstance(a, np.ndarray):
            if needed is not None and name not in needed:
                continue
            raise OnnxopError(f"{label}: {name!r} is a {type(a).__name__}, not a tensor; "
                              "onnxop passes tensors between regions")
        made[name] = Tensor.from_numpy(a, name)
    return made


def first_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text[:300] + ("..." if len(text) > 300 else "")
