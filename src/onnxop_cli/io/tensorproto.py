""".pb files: one serialized ``onnx.TensorProto``, read and written with onnx.

Parsing is onnx's (protobuf's), never ours. The values may sit in
``raw_data`` (little-endian, sub-byte types packed), in the typed field
``onnx.helper.tensor_dtype_to_field`` names for the type (``typed_field``: ``float_data``,
``int32_data`` holding the bits of float16/bfloat16/float8 and the packed
bytes of int4/int2..., ``int64_data``, ``uint64_data``, ``double_data``,
``string_data``), or in an external file. Typed fields are converted to the
raw little-endian bytes here, once; ``raw_data`` and external data are used
as they are (external data lazily, straight from the file). (``float_data``
reaches Python as doubles, which quiets a signalling NaN's top mantissa bit,
exactly as onnx's own reader does; ``raw_data`` -- what onnx and onnxop write --
is bit-exact.)

External data is read only from a regular file inside the tensor file's own
folder: the location must be relative, without ``..``, and must still be
inside that folder once symlinks are resolved.

Writing always uses ``raw_data`` (packed for sub-byte types), with the
tensor's name, dims and data type; strings use ``string_data``.
"""

from __future__ import annotations

import math
import os
from contextlib import contextmanager
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import BinaryIO, Iterator

from ..errors import InputError, OutputError, UsageError
from ..core.sources import FileBytes, MemoryBytes
from ..core.tensor import DTYPES, DType, Tensor, check_shape, check_string_memory
from . import npy

SUFFIX = ".pb"
PROTOBUF_LIMIT = (2 << 30) - (1 << 20)  # a message must stay under 2 GiB; keep room for the header
MAX_MESSAGE = (2 << 30) - 1  # the largest message protobuf parses
EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL
DATA_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")
# The typed field of each type whose values are not in int32_data, as onnx's helper.tensor_dtype_to_field names
# them: that module imports ml_dtypes, about a CPU-second that every model with a typed Constant paid
# (core/onnx_lazy.py); tests/unit/test_tensor.py holds the two equal for every type.
TYPED_FIELDS = {"float32": "float_data", "complex64": "float_data", "float64": "double_data",
                "complex128": "double_data", "int64": "int64_data", "uint32": "uint64_data", "uint64": "uint64_data"}


def typed_field(dtype: DType) -> str:
    """The TensorProto field that holds ``dtype``'s values when they are not in ``raw_data``."""
    return "string_data" if dtype.is_string else TYPED_FIELDS.get(dtype.name, "int32_data")


def read_pb(path: Path) -> Tensor:
    """The tensor serialized in ``path``."""
    import onnx
    from google.protobuf.message import DecodeError

    from ..core.files import InputFile

    path = Path(path)
    label = str(path)
    file = InputFile(path, label)  # one open: its size and its bytes are the same file's
    size = file.size
    if size > MAX_MESSAGE:
        file.close()  # protobuf cannot parse it; do not read gigabytes to find out
        raise InputError(
            f"{label}: {size} bytes is more than a TensorProto can hold (protobuf messages stay "
            f"under 2 GiB); a larger tensor keeps its data in an external file"
        )
    proto = onnx.TensorProto()
    try:
        content = bytearray(size)
        got = file.pread_into(0, memoryview(content))
        file.check_unchanged()
        del content[got:]
        proto.ParseFromString(bytes(content) if got != size else content)
    except DecodeError as e:
        raise InputError(f"{label}: not a serialized ONNX TensorProto ({e})") from None
    except (RuntimeError, ValueError, MemoryError) as e:  # upb's limits (recursion, size)
        raise InputError(f"{label}: not a serialized ONNX TensorProto ({type(e).__name__}: {e})") from None
    finally:
        file.close()
    _refuse_other_messages(proto, content, label, path)
    return tensor_from_proto(proto, path.parent, label, path.stem)


def _refuse_other_messages(proto, data, label: str, path: Path | None = None) -> None:
    """An optional or a sequence parsed as a tensor is refused as what it is (protokind.py)."""
    from .protokind import describe, suspicious

    if suspicious(proto):
        message = describe(data, label, path, segment=proto.HasField("segment"))
        if message:
            raise InputError(message)


def _text(value, what: str, label: str) -> str:
    """A text field's value. protobuf parses them without checking, and
    hands back ``bytes`` for one that is not UTF-8."""
    if isinstance(value, bytes):
        raise InputError(f"{label}: the {what} is not UTF-8 text ({value[:40]!r})")
    return value


def tensor_from_proto(proto, base_dir: Path, label: str, default_name: str) -> Tensor:
    """A Tensor for a TensorProto; external data is looked up in ``base_dir``."""
    import numpy as np

    dtype = _dtype(proto, label)
    shape = tuple(int(d) for d in proto.dims)
    if any(d < 0 for d in shape):
        raise InputError(f"{label}: negative dimension in dims {list(shape)}")
    check_shape(shape, dtype.numpy_itemsize, label)
    if proto.HasField("segment"):
        raise InputError(f"{label}: segmented tensors are not supported")
    name = _text(proto.name, "tensor name", label) or default_name
    count = math.prod(shape)

    if dtype.is_string:
        if proto.HasField("raw_data") or proto.data_location == EXTERNAL:
            raise InputError(f"{label}: a string tensor keeps its values in string_data")
        _check_count(proto, "string_data", count, label, dtype)
        # the message (at most 2 GiB) bounds the strings' bytes; each adds a Python object
        check_string_memory(count, proto.ByteSize(), label)
        values = np.empty(len(proto.string_data), dtype=object)
        values[:] = list(proto.string_data)
        return Tensor(name, shape, dtype, strings=values.reshape(shape), source=label, named=bool(proto.name))

    nbytes = dtype.nbytes(count)
    if proto.data_location == EXTERNAL:
        data = _external_bytes(proto, Path(base_dir), label, nbytes)
    elif proto.HasField("raw_data"):
        if len(proto.raw_data) != nbytes:
            raise InputError(
                f"{label}: raw_data holds {len(proto.raw_data)} bytes; dims {list(shape)} "
                f"of {dtype} need {nbytes}"
            )
        data = MemoryBytes(np.frombuffer(proto.raw_data, dtype=np.uint8))
    else:
        data = MemoryBytes(_typed_bytes(proto, dtype, count, label))
    return Tensor(name, shape, dtype, data, source=label, named=bool(proto.name))


def _dtype(proto, label: str) -> DType:
    import onnx

    by_number = {d.onnx_type: d for d in DTYPES}
    found = by_number.get(proto.data_type)
    if found is None:
        try:
            what = onnx.TensorProto.DataType.Name(proto.data_type)
        except ValueError:
            what = str(proto.data_type)
        raise InputError(f"{label}: data type {what} ({proto.data_type}) is not an ONNX tensor type of opset 25")
    return found


def _check_count(proto, field: str, expected: int, label: str, dtype: DType) -> None:
    others = [f for f in DATA_FIELDS if f != field and len(getattr(proto, f))]
    if others:
        raise InputError(f"{label}: a {dtype} tensor keeps its values in {field}, not {others[0]}")
    got = len(getattr(proto, field))
    if got != expected:
        raise InputError(f"{label}: {field} holds {got} values; dims {list(proto.dims)} of {dtype} need {expected}")


def _typed_bytes(proto, dtype: DType, count: int, label: str):
    """The little-endian bytes of the values in the typed field, as onnx's
    numpy_helper.to_array reads them: int32_data carries the bits of 8- and
    16-bit types (and the packed bytes of 4- and 2-bit types) in its low bits;
    uint64_data carries uint32; complex values are (real, imaginary) pairs."""
    import numpy as np

    field = typed_field(dtype)
    if dtype.is_packed:
        expected = dtype.nbytes(count)
    elif dtype.name.startswith("complex"):
        expected = 2 * count
    else:
        expected = count
    _check_count(proto, field, expected, label, dtype)
    values = getattr(proto, field)
    if field == "int32_data" and dtype.bits != 32:
        width = {8: np.uint8, 16: np.uint16}[max(dtype.bits, 8)]
        data = np.array(values, dtype=np.int64).astype(np.uint32).astype(width)
    elif field == "uint64_data" and dtype.bits == 32:
        data = np.array(values, dtype=np.uint64).astype(np.uint32)
    else:
        storage = {"float_data": "<f4", "double_data": "<f8", "int32_data": "<i4",
                   "int64_data": "<i8", "uint64_data": "<u8"}[field]
        data = np.array(values, dtype=storage)
    return np.ascontiguousarray(data.astype(data.dtype.newbyteorder("<"))).reshape(-1).view(np.uint8)


EXTERNAL_KEYS = ("location", "offset", "length", "checksum", "basepath")  # onnx's; others are ignored


def _external_info(proto, label: str) -> tuple[str, int, int | None]:
    """(location, offset, length) of the external data, read the way onnx's
    ExternalDataInfo reads them, but without setting attributes from the file:
    only the known keys are looked at."""
    entries = {
        _text(e.key, "external data key", label): _text(e.value, "external data value", label)
        for e in proto.external_data
    }
    entries = {k: v for k, v in entries.items() if k in EXTERNAL_KEYS}

    def number(key: str) -> int | None:
        text = entries.get(key)
        if text is None:
            return None
        try:
            value = int(text)
        except ValueError:
            raise InputError(f"{label}: invalid external data: {key} {text[:40]!r} is not an integer") from None
        if value < 0:
            raise InputError(f"{label}: invalid external data: {key} {value} is negative")
        return value

    return entries.get("location", ""), number("offset") or 0, number("length")


def _external_bytes(proto, base_dir: Path, label: str, nbytes: int) -> FileBytes:
    from ..core.files import InputFile

    location, offset, length = _external_info(proto, label)
    folder = base_dir if str(base_dir) else Path(".")
    target = _inside(folder, location, label)
    file = InputFile(target, f"{label}: external data {location!r}")  # opened once, as the .npy inputs are
    try:
        return FileBytes(file, offset, _external_length(proto, label, location, offset, length, file.size, nbytes))
    except BaseException:
        file.close()
        raise


def _external_length(proto, label: str, location: str, offset: int, length: int | None, size: int, nbytes: int) -> int:
    if length is None:
        length = max(0, size - offset)
    if length != nbytes:
        raise InputError(
            f"{label}: external data {location!r} holds {length} bytes; "
            f"dims {list(proto.dims)} of {_dtype(proto, label)} need {nbytes}"
        )
    if offset + length > size:
        raise InputError(
            f"{label}: external data {location!r} is truncated: {length} bytes from offset "
            f"{offset} need a file of {offset + length} bytes, it has {size}"
        )
    return length


def _inside(folder: Path, location: str, label: str) -> Path:
    """``location`` resolved inside ``folder``, or an error: never read outside
    the folder the user pointed at (no absolute paths, no ``..``, no symlink
    that leads out)."""
    refuse = f"{label}: external data location {location!r} must name a file inside the file's folder ({folder})"
    if not location:
        raise InputError(f"{label}: external data has no location")
    if "\0" in location:
        raise InputError(f"{label}: external data location {location!r} holds a NUL byte")
    for flavour in (PurePosixPath, PureWindowsPath):
        p = flavour(location)
        if p.is_absolute() or p.anchor or ".." in p.parts:
            raise InputError(refuse)
    base = os.path.realpath(folder)
    target = os.path.realpath(os.path.join(base, location))
    if os.path.commonpath([base, target]) != base:
        raise InputError(f"{refuse} (it resolves to {target})")
    if not os.path.exists(target):
        raise InputError(f"{label}: external data file {location!r} not found in the file's folder ({folder})")
    if not os.path.isfile(target):  # a folder, a FIFO (would block), a device
        raise InputError(f"{label}: external data {location!r} is not a regular file")
    return Path(target)


def can_hold(dtype: DType) -> bool:
    return True


class PbWriter:
    """Writes one TensorProto (raw_data, or string_data) into an open binary file.

    The tensor's bytes are streamed, never gathered: onnx serializes the
    message without ``raw_data`` (name, dims, data type: fields 1, 2 and 8),
    and ``raw_data`` (field 9, the last one set) follows as its tag, its
    length and the bytes as they come. Protobuf writes fields in number
    order, so the file is byte for byte what onnx's SerializeToString gives.
    """

    def __init__(self, f: BinaryIO, label: str) -> None:
        self._f = f
        self._label = label
        self._written = False

    def _proto(self, name: str, shape: tuple[int, ...], dtype: DType):
        import onnx

        if self._written:
            raise OutputError(f"{self._label}: a .pb file holds one tensor")
        self._written = True
        proto = onnx.TensorProto()
        proto.name = name
        proto.dims.extend(int(d) for d in shape)
        proto.data_type = dtype.onnx_type
        return proto

    @contextmanager
    def tensor(self, name: str, shape: tuple[int, ...], dtype: DType) -> Iterator:
        nbytes = dtype.nbytes(math.prod(shape))
        if nbytes > PROTOBUF_LIMIT:
            raise UsageError(
                f"{self._label}: {nbytes} bytes do not fit a .pb (protobuf messages stay "
                "under 2 GiB); write a .npy or .npz file instead"
            )
        npy.check_room(self._f, nbytes, self._label)
        head = self._proto(name, shape, dtype).SerializeToString()
        self._f.write(head + RAW_DATA_TAG + _varint(nbytes))
        written = 0

        def sink(chunk) -> None:
            nonlocal written
            written += memoryview(chunk).nbytes
            self._f.write(chunk)

        yield sink
        if written != nbytes:  # the length is already written: a short stream would make a broken file
            raise OutputError(f"{self._label}: {written} bytes came for a raw_data of {nbytes}")

    def strings(self, name: str, values, text_dtype: str = "") -> None:
        """The bytes as they are, into string_data: no fixed-width array (the numpy kind has no place in a .pb)."""
        proto = self._proto(name, values.shape, _string_dtype())
        proto.string_data.extend(bytes(v) for v in values.reshape(-1))
        self._f.write(proto.SerializeToString())

    def close(self) -> None:
        pass


RAW_DATA_TAG = bytes([(9 << 3) | 2])  # TensorProto.raw_data: field 9, length-delimited


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


WRITER = PbWriter


def _string_dtype() -> DType:
    from ..core.tensor import STRING

    return STRING
