"""onnxop: ONNX's data-movement operators run as WGSL kernels on a WebGPU adapter.

The Python API works on numpy arrays (and ml_dtypes arrays) and runs the same
GPU path as the ``onnxop`` command::

    >>> import numpy as np
    >>> from onnxop_cli import flatten, unsqueeze
    >>> flatten(np.zeros((2, 3, 4), np.float32), axis=1).shape
    (2, 12)
    >>> unsqueeze(np.zeros((3, 4), np.float32), [0, 3]).shape
    (1, 3, 4, 1)

- ``flatten(x, axis=1, *, opset=28, backend=None, engine=None)``
- ``unsqueeze(x, axes, *, opset=28, backend=None, engine=None)``
- ``transpose(x, perm=None)``, ``slice_(x, starts, ends, axes=None, steps=None)``,
  ``expand(x, shape)``, ``tile(x, repeats)``, ``reshape(x, shape, *, allowzero=None)``,
  ``squeeze(x, axes=None)``, ``identity(x)``, ``depth_to_space(x, blocksize, mode=None)``,
  ``space_to_depth(x, blocksize, mode=None)``: the same keywords (opset, backend, engine)

Errors raise ``OnnxopError`` subclasses (``UsageError``, ``OpError``,
``InputError``, ``GpuError``, ``NoAdapterError``); ``help(onnxop_cli.api)``
says which raises what. The command line is ``onnxop --help``.
"""

from __future__ import annotations

from typing import Any

from .errors import GpuError, InputError, NoAdapterError, OnnxopError, OpError, UsageError

__version__ = "0.1.0"  # the package's version (pyproject.toml reads it from here)

# The API is imported on first use, so `import onnxop_cli` (and `onnxop --help`)
# stays fast: api pulls in the operators and the core.
OPERATOR_FUNCTIONS = (
    "flatten", "unsqueeze", "identity", "reshape", "squeeze", "transpose", "expand", "slice_", "tile",
    "depth_to_space", "space_to_depth",
)
# the operators with tensor inputs (api_family.py makes them from the registry;
# tests/test_family_infra.py holds this list to it)
FAMILY_FUNCTIONS = (
    "concat", "split", "where", "pad", "trilu", "constant_of_shape", "eye_like", "shape", "size",
    "center_crop_pad", "compress", "one_hot", "bit_cast",
    "gather", "gather_elements", "gather_nd", "scatter_elements", "scatter_nd", "scatter", "tensor_scatter",
    "reverse_sequence",
)
_LAZY = {**{name: "api" for name in OPERATOR_FUNCTIONS}, **{name: "api_family" for name in FAMILY_FUNCTIONS},
         "api": None}

__all__ = [
    *OPERATOR_FUNCTIONS,
    *FAMILY_FUNCTIONS,
    "OnnxopError",
    "UsageError",
    "OpError",
    "InputError",
    "GpuError",
    "NoAdapterError",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module = importlib.import_module("." + (_LAZY[name] or "api"), __name__)
        return module if name == "api" else getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
