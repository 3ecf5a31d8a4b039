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

from .api_values import ParameterTypeError, to_tensor
from .api_values import ParameterValueError as ParameterValueError  # onnxop_cli.api's name too
from .api_values import _gpu_key, _int, _ints, _opset, _param, _typed
from .errors import UsageError
from .ops import LATEST_OPSET, SPECS, Node, OpSpec, make_node, op_version
from .ops.tensor_nodes import is_tensor_op

if TYPE_CHECKING:
    import numpy as np


def _run(node: Node, x: np.ndarray, backend: str | None, engine: str | None = None) -> np.ndarray:
    """The one path: shape rule, then the GPU copy (core.apply), then numpy."""
    from .core import apply as core

    key = _gpu_key(backend, engine)
    tensor = to_tensor(x)
    result = core.apply(node, tensor, backend=key)
    return result.output.to_numpy(fixed_width=True)  # numpy text keeps its dtype (|S2 stays |S2)


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


def _function(spec: OpSpec) -> Callable[..., Any]:
    run = (_tensor_op_function if is_tensor_op(spec.versions[0]) else _view_function)(spec)
    run.__name__ = run.__qualname__ = spec.api_name
    run.__module__ = __name__
    run.__doc__ = spec.api_doc or f"ONNX {spec.op_type}: {spec.description}\n\nExample (CLI): {spec.example}"
    return run


FUNCTIONS: dict[str, Callable[..., Any]] = {spec.api_name: _function(spec) for spec in SPECS.values()}
globals().update(FUNCTIONS)
__all__ = list(FUNCTIONS)
