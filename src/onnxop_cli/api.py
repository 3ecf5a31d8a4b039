"""The Python API: ONNX Flatten and Unsqueeze on numpy arrays, on the GPU.

    >>> import numpy as np
    >>> from onnxop_cli import flatten, unsqueeze
    >>> a = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    >>> flatten(a, axis=-2).shape
    (6, 20)
    >>> unsqueeze(a, [0, 5]).shape
    (1, 2, 3, 4, 5, 1)

Both run the same path as the ``onnxop`` command: the ONNX shape rule of the
chosen opset (pure Python), then the array's bytes through the WGSL copy
kernel on a WebGPU adapter and back. The result is a new C-contiguous array
whose bytes are the input's (NaN payloads and -0.0 included).

Arrays of every fixed-width ONNX type work, including ml_dtypes' bfloat16,
float8, and the 4- and 2-bit types. Errors raise the project's exceptions
(all subclasses of :class:`onnxop_cli.OnnxopError`, each with ``.message``
and ``.exit_code``):

- ``OpError`` (a ``UsageError``): the shape rule refused the request, e.g.
  ``Flatten: axis 5 is out of range [-4, 4] for an input of rank 4``;
- ``UsageError``: an opset or backend that does not exist, an axis that is
  not an integer;
- ``InputError``: an array onnxop cannot take (object arrays, a type the
  opset does not allow);
- ``NoAdapterError`` / ``GpuError``: no WebGPU adapter, or WebGPU failed.

The backend is ``"auto"`` (the best adapter found), ``"vulkan"``, ``"metal"``,
``"d3d12"`` or ``"gl"``; ``None`` means ``$ONNXOP_BACKEND`` or ``"auto"``. A
process opens one WebGPU instance, for the backend of its first call: use
one backend per process.

The engine is ``"wgpu"`` (wgpu-native, the default) or ``"dawn"`` (Dawn, with
``pip install 'onnxop[dawn]'``); ``None`` means ``$ONNXOP_ENGINE`` or ``"wgpu"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from .errors import UsageError
from .ops import LATEST_OPSET, Node, flatten_node, unsqueeze_node

if TYPE_CHECKING:
    import numpy as np

    from .tensor import Tensor


def flatten(
    x: np.ndarray, axis: int = 1, *, opset: int = LATEST_OPSET, backend: str | None = None, engine: str | None = None
) -> np.ndarray:
    """ONNX Flatten: ``x`` as a 2-D array split at ``axis``, computed on the GPU.

    The output shape is ``(d_0 * ... * d_{axis-1}, d_axis * ... * d_{n-1})``;
    ``axis`` lies in ``[-r, r]`` for an input of rank ``r`` (negative axes
    count from the back, from opset 11). ``opset`` selects the operator
    version whose rules apply (default: the latest, 25).

    >>> import numpy as np
    >>> from onnxop_cli import flatten
    >>> flatten(np.arange(24, dtype=np.int32).reshape(2, 3, 4), axis=2)
    array([[ 0,  1,  2,  3],
           [ 4,  5,  6,  7],
           [ 8,  9, 10, 11],
           [12, 13, 14, 15],
           [16, 17, 18, 19],
           [20, 21, 22, 23]], dtype=int32)

    Raises OpError for an axis out of range (see the module docs for the rest).
    """
    return _run(flatten_node(_int(axis, "Flatten", "axis must be an integer"), opset), x, backend, engine)


def unsqueeze(
    x: np.ndarray,
    axes: int | Iterable[int],
    *,
    opset: int = LATEST_OPSET,
    backend: str | None = None,
    engine: str | None = None,
) -> np.ndarray:
    """ONNX Unsqueeze: ``x`` with size-1 dimensions inserted at ``axes`` of the
    output, computed on the GPU.

    Each axis lies in ``[-r_out, r_out - 1]`` where ``r_out = x.ndim +
    len(axes)``; negative and unsorted axes are fine, duplicates are not.
    ``axes`` may be one int or a sequence of ints. ``opset`` selects the
    operator version whose rules apply (default: the latest, 25; negative
    axes need opset 11 or later).

    >>> import numpy as np
    >>> from onnxop_cli import unsqueeze
    >>> unsqueeze(np.array([1.5, -0.0], dtype=np.float32), [0, -1])
    array([[[ 1.5],
            [-0. ]]], dtype=float32)

    Raises OpError for an axis out of range or named twice.
    """
    try:
        axes = list(axes)  # type: ignore[arg-type]
    except TypeError:  # one axis (an int, or a numpy integer)
        axes = [axes]
    axes = [_int(a, "Unsqueeze", "axes must be integers") for a in axes]
    return _run(unsqueeze_node(axes, opset), x, backend, engine)


def _int(value: object, op: str, rule: str) -> int:
    import operator

    try:
        return operator.index(value)
    except TypeError:
        raise UsageError(f"{op}: {rule}, got {value!r}") from None


def _run(node: Node, x: np.ndarray, backend: str | None, engine: str | None = None) -> np.ndarray:
    """The one path: shape rule, then the GPU copy (core.apply), then numpy."""
    from . import core

    tensor = to_tensor(x)
    if engine is not None:
        from .gpu.device import gpu_key, resolve

        backend = gpu_key(*resolve(backend, engine))
    result = core.apply(node, tensor, backend=backend)
    return result.output.to_numpy(fixed_width=True)  # numpy text keeps its dtype (|S2 stays |S2)


def to_tensor(x: object, name: str = "x") -> Tensor:
    """A Tensor over the array's bytes: Fortran order and big-endian bytes
    are kept as they are (the GPU re-lays them out), sub-byte types are packed
    as ONNX packs them, strings go the host path."""
    import numpy as np

    from .tensor import Tensor

    return Tensor.from_numpy(np.asarray(x), name=name)


__all__ = ["flatten", "unsqueeze"]
