"""The Python API's arguments, checked and made into what the operators take.

Every function of :mod:`onnxop_cli.api` passes what it was given through
here: the keywords every function shares (``opset``, ``backend``,
``engine``), a view operator's parameters by their kind (``_param``), an
attribute's integers in int64's range (``_int``, ``_ints``), an array as a
Tensor (``to_tensor``), and a Python number or list as its input's type
(``_typed``, ``_literal``), refused where a value would change. A wrong
type raises ``ParameterTypeError``, a wrong value ``ParameterValueError``
(both ``UsageError`` s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import UsageError
from .ops import LATEST_OPSET, OpSpec
from .ops.spec import Param

if TYPE_CHECKING:
    import numpy as np

    from .core.tensor import Tensor


class ParameterTypeError(UsageError, TypeError):
    """A parameter of the wrong type (``opset='13'``, ``backend=1``); also a
    UsageError, as every refusal of the request is."""

    __module__ = "onnxop_cli.api"  # its public name, as before (a traceback's, pickle's)


class ParameterValueError(UsageError, ValueError):
    """A parameter of the right type but a value that cannot work
    (``allowzero=2``, ``backend='cuda'``)."""

    __module__ = "onnxop_cli.api"  # its public name, as before (a traceback's, pickle's)


def _opset(value: object) -> int:
    """An opset is an int: not a bool, a float (13.9 is no opset) or a string."""
    if isinstance(value, bool) or not _is_index(value):
        raise ParameterTypeError(f"opset must be an integer, got {value!r}")
    if not 1 <= int(value) <= LATEST_OPSET:  # type: ignore[call-overload]
        raise ParameterValueError(f"opset {value} is out of range [1, {LATEST_OPSET}]")
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
        number = operator.index(value)
    except TypeError:
        raise ParameterTypeError(f"{op}: {rule}, got {value!r}") from None
    lo, hi = -(1 << 63), (1 << 63) - 1  # every ONNX integer attribute is an int64
    if not lo <= number <= hi:
        raise ParameterValueError(f"{op}: {rule} in int64's range [{lo}, {hi}], got {value!r}")
    return number


def to_tensor(x: object, name: str = "x") -> Tensor:
    """A Tensor over the array's bytes: Fortran order and big-endian bytes
    are kept as they are (the GPU re-lays them out), sub-byte types are packed
    as ONNX packs them, strings go the host path."""
    import numpy as np

    from .core.tensor import Tensor

    try:
        arr = np.asarray(x)
    except ValueError as e:  # a ragged list
        raise ParameterValueError(f"{name}: {x!r} is no array: {e}") from None
    if arr.dtype == object and not isinstance(x, np.ndarray):
        # numpy made an object array of a list it could not type: no string tensor (which said 'a string tensor
        # holds a value of type int'), but the value that made it so
        for v in arr.reshape(-1).tolist():
            if isinstance(v, int) and not isinstance(v, bool) and not -(1 << 63) <= v < (1 << 64):
                raise ParameterValueError(f"{name}: {x!r} holds an integer past int64 and uint64; no ONNX type "
                                          "holds it")
            if not isinstance(v, (str, bytes, int, float, complex)):
                held = "is" if arr.ndim == 0 else f"holds {v!r}, which is"
                raise ParameterValueError(f"{name}: {x!r} {held} no number or text an ONNX tensor holds")
    return Tensor.from_numpy(arr, name=name)


def _param(spec: OpSpec, param: Param, value: object) -> object:
    """One parameter checked by its kind: an int, a list of ints (one int is
    a list of one), a str; an int with choices is one of them."""
    if value is None:
        return value
    if param.kind == "str":  # mode=1 was taken as the string '1' ("mode '1' is not DCR or CRD"), as STRING attributes are
        if not isinstance(value, str):
            raise ParameterTypeError(f"{spec.op_type}: {param.name} must be a string, got {value!r}")
        return value
    if param.kind == "ints":
        return _ints(value, spec.op_type, param.name)
    if param.choices:
        rule = f"{param.name} must be {' or '.join(param.choices)}, got {value!r}"
        if not _is_index(value):
            raise ParameterTypeError(rule)
        if str(int(value)) not in param.choices:  # type: ignore[call-overload]
            raise ParameterValueError(rule)
        return int(value)  # type: ignore[call-overload]
    if param.type_name and not _is_index(value):  # a type: its name, or a numpy dtype
        import numpy as np

        from .core.tensor import type_number

        name = value if isinstance(value, str) else getattr(np.dtype(value) if _is_dtype(value) else None, "name", "")
        found = type_number(str(name))
        if found is None:
            raise ParameterValueError(f"{spec.op_type}: {param.name} must be a type name, a numpy dtype or a "
                                      f"TensorProto number, got {value!r}")
        return found
    return _int(value, spec.op_type, f"{param.name} must be an integer")


def _is_dtype(value: object) -> bool:
    import numpy as np

    try:
        np.dtype(value)  # type: ignore[call-overload]
    except TypeError:
        return False
    return not isinstance(value, (int, float))


def _typed(value: object, dtype: Any, label: str, name: str) -> object:
    """An input as given, or a Python number or list as ``dtype`` (``_literal``); a list numpy cannot type
    (ragged, holding None or text) is left for ``to_tensor`` to refuse by what it holds."""
    import numpy as np

    if dtype is None or isinstance(value, (np.ndarray, np.generic)):
        return value
    try:
        given = np.asarray(value)
    except ValueError:  # ragged
        return value
    if given.dtype == object and not all(isinstance(v, (int, float)) for v in given.reshape(-1).tolist()):
        return value
    return _literal(value, dtype, label, name)


def _literal(value: object, dtype: Any, label: str, name: str) -> np.ndarray:
    """A Python number or list as an array of ``dtype``, refused where an integer type would change a
    value (overflow, a fraction, NaN) instead of wrapping or truncating it as numpy's astype does:
    ``pad(int8_array, pads, constant_value=128)`` is no -128. A float type rounds, as a Cast does
    (1e300 is a float16 inf); an int no float64 holds is refused."""
    import numpy as np

    given = np.asarray(value)
    try:
        with np.errstate(all="ignore"):  # what changed is judged below, not warned about
            arr = given.astype(dtype.numpy)
    except (OverflowError, ValueError, TypeError):
        arr = None
    integer = dtype.onnx_name.startswith(("int", "uint")) or dtype.onnx_name == "bool"
    if arr is not None and not integer:
        return arr
    kept = arr is not None and all(
        int(a) == v for a, v in zip(arr.reshape(-1).tolist(), given.reshape(-1).tolist()))
    if not kept:
        raise ParameterValueError(f"{label}: {name} {value!r} cannot be {dtype} without changing a value")
    return arr
