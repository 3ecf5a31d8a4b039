"""The Python API of the operators with tensor inputs, one function per
registry entry (ops.SPECS), made from the spec as the CLI's commands are.

    >>> import numpy as np
    >>> from onnxop_cli import concat, split
    >>> concat(np.zeros((2, 1), np.int8), np.ones((2, 2), np.int8), axis=1)
    array([[0, 1, 1],
           [0, 1, 1]], dtype=int8)

The ONNX inputs are positional, in schema order (a variadic input takes any
number); attributes and the other inputs are keywords by their ONNX names in
lower case (``pads=[0, 1]``, ``constant_value=np.float32(np.nan)``,
``x=a, y=b``). An input may be an array or a list (int64 for indices and
pads, the data's type otherwise). One output is an array; several
(Split) a list of arrays.
"""

from __future__ import annotations

from typing import Any, Callable

from .ops import LATEST_OPSET, SPECS, OpSpec, op_version
from .ops.family import TensorOp


def _function(spec: OpSpec) -> Callable[..., Any]:
    def run(*inputs: Any, opset: int = LATEST_OPSET, backend: str | None = None, engine: str | None = None,
            **params: Any) -> Any:
        import numpy as np

        from .core import family as family_apply
        from .api import to_tensor
        from .errors import UsageError
        from .ops.base import Node
        from .core.tensor import dtype_by_name

        op = op_version(spec.op_type, opset)
        label = f"{op.op_type}-{op.since_version}"
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
                attributes[name] = [int(v) for v in value] if isinstance(value, (list, tuple)) else value
            else:
                extra[name] = value
        positional = [to_tensor(x, name=f"{op.inputs[0] if op.variadic else op.inputs[i]}" + (f"_{i}" if op.variadic else ""))
                      for i, x in enumerate(inputs)]
        tensors: list[Any] = list(positional)
        if not op.variadic:
            data = positional[op.data_input].dtype if len(positional) > op.data_input else None
            for name in op.inputs[len(positional):]:
                value = extra.pop(name, None)
                if value is None:
                    tensors.append(None)
                    continue
                constraint = op.input_types.get(name, "T")
                arr = np.asarray(value)
                if not isinstance(value, np.ndarray) and not isinstance(value, np.generic):
                    if name in getattr(op, "literal_types", {}):
                        arr = arr.astype(dtype_by_name(op.literal_types[name]).numpy)
                    elif constraint == "T" and data is not None:
                        arr = arr.astype(data.numpy)
                    elif constraint != "T":
                        allowed = op.constraint_types(constraint)
                        arr = arr.astype(np.int64 if "int64" in allowed else (bool if "bool" in allowed else arr.dtype))
                tensors.append(to_tensor(arr, name=name))
            while len(tensors) > 1 and tensors[-1] is None:
                tensors.pop()
        if extra:
            raise UsageError(f"{label}: {', '.join(extra)} given both positionally and by name")
        if engine is not None:
            from .gpu.device import gpu_key, resolve

            backend = gpu_key(*resolve(backend, engine))
        result = family_apply.apply_node(Node(op, attributes, opset=opset), tensors, backend=backend)
        arrays = [t.to_numpy(fixed_width=True) for t in result.outputs]
        return arrays if (op.variadic_output or len(op.outputs) > 1) else arrays[0]

    run.__name__ = run.__qualname__ = spec.python_name
    run.__doc__ = f"ONNX {spec.op_type}: {spec.description}\n\nExample (CLI): {spec.example}"
    return run


FUNCTIONS: dict[str, Callable[..., Any]] = {
    spec.python_name: _function(spec) for spec in SPECS.values() if issubclass(spec.versions[0], TensorOp)
}
globals().update(FUNCTIONS)
__all__ = list(FUNCTIONS)
