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
``InputError``, ``OutputError``, ``GpuError``, ``NoAdapterError``); ``help(onnxop_cli.api)``
says which raises what. The command line is ``onnxop --help``.
"""

from __future__ import annotations

from typing import Any

from .errors import GpuError, InputError, NoAdapterError, OnnxopError, OpError, OutputError, UsageError

__version__ = "0.1.0"  # the package's version (pyproject.toml reads it from here)

# The API is imported on first use, so `import onnxop_cli` (and `onnxop --help`)
# stays fast: api pulls in numpy and the core. Its names are the registry's (one
# function per ops.SPECS entry, api.py makes them); reading them imports ops only.
_ERRORS = ["OnnxopError", "UsageError", "OpError", "InputError", "OutputError", "GpuError", "NoAdapterError"]


def _functions() -> list[str]:
    """The API's function names, in registry order (``slice_`` for Slice).
    The root sits above every layer but is imported by some (gpu.choose reads
    ``__version__``), so it reaches ops, as api, only when asked, by name."""
    import importlib

    return [spec.api_name for spec in importlib.import_module(".ops", __name__).SPECS.values()]


def __getattr__(name: str) -> Any:
    if name == "__all__":  # `from onnxop_cli import *`, pydoc: every function and the errors
        return [*_functions(), *_ERRORS]
    if name == "api" or (not name.startswith("__") and name in _functions()):
        import importlib

        module = importlib.import_module(".api", __name__)
        return module if name == "api" else getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_functions()) | {"api", "__all__"})
