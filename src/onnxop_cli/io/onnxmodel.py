""".onnx models as tensor files (read only): their initializers, by name.

``onnxop show model.onnx`` lists every initializer of the main graph, and
``-m NAME`` picks one as an operator's input, as it picks an ``.npz`` member.
The model is parsed by onnx without its external data; each initializer is
then read as a ``.pb`` is (tensorproto.py), with the same safety rules:
external data only from a regular file inside the model's own folder, sizes
checked against the dims before anything is allocated, and a model too large
for protobuf refused from its size. Nothing in the model is run.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError, UsageError
from ..core.tensor import Tensor
from .tensorproto import MAX_MESSAGE, tensor_from_proto

SUFFIX = ".onnx"


class NoInitializers(UsageError):
    """A model with no initializer, where tensors were asked for: ``show``
    lists its inputs and outputs instead (``model`` is the parsed model)."""

    def __init__(self, message: str, model) -> None:
        super().__init__(message)
        self.model = model


def load_model(path: Path):
    """The ModelProto in ``path``, without its external data; refused in one
    line when it is too large for protobuf or not a model."""
    import onnx
    from google.protobuf.message import DecodeError

    path = Path(path)
    label = str(path)
    size = path.stat().st_size
    if size > MAX_MESSAGE:
        raise InputError(
            f"{label}: {size} bytes is more than an ONNX model can hold (protobuf messages stay "
            "under 2 GiB); a larger model keeps its weights in external data files"
        )
    model = onnx.ModelProto()
    try:
        model.ParseFromString(path.read_bytes())
    except DecodeError as e:
        raise InputError(f"{label}: not an ONNX model ({e})") from None
    except (RuntimeError, ValueError, MemoryError) as e:  # upb's limits (recursion, size)
        raise InputError(f"{label}: not an ONNX model ({type(e).__name__}: {e})") from None
    return model


def read_onnx(path: Path, member: str | None = None) -> list[Tensor]:
    """The initializers of the model in ``path`` (only ``member`` if given)."""
    path = Path(path)
    label = str(path)
    model = load_model(path)
    inits = list(model.graph.initializer)
    names = [i.name for i in inits]
    if member is not None:
        inits = [i for i in inits if i.name == member]
        if not inits:
            raise UsageError(f"{label}: no initializer {member!r}; the model holds {describe(names)}")
        if len(inits) > 1:
            raise InputError(f"{label}: the model holds more than one initializer named {member!r}")
    if not inits:
        raise NoInitializers(f"{label}: the model holds no initializers", model)
    return [tensor_from_proto(i, path.parent, f"{label}[{i.name}]", f"initializer_{n}") for n, i in enumerate(inits)]


def describe(names: list[str]) -> str:
    from .npz import describe as listing

    return listing(names).replace("arrays", "initializers", 1)
