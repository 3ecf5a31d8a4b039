"""What every runtime of ``conformance --runtime`` shares (docs/runtimes/__init__.py):
the outcomes it raises, a session, and the conversions between onnxop's
tensors and a runtime's arrays."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Sequence

class Lacks(Exception):
    """The runtime, or its adapter here, has no implementation of the operator or a type."""


class Refused(Exception):
    """The runtime refused the model or the inputs; the message is its own."""


class NotOnWebGPU(Exception):
    """A WebGPU runtime ran the node somewhere else (its CPU fallback)."""


class Broke(Exception):
    """The runtime itself failed (its browser died, or did not answer within
    the time limit): an error, whatever the case expects."""


class Session(Protocol):
    def run(self, feeds: Sequence[Any]) -> list[Any]:
        """The outputs (onnxop Tensors, in the model's order) for ``feeds`` (Tensors, in its input order)."""


@dataclass(frozen=True)
class Loaded:
    session: Session
    operator: str | None = None  # "Flatten-25": the rules that ran, where the runtime says
    opset: int | None = None  # the opset it read, where it says


class Runtime(Protocol):
    name: str  # as --runtime takes it: "onnxruntime:CPUExecutionProvider"
    webgpu: bool

    def load(self, model: Any, folder: Path) -> Loaded:
        """The session for one case's model (read, not yet checked by onnxop)."""


def message(e: BaseException, limit: int = 300) -> str:
    """An exception as one line: its class and its words, shortened."""
    text = " ".join(str(e).split())
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


# What onnxruntime and onnx.backend modules raise when they have no kernel
# for an operator or a type (onnxruntime's NotImplemented, Python's own).
LACKS = ("NotImplemented", "NotImplementedError", "Unsupported")


def lacks(e: BaseException) -> bool:
    """Whether ``e`` says the runtime has no implementation. A ``unittest.SkipTest`` is how an onnx.backend module
    says so to onnx's runner (onnxop's own backend's NotRun, the runner's BackendIsNotSupposedToImplementIt): each
    of onnxop's 72 float-arithmetic cases through ``backend:onnxop_cli.backend`` was an 'error' for it."""
    import unittest

    return isinstance(e, unittest.SkipTest) or type(e).__name__ in LACKS or "not implemented" in str(e).lower() or \
        "Could not find an implementation" in str(e)


def refusal(e: BaseException) -> Exception:
    """What a runtime's exception means here: Lacks or Refused, with its message."""
    passthrough(e)
    return (Lacks if lacks(e) else Refused)(message(e))


def passthrough(e: BaseException) -> None:
    """A signal that ends the run (Interrupted, raised wherever the main thread
    was, inside a runtime too) is raised again: it is never one case's error."""
    from ...errors import Interrupted

    if isinstance(e, Interrupted):
        raise e


def tensors(arrays: Sequence[Any], names: Sequence[str]) -> list[Any]:
    """A runtime's numpy outputs as onnxop Tensors; a type numpy cannot hold here is Lacks."""
    import numpy as np

    from ...core.tensor import Tensor

    out = []
    for array, name in zip(arrays, names):
        array = np.asarray(array)
        try:
            out.append(Tensor.from_numpy(array, name))
        except Exception as e:  # noqa: BLE001 - a dtype onnxop cannot map
            passthrough(e)
            raise Lacks(f"output {name!r} came back as numpy {array.dtype}, which onnxop cannot read: {message(e)}") from None
    return out


def arrays(feeds: Sequence[Any]) -> list[Any]:
    """Inputs as numpy arrays (the 2- and 4-bit types unpacked, one value a byte, as ml_dtypes holds them)."""
    return [t.to_numpy() for t in feeds]
