"""The runtimes ``onnxop conformance --runtime NAME`` checks, behind one small interface.

A runtime loads a case's model into a ``Session`` and runs a data set's
inputs, returning the outputs as onnxop Tensors (so every runtime's bytes are
compared by the same code). It raises ``Lacks`` when it (or its adapter here)
has no implementation of the operator or a type (the case is skipped, with
the reason) and ``Refused`` when it refuses the model or the inputs (an error
when the case is valid, the right answer when the spec requires one). A
WebGPU runtime (``webgpu = True``) may say a node ran elsewhere by raising
``NotOnWebGPU``. One module per runtime: ``onnxop`` (the default), ``ort``
(the onnxruntime package, any provider), ``backend`` (any onnx.backend module),
``ort_web`` (onnxruntime-web's WebGPU provider in headless Chromium: ort-web
and ort-web-jsep).
"""

from __future__ import annotations

from ...errors import UsageError
from .base import Broke, Lacks, Loaded, NotOnWebGPU, Refused, Runtime, Session  # noqa: F401 - the package's names

DEFAULT = "onnxop"


def resolve(name: str | None, backend: str | None = None, ort_web: str | None = None) -> Runtime:
    """The runtime ``--runtime NAME`` names; ``backend`` is onnxop's adapter (the default runtime's),
    ``ort_web`` the onnxruntime-web package folder (``--ort-web``)."""
    name = (name or DEFAULT).strip()
    kind, _, rest = name.partition(":")
    if kind == "onnxop" and not rest:
        from .onnxop import OnnxopRuntime

        return OnnxopRuntime(backend)
    if kind == "onnxruntime":
        from .ort import OrtRuntime

        return OrtRuntime(rest or None)
    if kind == "backend" and rest:
        from .backend import BackendRuntime

        return BackendRuntime(rest)
    if kind in ("ort-web", "ort-web-jsep") and not rest:
        from .ort_web import OrtWebRuntime

        return OrtWebRuntime(kind, ort_web)
    raise UsageError(
        f"--runtime {name!r}: not a runtime (onnxop; onnxruntime or onnxruntime:PROVIDER; "
        "backend:MODULE, an onnx.backend module such as backend:onnxruntime.backend; "
        "ort-web or ort-web-jsep, onnxruntime-web's WebGPU provider in headless Chromium)")
