"""``import onnx`` without what onnxop's model reading does not use.

onnx's ``__init__`` imports its helpers, and their dtype tables import
ml_dtypes, whose extension registers its casts and ufunc loops with numpy:
about 1.0 CPU-second of the 1.1 that ``import onnx`` costs here (numpy
compares each new loop with every one it holds). Reading a model, a
TensorProto or a sequence needs only the protobuf classes (a few ms), and
shape inference and the operator schemas need onnx's C++ extension, not
the helpers.

:func:`install` puts onnx's package module in ``sys.modules`` before its
``__init__`` has run: its submodules import as usual (``onnx.onnx_ml_pb2``,
``onnx.defs``, ``onnx.shape_inference``), the protobuf classes it
re-exports (``onnx.ModelProto``, ``from onnx import TensorProto``) come from
the generated modules, and any other name (``onnx.load``, ``onnx.helper``,
``onnx.reference``'s imports) runs the real ``__init__`` in that same module
first, so every class and function is onnx's own, whichever came first.
(docs/performance.md, "Start-up"; tests/process/test_startup_lazy.py.)
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
import types
from typing import Any

# The generated modules whose names onnx's __init__ re-exports (from onnx.onnx_pb,
# onnx.onnx_operators_pb, onnx.onnx_data_pb: each is `from .<x>_pb2 import *`).
_PROTOS = ("onnx.onnx_pb", "onnx.onnx_operators_pb", "onnx.onnx_data_pb")
_SUBMODULES = frozenset({"onnx_cpp2py_export", "onnx_ml_pb2", "onnx_pb", "onnx_operators_ml_pb2",
                         "onnx_operators_pb", "onnx_data_pb2", "onnx_data_pb", "defs", "shape_inference",
                         "serialization"})
_lock = threading.RLock()
_loading: list[types.ModuleType] = []  # the package while its __init__ runs


class _Package(types.ModuleType):
    """onnx's package before its ``__init__`` ran (see the module's doc)."""

    def __getattr__(self, name: str) -> Any:
        if name in _SUBMODULES or (name[:2] == "__" and name not in ("__all__", "__version__")):
            raise AttributeError(name)  # a submodule the import system loads alone, or what it probes for
        with _lock:  # another thread asking meanwhile waits for the whole of onnx
            if type(self) is _Package and not _loading:
                for proto in _PROTOS:
                    found = getattr(importlib.import_module(proto), name, None)
                    if found is not None and not isinstance(found, types.ModuleType) and name != "DESCRIPTOR":
                        setattr(self, name, found)
                        return found
                _loading.append(self)  # onnx's own modules, asking for a name it has not set yet: AttributeError
                try:
                    self.__spec__.loader.exec_module(self)
                except BaseException:
                    sys.modules.pop(self.__name__, None)  # as a failed import leaves it: tried again next time
                    raise
                finally:
                    _loading.clear()
                self.__class__ = types.ModuleType  # a plain module from here on
        return object.__getattribute__(self, name)


def install() -> None:
    """Make a later ``import onnx`` in this process the deferred package
    (nothing if onnx is already imported or not installed)."""
    with _lock:
        if "onnx" in sys.modules:
            return
        spec = importlib.util.find_spec("onnx")
        if spec is None or spec.loader is None or not spec.submodule_search_locations:
            return
        module = _Package("onnx")
        module.__spec__, module.__loader__, module.__file__ = spec, spec.loader, spec.origin
        module.__path__, module.__package__ = list(spec.submodule_search_locations), "onnx"
        sys.modules["onnx"] = module


def load_model(path: str) -> Any:
    """``onnx.load(path, load_external_data=False)``, line for line (onnx's
    ``load_model``: the format from the file's extension, else protobuf;
    the whole file read, then onnx's serializer), without onnx's ``__init__``."""
    from onnx import ModelProto, serialization

    _, ext = os.path.splitext(os.path.abspath(path))
    fmt = serialization.registry.get_format_from_file_extension(ext) or "protobuf"
    with open(path, "rb") as readable:
        content = readable.read()
    return serialization.registry.get(fmt).deserialize_proto(content, ModelProto())


def infer_shapes(model: Any) -> Any:
    """``onnx.shape_inference.infer_shapes(model, strict_mode=False)`` as it
    does it (its C++ inference on the model's bytes, read back as a ModelProto
    by onnx's protobuf serializer), without the ``onnx.load_from_string`` that
    runs onnx's ``__init__``. Raises what the inference raises."""
    import onnx.onnx_cpp2py_export.shape_inference as C  # noqa: N812 - onnx's own name for it
    from onnx import ModelProto, serialization

    inferred = C.infer_shapes(model.SerializeToString(), False, False, False)  # check_type, strict_mode, data_prop
    return serialization.registry.get("protobuf").deserialize_proto(inferred, ModelProto())


def loaded() -> bool:
    """Whether onnx's ``__init__`` has run in this process (tests)."""
    module = sys.modules.get("onnx")
    return module is not None and type(module) is not _Package
