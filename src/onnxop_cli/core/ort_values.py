"""onnxop's Tensors as onnxruntime's values and back, by ONNX type: the one
place where a tensor crosses to onnxruntime (``--others onnxruntime``,
``--verify``, ``conformance --runtime onnxruntime``; onnxruntime-web's
runtime sends the same bytes).

onnxruntime's numpy bridge has no bfloat16, float8, 4- or 2-bit types: it
refuses an ml_dtypes array (``Numpy_type 256 can't be converted to
MLDataType``), cannot give such an output back (``No corresponding Numpy
type``), and gives float8e4m3fn and float4e2m1 back as uint8, their bytes,
which read as values are other numbers. So each input is an OrtValue of its
ONNX type and shape filled with the bytes ONNX stores (packed where packed,
little-endian, row-major), and each output's bytes are copied out of
onnxruntime's memory into a Tensor of the type onnxruntime says it has:
nothing converted on our side. onnxruntime's Python API makes no OrtValue of
strings, so a run with a string input crosses as numpy arrays, and refuses a
type numpy lacks in one line. The caller has imported onnxruntime (it made
the session).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InputError, OnnxopError

if TYPE_CHECKING:
    import numpy as np

    from .tensor import Tensor


class Unheld(Exception):
    """A tensor onnxruntime has no type for (complex64), or one it made that onnxop has none for."""


def onnx_bytes(t: Tensor) -> np.ndarray:
    """The bytes ONNX stores for a tensor (not a string one): packed where packed, little-endian, row-major."""
    import numpy as np

    from .tensor import pack_subbyte

    if t.order == "C" and not t.byteswap:
        return t.data.to_array()  # (already so: no unpacking and packing again)
    values = t.to_numpy()
    return pack_subbyte(values, t.dtype) if t.dtype.is_packed else np.ascontiguousarray(values).view(np.uint8)


def value(t: Tensor, onnx_type: int | None = None) -> Any:
    """An OrtValue of ``t``'s shape and ONNX type (``onnx_type`` if given: a model's declared one) holding its
    bytes: where they lie for a type of whole bytes (onnxruntime reads them as elements of their width, no
    copy, as its numpy bridge read a numpy array), copied into onnxruntime's memory for a packed one."""
    import ctypes

    import onnxruntime

    if t.dtype.is_string:
        return onnxruntime.OrtValue.ortvalue_from_numpy(t.to_numpy())
    raw = onnx_bytes(t)
    width = t.dtype.itemsize
    kind = onnx_type or t.dtype.onnx_type
    try:
        if width in (1, 2, 4, 8):
            if raw.ctypes.data % width:  # (a .pb's raw_data mapped where the file has it: its elements aligned)
                raw = raw.copy()
            return onnxruntime.OrtValue.ortvalue_from_numpy_with_onnx_type(raw.view(f"<u{width}").reshape(t.shape),
                                                                           kind)
        made = onnxruntime.OrtValue.ortvalue_from_shape_and_type(list(t.shape), kind)
    except OnnxopError:  # (Interrupted, raised wherever the main thread was)
        raise
    except Exception as e:  # noqa: BLE001 - onnxruntime raises its own kinds (complex64: it has no such type)
        text = " ".join(str(e).split())
        raise Unheld(f"input {t.name!r} ({t.dtype.name}) cannot be made an onnxruntime value: "
                     f"{type(e).__name__}: {text}") from None
    if made.tensor_size_in_bytes() != raw.nbytes:
        raise Unheld(f"input {t.name!r}: onnxruntime holds {made.tensor_size_in_bytes()} bytes for "
                     f"{raw.nbytes} of {t.dtype.name}")
    if raw.nbytes:
        ctypes.memmove(made.data_ptr(), raw.ctypes.data, raw.nbytes)
    return made


def tensor(made: Any, name: str) -> Any:
    """An OrtValue holding a tensor as an onnxop Tensor of its ONNX type, its bytes copied once; a value that
    is not a tensor (a sequence, a map) as it is (its ``data_type()`` says what it is: ``seq(tensor(float))``)."""
    import ctypes

    import numpy as np

    from .sources import MemoryBytes
    from .tensor import Tensor

    if not made.is_tensor():
        return made
    said = made.data_type()
    dtype = _dtype(said)
    if dtype is None:
        raise Unheld(f"output {name!r} is a {said}, a type onnxop has none for")
    if dtype.is_string:
        return Tensor.from_numpy(made.numpy(), name)
    size = made.tensor_size_in_bytes()
    raw = np.empty(size, np.uint8)
    if size:
        ctypes.memmove(raw.ctypes.data, made.data_ptr(), size)
    return Tensor(name, tuple(made.shape()), dtype, MemoryBytes(raw))


def run(session: Any, outputs: list[str], feeds: dict[str, Tensor], types: dict[str, int] | None = None) -> list:
    """``session``'s ``outputs`` for ``feeds`` (by input name; ``types``: the ONNX type each is declared,
    where it is not the tensor's own), as ``tensor`` makes them. onnxruntime's exceptions are the caller's to
    word; ``Unheld`` is raised for a tensor one side has no type for."""
    import onnxruntime

    options = onnxruntime.RunOptions()
    options.log_severity_level = 4  # its errors come back as exceptions; no log lines on stderr
    if any(t.dtype.is_string for t in feeds.values()):
        return _run_arrays(session, outputs, feeds, options)
    values = {name: value(t, (types or {}).get(name)) for name, t in feeds.items()}
    made = session.run_with_ort_values(outputs, values, options)
    return [tensor(v, name) for name, v in zip(outputs, made)]


def _run_arrays(session: Any, outputs: list[str], feeds: dict[str, Tensor], options: Any) -> list:
    """A run with a string input, which onnxruntime's Python API takes only in a numpy array (it makes no
    OrtValue of strings, nor binds one): every value crosses as a numpy array, so none may be of a type
    numpy lacks (a float8e4m3fn output would come back as uint8 values)."""
    import numpy as np

    from .tensor import Tensor

    said = {o.name: o.type for o in session.get_outputs()}
    made_as = {name: _dtype(said.get(name, "")) for name in outputs}
    lacking = [("input", name, t.dtype) for name, t in feeds.items() if not t.dtype.numpy_native] + \
        [("output", name, d) for name, d in made_as.items() if d is not None and not d.numpy_native]
    if lacking:
        what, name, dtype = lacking[0]
        raise Unheld(f"{what} {name!r} is {dtype.name}, beside a string input: onnxruntime's Python API takes "
                     f"strings only in a run of numpy arrays, which have no {dtype.name}")
    made = session.run(outputs, {name: t.to_numpy() for name, t in feeds.items()}, options)
    return [Tensor.from_numpy(a, name) if isinstance(a, np.ndarray) else a for name, a in zip(outputs, made)]


def _dtype(said: str):
    """The DType of onnxruntime's name of a tensor's type (``tensor(float8e4m3fn)``: ONNX's name in it); None for
    another value (``seq(tensor(float))``) or a type onnxop has none for."""
    from .tensor import dtype_by_name

    if not (said.startswith("tensor(") and said.endswith(")")):
        return None
    try:
        return dtype_by_name(said[len("tensor("):-1])
    except InputError:
        return None
