"""The values of the tensor operators' options (cli/tensor_ops.py): option names, literal
lists as tensors of the right type, tensor files (``.npz:member``), tensor
attributes, and the secondary inputs of a job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..ops import OpSpec, Param

TENSOR_SUFFIXES = (".npy", ".npz", ".pb")


def option_name(name: str) -> str:
    """``constant_value`` -> ``--constant-value``; ``X`` -> ``--x``."""
    return "--" + name.replace("_", "-").lower()


# ------------------------------------------------------------ values


def is_file(text: str) -> bool:
    base = text.split(":", 1)[0] if ".npz:" in text else text
    return base.lower().endswith(TENSOR_SUFFIXES)


def read_input(text: str, what: str):
    """A secondary input given as a file: ``x.npy``, ``x.pb``, ``w.npz`` (one
    member) or ``w.npz:NAME``."""
    from .. import io

    member = None
    path = text
    if ".npz:" in text:
        path, member = text.split(".npz:", 1)
        path += ".npz"
    tensor = io.read_tensor(Path(path), member)
    tensor.source = tensor.source or path
    return tensor


def literal(text: str, dtype, op: str, what: str):
    """A literal list (``1,2,-3``; ``nan``, ``-0.0`` and ``inf`` for floats)
    as a tensor of ``dtype``; one value is a rank-0 tensor only where the
    input takes a scalar (the op's plan says)."""
    import numpy as np

    from .repeats import joined
    from ..core.tensor import Tensor

    text = joined(text)
    parts = [p.strip() for p in text.split(",")] if text.strip() else []
    try:
        if dtype.is_string:
            values = np.array(parts, dtype=object)
        elif dtype.onnx_name == "bool":
            table = {"1": True, "0": False, "true": True, "false": False}
            values = np.array([table[p.lower()] for p in parts], dtype=bool)
        elif dtype.onnx_name.startswith(("int", "uint")):
            ints = [int(p, 0) for p in parts]
            lo, hi = _int_range(dtype)  # checked as Python ints: int64 and uint64 too (-1 is no uint64)
            bad = [v for v in ints if not lo <= v <= hi]
            if bad:
                raise UsageError(f"{op}: {what} {bad[0]} is out of range [{lo}, {hi}] for {dtype}")
            wide = np.uint64 if dtype.onnx_name == "uint64" else np.int64
            values = np.array(ints, dtype=wide).astype(dtype.numpy)
        else:
            with np.errstate(all="ignore"):  # "1e300" to float16 is inf, as a Cast makes it: no numpy warning
                values = np.array([float(p) for p in parts], dtype=np.float64).astype(dtype.numpy)
    except (ValueError, KeyError):
        raise UsageError(f"{op}: {what} must be a comma-separated list of {dtype} values or a tensor file "
                         f"({', '.join(TENSOR_SUFFIXES)}), got {text!r}") from None
    return Tensor.from_numpy(values, name=what.lstrip("-").replace("-", "_"), dtype=dtype)


def _int_range(dtype) -> tuple[int, int]:
    bits = dtype.bits
    if dtype.onnx_name.startswith("uint"):
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def tensor_attribute(spec: OpSpec, param: Param, text: str):
    """A tensor-valued attribute: a tensor file's values, or one number (float32)."""
    import numpy as np

    if is_file(text):
        return read_input(text, param.option).to_numpy()
    try:
        with np.errstate(all="ignore"):  # "1e300" is inf, without numpy's warning
            return np.array([float(text)], dtype=np.float32)
    except ValueError:
        raise UsageError(f"{spec.op_type}: {param.option} must be a number or a tensor file, got {text!r}") from None


def attribute_value(spec: OpSpec, param: Param, text: str) -> object:
    from .params import parse

    if param.kind == "float":
        try:
            return float(text)
        except ValueError:
            raise UsageError(f"{spec.op_type}: {param.option} must be a number, got {text!r}") from None
    kind = param.kind
    if kind == "tensor":  # an input in other opsets, an attribute in this one: a list of its literals' type
        floats = any(getattr(v, "literal_types", {}).get(param.name) == "float" for v in spec.versions)
        kind = "floats" if floats else "ints"
    return parse(spec, Param(param.name, kind, param.help, param.example, empty_ok=True, choices=param.choices,
                             type_name=param.type_name), text)


def secondary(op, texts: dict[str, str], first) -> dict[str, Any]:
    """The secondary inputs: files read (headers), literals as tensors of the
    type their constraint takes (int64 for indices and pads; for an input of
    the data's type, the type of the first tensor of that type given)."""
    from ..core.tensor import dtype_by_name

    out: dict[str, Any] = {}
    for name, text in texts.items():
        if is_file(text):
            out[name] = read_input(text, option_name(name))
    typed = [t for n, t in [(op.inputs[0], first), *out.items()] if op.input_types.get(n, "T") == "T" and t is not None]
    data_dtype = typed[0].dtype if typed else None
    for name, text in texts.items():
        if name in out:
            continue
        what = option_name(name)
        constraint = op.input_types.get(name, "T")
        if name in getattr(op, "literal_types", {}):
            dtype = dtype_by_name(op.literal_types[name])
        elif constraint == "T":
            if data_dtype is None:
                raise UsageError(f"{op.op_type}: give {what} as a tensor file: its type cannot be told from a list")
            dtype = data_dtype
        else:
            allowed = op.constraint_types(constraint)
            dtype = dtype_by_name("int64" if "int64" in allowed else ("bool" if "bool" in allowed else sorted(allowed)[0]))
        out[name] = literal(text, dtype, op.op_type, what)
    return out
