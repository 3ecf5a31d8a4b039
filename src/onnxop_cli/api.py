"""The Python API: ONNX's data-movement operators on numpy arrays, on the GPU.

    >>> import numpy as np
    >>> from onnxop_cli import flatten, unsqueeze
    >>> a = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    >>> flatten(a, axis=-2).shape
    (6, 20)
    >>> unsqueeze(a, [0, 5]).shape
    (1, 2, 3, 4, 5, 1)

There is one function per operator of the registry (``ops.SPECS``), made
from its spec as the CLI's commands are: its parameters, their order and
defaults, and its docstring (the spec's ``api_doc``) come from there, so a
new operator needs nothing here.

Every function runs the same path as the ``onnxop`` command: the ONNX shape
rule of the chosen opset and the node's index map (pure Python), then the
array's bytes through the WGSL copy kernel (reshapes) or gather kernel
(layout changes) on a WebGPU adapter and back. The result is a new
C-contiguous array whose elements are the input's, bit for bit (NaN payloads
and -0.0 included). ``transpose``, ``slice_``, ``expand``, ``tile``,
``reshape``, ``squeeze``, ``identity``, ``depth_to_space`` and
``space_to_depth`` take the operator's parameters by their ONNX names.

The operators with tensor inputs (Concat, Split, Pad, Where, Gather, ...)
take their ONNX inputs positionally, in schema order (a variadic input
takes any number); attributes and the other inputs are keywords by their
ONNX names in lower case (``pads=[0, 1]``, ``constant_value=np.float32(np.nan)``,
``x=a, y=b``). An input may be an array or a list (int64 for indices and
pads, the data's type otherwise); ``None`` in an optional input's place
leaves it out (``resize(x, None, scales)``). One output is an array; several (Split)
a list of arrays:

    >>> from onnxop_cli import concat
    >>> concat(np.zeros((2, 1), np.int8), np.ones((2, 2), np.int8), axis=1)
    array([[0, 1, 1],
           [0, 1, 1]], dtype=int8)

Arrays of every fixed-width ONNX type work, including ml_dtypes' bfloat16,
float8, and the 4- and 2-bit types. Errors raise the project's exceptions
(all subclasses of :class:`onnxop_cli.OnnxopError`, each with ``.message``
and ``.exit_code``):

- ``OpError`` (a ``UsageError``): the operator's rules refused the request, e.g.
  ``Flatten: axis 5 is out of range [-4, 4] for an input of rank 4``, or a type
  the opset does not allow;
- ``UsageError``: an opset or backend that does not exist, an axis that is
  not an integer;
- ``InputError``: an array onnxop cannot take (an object array holding
  anything but text, a dtype with no ONNX type such as datetime64);
- ``NoAdapterError`` / ``GpuError``: no WebGPU adapter, or WebGPU failed.

The backend is ``"auto"`` (the best adapter found), ``"vulkan"``, ``"metal"``,
``"d3d12"`` or ``"gl"``; ``None`` means ``$ONNXOP_BACKEND`` or ``"auto"``. A
process opens one WebGPU instance, for the backend of its first call: use
one backend per process.

The engine is ``"wgpu"`` (wgpu-native, the default), ``"dawn"`` (Dawn, with
``pip install 'onnxop[dawn]'``) or ``"browser"`` (headless Chromium's WebGPU,
with ``pip install 'onnxop[browser]'`` and a Chromium); ``None`` means
``$ONNXOP_ENGINE`` or ``"wgpu"``.

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

import inspect
from typing import TYPE_CHECKING, Any, Callable

from .errors import UsageError
from .ops import LATEST_OPSET, SPECS, Node, OpSpec, make_node, op_version
from .ops.tensor_nodes import is_tensor_op
from .ops.spec import Param

if TYPE_CHECKING:
    import numpy as np

    from .core.tensor import Tensor


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


# ---------------------------------------------------------------- the functions, made from the registry

_KEYWORDS = ("opset", "backend", "engine")  # every function's keyword-only tail


def _view_function(spec: OpSpec) -> Callable[..., Any]:
    """An operator of one data input and parameters (ops/flatten.py ...): its
    parameters are the latest version's, in the spec's order; one the latest
    version requires comes without a default."""
    latest = spec.versions[-1]
    params = [p for p in spec.params if p.name in latest.params()]
    empty = inspect.Parameter.empty
    signature = inspect.Signature([
        inspect.Parameter("x", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        *(inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY if p.keyword_only
                            else inspect.Parameter.POSITIONAL_OR_KEYWORD,
                            default=empty if p.name not in latest.optional else p.default) for p in params),
        *(inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=LATEST_OPSET if k == "opset" else None)
          for k in _KEYWORDS),
    ])

    def run(*args: Any, **kwargs: Any) -> np.ndarray:
        given = signature.bind(*args, **kwargs)
        given.apply_defaults()
        values = given.arguments
        opset = _opset(values["opset"])
        node = make_node(spec.op_type, opset, **{p.name: _param(spec, p, values[p.name]) for p in params})
        return _run(node, values["x"], values["backend"], values["engine"])

    run.__signature__ = signature  # type: ignore[attr-defined]
    return run


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


def _tensor_op_function(spec: OpSpec) -> Callable[..., Any]:
    """An operator of tensor inputs (ops/tensor_op.py): inputs positional,
    attributes and the other inputs by name."""

    def run(*inputs: Any, opset: int = LATEST_OPSET, backend: str | None = None, engine: str | None = None,
            **params: Any) -> Any:
        import numpy as np

        from .core import apply_tensors
        from .core.tensor import dtype_by_name
        from .ops.attributes import schema_types

        op = op_version(spec.op_type, _opset(opset))
        label = f"{op.op_type}-{op.since_version}"
        kinds = schema_types(op.op_type, op.since_version, "")  # attribute -> "INT", "INTS", "FLOAT", ...
        names = {n.lower(): n for n in (*op.attribute_names, *op.inputs)}
        attributes: dict[str, object] = {}
        extra: dict[str, Any] = {}
        for key, value in params.items():
            if value is None:
                continue
            name = names.get(key.lower())
            if name is None:
                raise UsageError(f"{label} (opset {opset}) has no {key} (it takes {', '.join(names) or 'nothing'})")
            if name in op.attribute_names:
                param = next((p for p in spec.params if p.name == name and p.type_name), None)
                if param is not None:  # a type: its name, a numpy dtype or its number
                    value = _param(spec, param, value)
                kind = kinds.get(name)
                if kind == "TENSOR":  # what no tensor holds, by what it holds: value=[None] was int()'s TypeError,
                    to_tensor(value, name=name)  # value=2**70 'no opset allows string'
                number = float if getattr(op, "literal_types", {}).get(name) == "float" else int
                attributes[name] = [number(v) for v in value] if isinstance(value, (list, tuple)) else value
                # an INT or INTS attribute takes integers only (axis=1.5 was taken as 1, upper=0.5 as 0, axis=[1]
                # was a TypeError), each an int64, as the view functions' parameters are checked
                if kind == "INT":
                    attributes[name] = _int(value, label, f"{name} must be an integer")
                elif kind == "INTS":
                    attributes[name] = _ints(value, label, name)
                elif kind == "STRING" and not isinstance(value, str):
                    raise ParameterTypeError(f"{label}: {name} must be a string, got {value!r}")
                elif kind == "FLOAT":  # cubic_coeff_a='x' and extrapolation_value=[1.0] were taken without a word
                    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer,
                                                                                      np.floating)):
                        raise ParameterTypeError(f"{label}: {name} must be a number, got {value!r}")
                    attributes[name] = float(value)
            else:
                extra[name] = value
        if op.variadic and any(x is None for x in inputs):
            raise UsageError(f"{label}: input {[x is None for x in inputs].index(True)} is None; its "
                             f"{op.inputs[0]} are arrays, none of them can be left out")
        # None in an input's place leaves that input out, as an empty name does in a node. A Python number or list
        # takes its input's type, positional or by name alike: the data's (T), int64 for indices and pads, the
        # literal type of OneHot's and Resize's; the data input's own type is numpy's, or for a variadic input
        # the first array's (concat(int8_array, [[9]]) was refused as int8 and int64)
        if not op.variadic and len(inputs) > len(op.inputs):
            raise UsageError(f"{label} takes {len(op.inputs)} input(s) ({', '.join(op.inputs)}), "
                             f"{len(inputs)} were given")
        if op.variadic:
            names_given = [f"{op.inputs[0]}_{i}" for i in range(len(inputs))]
            first = next((i for i, x in enumerate(inputs) if isinstance(x, (np.ndarray, np.generic))), None)
        else:
            inputs = (*inputs, *(extra.pop(n, None) for n in op.inputs[len(inputs):]))
            names_given, first = list(op.inputs), op.data_input

        def target(i: int) -> Any:
            name = names_given[i]
            constraint = "T" if op.variadic else op.input_types.get(name, "T")
            if name in getattr(op, "literal_types", {}):
                return dtype_by_name(op.literal_types[name])
            if i == first:
                return None
            if constraint == "T":
                return data
            allowed = op.constraint_types(constraint)
            return dtype_by_name("int64") if "int64" in allowed else (
                dtype_by_name("bool") if "bool" in allowed else None)

        given = None if first is None or inputs[first] is None else to_tensor(
            _typed(inputs[first], target(first), label, names_given[first]), names_given[first])
        data = given.dtype if given is not None else None
        tensors: list[Any] = [given if i == first else None if x is None else
                              to_tensor(_typed(x, target(i), label, names_given[i]), name=names_given[i])
                              for i, x in enumerate(inputs)]
        while not op.variadic and len(tensors) > 1 and tensors[-1] is None:
            tensors.pop()
        if extra:
            raise UsageError(f"{label}: {', '.join(extra)} given both positionally and by name")
        result = apply_tensors.apply_node(Node(op, attributes, opset=opset), tensors, backend=_gpu_key(backend, engine))
        arrays = [t.to_numpy(fixed_width=True) for t in result.outputs]
        return arrays if (op.variadic_output or len(op.outputs) > 1) else arrays[0]

    return run


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


def _function(spec: OpSpec) -> Callable[..., Any]:
    run = (_tensor_op_function if is_tensor_op(spec.versions[0]) else _view_function)(spec)
    run.__name__ = run.__qualname__ = spec.api_name
    run.__module__ = __name__
    run.__doc__ = spec.api_doc or f"ONNX {spec.op_type}: {spec.description}\n\nExample (CLI): {spec.example}"
    return run


FUNCTIONS: dict[str, Callable[..., Any]] = {spec.api_name: _function(spec) for spec in SPECS.values()}
globals().update(FUNCTIONS)
__all__ = list(FUNCTIONS)
