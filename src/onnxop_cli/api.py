"""The Python API: ONNX's data-movement operators on numpy arrays, on the GPU.

    >>> import numpy as np
    >>> from onnxop_cli import flatten, unsqueeze
    >>> a = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    >>> flatten(a, axis=-2).shape
    (6, 20)
    >>> unsqueeze(a, [0, 5]).shape
    (1, 2, 3, 4, 5, 1)

Every function runs the same path as the ``onnxop`` command: the ONNX shape
rule of the chosen opset and the node's index map (pure Python), then the
array's bytes through the WGSL copy kernel (reshapes) or gather kernel
(layout changes) on a WebGPU adapter and back. The result is a new
C-contiguous array whose elements are the input's, bit for bit (NaN payloads
and -0.0 included). ``transpose``, ``slice_``, ``expand``, ``tile``,
``reshape``, ``squeeze``, ``identity``, ``depth_to_space`` and
``space_to_depth`` take the operator's parameters by their ONNX names.

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

A parameter of the wrong type or value (``opset='13'``, ``opset=13.9``,
``backend=1``, ``allowzero='yes'``) raises one ``TypeError`` or ``ValueError``
naming the parameter (``ParameterTypeError`` / ``ParameterValueError``, which
are ``UsageError`` s too).

Threads: every function may be called from any number of threads at once, on
either engine and any backend, as numpy's may: each call returns its own
input's result, bit for bit. The first calls share one device (it is opened
once, by whichever thread comes first); the GPU work of the calls on one
engine is serialized (a lock per engine held around each copy or gather), so
threads overlap their Python and numpy work but not their kernels. Signals
(Ctrl-C) are the caller's business: the API installs no handlers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from .errors import UsageError
from .ops import LATEST_OPSET, Node, flatten_node, make_node, unsqueeze_node

if TYPE_CHECKING:
    import numpy as np

    from .core.tensor import Tensor


def flatten(
    x: np.ndarray, axis: int = 1, *, opset: int = LATEST_OPSET, backend: str | None = None,
    engine: str | None = None,
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
    return _run(flatten_node(_int(axis, "Flatten", "axis must be an integer"), _opset(opset)), x, backend, engine)


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
    return _run(unsqueeze_node(_ints(axes, "Unsqueeze", "axes"), _opset(opset)), x, backend, engine)


def identity(
    x: np.ndarray, *, opset: int = LATEST_OPSET, backend: str | None = None,
    engine: str | None = None,
) -> np.ndarray:
    """ONNX Identity: a copy of ``x`` made by the GPU copy kernel."""
    return _run(make_node("Identity", _opset(opset)), x, backend, engine)


def reshape(
    x: np.ndarray, shape: Iterable[int], *, allowzero: int | None = None, opset: int = LATEST_OPSET,
    backend: str | None = None, engine: str | None = None,
) -> np.ndarray:
    """ONNX Reshape: 0 in ``shape`` copies x's dim (a real 0 with
    ``allowzero=1``, opset 14+), one -1 is inferred.

    >>> import numpy as np
    >>> from onnxop_cli import reshape
    >>> reshape(np.arange(6, dtype=np.int8).reshape(2, 3), [0, -1, 1]).shape
    (2, 3, 1)
    """
    return _run(make_node("Reshape", _opset(opset), shape=_ints(shape, "Reshape", "shape"), allowzero=_allowzero(allowzero)),
                x, backend, engine)


def squeeze(
    x: np.ndarray, axes: int | Iterable[int] | None = None, *, opset: int = LATEST_OPSET, backend: str | None = None,
    engine: str | None = None,
) -> np.ndarray:
    """ONNX Squeeze: drop the size-1 dims at ``axes`` (all of them when None)."""
    return _run(make_node("Squeeze", _opset(opset), axes=None if axes is None else _ints(axes, "Squeeze", "axes")),
                x, backend, engine)


def transpose(
    x: np.ndarray, perm: Iterable[int] | None = None, *, opset: int = LATEST_OPSET, backend: str | None = None,
    engine: str | None = None,
) -> np.ndarray:
    """ONNX Transpose: output axis k is input axis ``perm[k]`` (default: reversed).

    >>> import numpy as np
    >>> from onnxop_cli import transpose
    >>> transpose(np.arange(6, dtype=np.int32).reshape(2, 3))
    array([[0, 3],
           [1, 4],
           [2, 5]], dtype=int32)
    """
    return _run(make_node("Transpose", _opset(opset), perm=None if perm is None else _ints(perm, "Transpose", "perm")),
                x, backend, engine)


def expand(
    x: np.ndarray, shape: Iterable[int], *, opset: int = LATEST_OPSET, backend: str | None = None,
    engine: str | None = None,
) -> np.ndarray:
    """ONNX Expand: ``x`` broadcast against ``shape`` as numpy broadcasts (rank may grow)."""
    return _run(make_node("Expand", _opset(opset), shape=_ints(shape, "Expand", "shape")), x, backend, engine)


def slice_(
    x: np.ndarray, starts: Iterable[int], ends: Iterable[int], axes: Iterable[int] | None = None,
    steps: Iterable[int] | None = None, *, opset: int = LATEST_OPSET, backend: str | None = None, engine: str | None = None,
) -> np.ndarray:
    """ONNX Slice (named ``slice_``: ``slice`` is Python's): along each of
    ``axes`` (default 0, 1, ...), every ``steps``-th element (default 1;
    negative walks back) from ``starts`` to before ``ends``, clamped as the
    spec says.

    >>> import numpy as np
    >>> from onnxop_cli import slice_
    >>> slice_(np.arange(10, dtype=np.int64), [-1], [-1000], steps=[-3])
    array([9, 6, 3, 0])
    """
    values = {"starts": starts, "ends": ends, "axes": axes, "steps": steps}
    return _run(make_node("Slice", _opset(opset), **{k: None if v is None else _ints(v, "Slice", k) for k, v in values.items()}),
                x, backend, engine)


def tile(
    x: np.ndarray, repeats: Iterable[int], *, opset: int = LATEST_OPSET, backend: str | None = None,
    engine: str | None = None,
) -> np.ndarray:
    """ONNX Tile: ``x`` repeated ``repeats[k]`` times along each axis k (as numpy.tile)."""
    return _run(make_node("Tile", _opset(opset), repeats=_ints(repeats, "Tile", "repeats")), x, backend, engine)


def depth_to_space(
    x: np.ndarray, blocksize: int, mode: str | None = None, *, opset: int = LATEST_OPSET, backend: str | None = None,
    engine: str | None = None,
) -> np.ndarray:
    """ONNX DepthToSpace of an NCHW array; ``mode`` "DCR" (default) or "CRD"."""
    return _run(make_node("DepthToSpace", _opset(opset), blocksize=_int(blocksize, "DepthToSpace", "blocksize must be an integer"), mode=mode),
                x, backend, engine)


def space_to_depth(
    x: np.ndarray, blocksize: int, mode: str | None = None, *, opset: int = LATEST_OPSET, backend: str | None = None,
    engine: str | None = None,
) -> np.ndarray:
    """ONNX SpaceToDepth of an NCHW array; ``mode`` "DCR" (default) or "CRD" (opset 28+)."""
    return _run(make_node("SpaceToDepth", _opset(opset), blocksize=_int(blocksize, "SpaceToDepth", "blocksize must be an integer"), mode=mode),
                x, backend, engine)


class ParameterTypeError(UsageError, TypeError):
    """A parameter of the wrong type (``opset='13'``, ``backend=1``); also a
    UsageError, as every refusal of the request is."""


class ParameterValueError(UsageError, ValueError):
    """A parameter of the right type but a value that cannot work
    (``allowzero=2``, ``backend='cuda'``)."""


def _opset(value: object) -> int:
    """An opset is an int: not a bool, a float (13.9 is no opset) or a string."""
    if isinstance(value, bool) or not _is_index(value):
        raise ParameterTypeError(f"opset must be an integer, got {value!r}")
    if not 1 <= int(value) <= LATEST_OPSET:  # type: ignore[call-overload]
        raise ParameterValueError(f"opset {value} is out of range [1, {LATEST_OPSET}]")
    return int(value)  # type: ignore[call-overload]


def _allowzero(value: object) -> int | None:
    """Reshape's allowzero: None (the default), 0 or 1 (False and True too)."""
    if value is None:
        return None
    if not _is_index(value):
        raise ParameterTypeError(f"allowzero must be 0 or 1, got {value!r}")
    if int(value) not in (0, 1):  # type: ignore[call-overload]
        raise ParameterValueError(f"allowzero must be 0 or 1, got {value!r}")
    return int(value)  # type: ignore[call-overload]


def _is_index(value: object) -> bool:
    import operator

    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def _gpu_key(backend: object, engine: object) -> str:
    """The backend's one string (``dawn-gl``), checked: each of ``backend`` and
    ``engine`` is None or a name."""
    from .gpu.device import gpu_key, resolve

    for name, value in (("backend", backend), ("engine", engine)):
        if value is not None and not isinstance(value, str):
            raise ParameterTypeError(f"{name} must be a string or None, got {value!r}")
    try:
        return gpu_key(*resolve(backend, engine))  # type: ignore[arg-type]
    except UsageError as e:
        raise ParameterValueError(e.message) from None


def _ints(values: object, op: str, what: str) -> list[int]:
    try:
        values = list(values)  # type: ignore[call-overload]
    except TypeError:  # one value (an int, or a numpy integer)
        values = [values]
    return [_int(v, op, f"{what} must be integers") for v in values]


def _int(value: object, op: str, rule: str) -> int:
    import operator

    try:
        return operator.index(value)
    except TypeError:
        raise ParameterTypeError(f"{op}: {rule}, got {value!r}") from None


def _run(node: Node, x: np.ndarray, backend: str | None, engine: str | None = None) -> np.ndarray:
    """The one path: shape rule, then the GPU copy (core.apply), then numpy."""
    from .core import apply as core

    key = _gpu_key(backend, engine)
    tensor = to_tensor(x)
    result = core.apply(node, tensor, backend=key)
    return result.output.to_numpy(fixed_width=True)  # numpy text keeps its dtype (|S2 stays |S2)


def to_tensor(x: object, name: str = "x") -> Tensor:
    """A Tensor over the array's bytes: Fortran order and big-endian bytes
    are kept as they are (the GPU re-lays them out), sub-byte types are packed
    as ONNX packs them, strings go the host path."""
    import numpy as np

    from .core.tensor import Tensor

    return Tensor.from_numpy(np.asarray(x), name=name)


__all__ = [
    "flatten", "unsqueeze", "identity", "reshape", "squeeze", "transpose", "expand", "slice_", "tile",
    "depth_to_space", "space_to_depth",
]
