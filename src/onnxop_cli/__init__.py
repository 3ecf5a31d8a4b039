"""onnxop: ONNX Flatten and Unsqueeze run as WGSL copy kernels on a WebGPU adapter.

The Python API works on numpy arrays (and ml_dtypes arrays) and runs the same
GPU path as the ``onnxop`` command::

    >>> import numpy as np
    >>> from onnxop_cli import flatten, unsqueeze
    >>> flatten(np.zeros((2, 3, 4), np.float32), axis=1).shape
    (2, 12)
    >>> unsqueeze(np.zeros((3, 4), np.float32), [0, 3]).shape
    (1, 3, 4, 1)

- ``flatten(x, axis=1, *, opset=25, backend=None)``
- ``unsqueeze(x, axes, *, opset=25, backend=None)``

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
_LAZY = {"flatten": "api", "unsqueeze": "api", "api": None}

__all__ = [
    "flatten",
    "unsqueeze",
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

        module = importlib.import_module(".api", __name__)
        return module if name == "api" else getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
