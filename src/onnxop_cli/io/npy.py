"""``.npy`` files: safe header parsing, lazy data, streaming writes.

The header is parsed with numpy's own format functions (a literal dict, never
a pickle); the data is not read here, only located: the GPU path reads it in
chunks. The declared size is checked against the file before anything is
allocated. Big-endian and Fortran-ordered data are kept as they are and
flagged on the Tensor: the GPU's re-layout kernel turns them into the
row-major little-endian bytes ONNX uses. Fixed-width text (``<U``, ``S``)
is an ONNX string tensor.
"""

from __future__ import annotations

import math
import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from ..errors import InputError, OutputError, UsageError
from ..core.sources import ByteSource, FileBytes
from ..core.tensor import (
    DType,
    check_shape,
    Tensor,
    check_string_memory,
    dtype_of_numpy,
    strings_to_bytes,
    swap_unit,
    text_dtype_of,
)

SUFFIX = ".npy"


MAX_HEADER = 10000  # characters: numpy's own default ``max_header_size``
_HEADER_LENGTH = {(1, 0): ("<H", "latin1"), (2, 0): ("<I", "latin1"), (3, 0): ("<I", "utf8")}


def read_header(f: BinaryIO, label: str):
    """Parse magic and header; returns (version, shape, fortran_order, numpy dtype).

    The header's declared length is checked before it is read: numpy reads
    whatever length a version 2 header claims (up to 4 GiB, inflated out of an
    .npz member) before refusing it as too long. The header itself is then
    parsed by numpy's own reader (``ast.literal_eval``, never a pickle).
    """
    import io
    import struct

    import numpy as np

    fmt = np.lib.format
    try:
        version = fmt.read_magic(f)
    except ValueError as e:
        raise InputError(f"{label}: not a .npy file ({_clean(e)})") from None
    if version not in _HEADER_LENGTH:
        raise InputError(f"{label}: unsupported .npy format version {version[0]}.{version[1]}")
    length_format, encoding = _HEADER_LENGTH[version]
    prefix = _read_exactly(f, struct.calcsize(length_format))
    if len(prefix) < struct.calcsize(length_format):
        raise InputError(f"{label}: .npy header is truncated (it ends inside the header length)")
    (length,) = struct.unpack(length_format, prefix)
    limit = MAX_HEADER * (4 if encoding == "utf8" else 1)  # a UTF-8 character takes up to 4 bytes
    if length > limit:
        raise InputError(
            f"{label}: .npy header of {length} bytes is longer than numpy's limit of "
            f"{MAX_HEADER} characters; not read"
        )
    header = _read_exactly(f, length)
    if len(header) < length:
        raise InputError(f"{label}: .npy header is truncated: it declares {length} bytes, {len(header)} follow")
    try:
        shape, fortran, dtype = _parse_header(version, io.BytesIO(prefix + header))
    except Exception as e:  # noqa: BLE001 - numpy's parser raises ValueError, SyntaxError, tokenize.TokenError...
        raise InputError(f"{label}: invalid .npy header ({_clean(e)})") from None
    return version, tuple(int(d) for d in shape), bool(fortran), dtype


def _parse_header(version: tuple[int, int], buf: BinaryIO):
    """numpy's parser for this version (3.0 has no public reader). Its
    warnings (a header written by Python 2, an odd escape in a header that
    is refused anyway) would be extra lines on stderr: they are dropped."""
    import warnings

    import numpy as np

    fmt = np.lib.format
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if version == (1, 0):
            return fmt.read_array_header_1_0(buf)
        if version == (2, 0):
            return fmt.read_array_header_2_0(buf)
        reader = getattr(fmt, "_read_array_header", None)
        if reader is None:  # numpy >= 2 keeps it in the implementation module
            from numpy.lib import _format_impl

            reader = _format_impl._read_array_header
        return reader(buf, version)


def _read_exactly(f: BinaryIO, n: int) -> bytes:
    """Up to ``n`` bytes (fewer only at the end of the stream)."""
    parts, got = [], 0
    while got < n:
        part = f.read(n - got)
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def check_dtype(np_dtype, label: str) -> DType:
    """Refuse what would need a pickle or has no ONNX type; name the dtype."""
    if np_dtype.hasobject:
        raise InputError(
            f"{label}: dtype {np_dtype!s} holds Python objects; onnxop never unpickles"
        )
    if np_dtype.names is not None or np_dtype.subdtype is not None:
        raise InputError(f"{label}: structured dtype {np_dtype!s} has no ONNX tensor type")
    if np_dtype.kind == "V" and np_dtype.itemsize in (1, 2):
        # np.save writes ml_dtypes' types (bfloat16, float8, int4...) as bare
        # bytes: which one they were is lost, so they cannot be read back.
        raise InputError(
            f"{label}: dtype {np_dtype!s} has no ONNX tensor type (numpy saves ml_dtypes' "
            f"bfloat16, float8 and 4-bit arrays as bare bytes like these, losing the type: keep those in .pb files)"
        )
    if np_dtype.kind in "MmV":
        raise InputError(f"{label}: dtype {np_dtype!s} has no ONNX tensor type")
    if np_dtype.kind in "US" and np_dtype.itemsize == 0:
        # Any number of empty strings fits in no bytes: the file's size would
        # not bound the memory the strings take.
        raise InputError(f"{label}: text dtype {np_dtype!s} has zero-width elements; onnxop refuses it")
    try:
        return dtype_of_numpy(np_dtype)
    except InputError as e:
        raise InputError(f"{label}: {e}") from None


def read_npy(path: Path, name: str | None = None) -> Tensor:
    """The tensor in ``path``; its bytes stay on disk until they are copied."""
    from ..core.files import InputFile

    path = Path(path)
    label = str(path)
    file = InputFile(path, label)  # opened once: the header and the data come from this descriptor
    try:
        f = file.reader()
        _, shape, fortran, np_dtype = read_header(f, label)
        data_offset = f.tell()
        check_dtype(np_dtype, label)
        nbytes = data_size(shape, np_dtype, label, file.size - data_offset, "file")
        data = FileBytes(file, data_offset, nbytes)
        return tensor_from_header(label, name or path.stem, shape, fortran, np_dtype, data)
    except BaseException:
        file.close()
        raise


def declared_size(shape: tuple[int, ...], np_dtype, label: str) -> int:
    """The data bytes a header declares, once the shape is known to be one
    numpy can describe (see ``tensor.check_shape``)."""
    if any(d < 0 for d in shape):
        raise InputError(f"{label}: negative dimension in shape {shape}")
    check_shape(shape, np_dtype.itemsize, label)
    return math.prod(shape) * np_dtype.itemsize


def data_size(shape: tuple[int, ...], np_dtype, label: str, available: int, where: str) -> int:
    """The data bytes a header declares, checked against what ``where`` holds."""
    nbytes = declared_size(shape, np_dtype, label)
    if nbytes > available:
        raise InputError(
            f"{label}: {where} is truncated: shape {shape} of {np_dtype} needs {nbytes} "
            f"data bytes, the {where} has {available}"
        )
    return nbytes


def tensor_from_header(
    label: str, name: str, shape: tuple[int, ...], fortran: bool, np_dtype, data: ByteSource,
    *, named: bool = False,
) -> Tensor:
    """A Tensor over ``data`` as an .npy header describes it. Text is read
    into memory now (string tensors live on the host); numbers stay lazy."""
    dtype = check_dtype(np_dtype, label)
    order = "F" if fortran and len(shape) > 1 else "C"
    if dtype.is_string:
        # UTF-8 takes no more bytes than UCS-4, so the data's size bounds the strings' bytes
        check_string_memory(math.prod(shape), data.nbytes, label)
        flat = data.to_array().view(np_dtype)
        values = flat.reshape(shape[::-1]).T if order == "F" else flat.reshape(shape)
        try:
            strings = strings_to_bytes(values)
        except InputError as e:
            raise InputError(f"{label}: {e}") from None
        finally:
            del flat, values
            data.close()  # the strings are in memory: the file is not needed any more
        return Tensor(name, shape, dtype, strings=strings, source=label, named=named,
                      text_dtype=text_dtype_of(np_dtype))
    return Tensor(
        name=name,
        shape=shape,
        dtype=dtype,
        data=data,
        order=order,
        source=label,
        byteswap=swap_unit(np_dtype),
        named=named,
    )


def can_hold(dtype: DType) -> bool:
    """numpy (without ml_dtypes) describes these; bfloat16, float8, int4... it cannot."""
    return dtype.numpy_native


FAR_LARGER = 8  # a fixed-width text output this many times the strings' own bytes...
LARGE = 64 << 20  # ...and at least this large is refused: a .pb holds the strings as they are
WRITE_STEP = 16 << 20  # bytes of fixed-width text made at a time


def text_dtype_for(values, kept: str, label: str):
    """The fixed-width numpy dtype an .npy holds ONNX strings (bytes) in:
    the input's own (``kept``: ``|S2`` stays ``|S2``, ``<U5`` stays
    ``<U5``), else ``<U`` when every element is UTF-8 (as onnx.numpy_helper
    reads them) or ``S``, as wide as the longest. Refused before anything is
    made: a string ending in NUL (numpy drops trailing NULs, so it would
    come back shortened), and a fixed-width array far larger than the
    strings (one long string among many short ones), which a .pb avoids."""
    import numpy as np

    flat = values.reshape(-1)
    total = longest = chars = 0
    text = True
    for v in flat:
        n = len(v)
        if n and v[-1] == 0:
            raise UsageError(
                f"{label}: a string that ends in a NUL byte cannot be stored in a numpy array "
                "(numpy drops trailing NULs); write a .pb (ONNX TensorProto) file instead"
            )
        total += n
        longest = max(longest, n)
        if text and n > chars:  # the width of <U counts characters, not bytes
            try:
                chars = n if v.isascii() else max(chars, len(v.decode("utf-8")))
            except UnicodeDecodeError:
                text = False
    if kept:
        return np.dtype(kept)
    dtype = np.dtype(f"<U{max(1, chars)}") if text else np.dtype(f"S{max(1, longest)}")
    fixed = flat.size * dtype.itemsize
    if fixed > FAR_LARGER * total and fixed > LARGE:
        raise UsageError(
            f"{label}: as a .npy array ({dtype.str}) these {flat.size} strings need {fixed} bytes, "
            f"{fixed // max(1, total)}x the {total} bytes they hold; write a .pb (ONNX TensorProto) file instead"
        )
    return dtype


def write_strings(f: BinaryIO, values, dtype) -> None:
    """An .npy of the strings in ``dtype`` (see text_dtype), made a slice at
    a time: the fixed-width array is never whole in memory."""
    import numpy as np

    write_header(f, values.shape, dtype)
    flat = values.reshape(-1)
    step = max(1, WRITE_STEP // max(1, dtype.itemsize))
    for start in range(0, flat.size, step):
        part = flat[start : start + step].tolist()
        if dtype.kind == "U":
            part = [v.decode("utf-8") for v in part]
        f.write(np.array(part, dtype=dtype).tobytes())


class NpyWriter:
    """Writes the one tensor of an .npy file into an open binary file."""

    def __init__(self, f: BinaryIO, label: str) -> None:
        self._f = f
        self._label = label
        self._written = False

    def _once(self) -> None:
        if self._written:
            raise OutputError(f"{self._label}: an .npy file holds one tensor")
        self._written = True

    @contextmanager
    def tensor(self, name: str, shape: tuple[int, ...], dtype: DType) -> Iterator:
        self._once()
        check_room(self._f, dtype.nbytes(math.prod(shape)), self._label)
        write_header(self._f, shape, dtype)
        yield self._f.write

    def strings(self, name: str, values, text_dtype: str = "") -> None:
        self._once()
        write_strings(self._f, values, text_dtype_for(values, text_dtype, self._label))

    def close(self) -> None:
        pass


WRITER = NpyWriter


def check_room(f: BinaryIO, nbytes: int, label: str) -> None:
    """Refuse, before its first byte, a tensor larger than the free space of the filesystem its
    file is on (a Tile or Expand of terabytes wrote until the disk was full, then failed: the
    same exit, after minutes and a full disk for everyone else). Only a regular file is looked
    at; a filesystem that reports no size (f_blocks 0) is not judged. A compressing filesystem
    (btrfs, ZFS) could hold more than it reports free: there too the free space is the limit."""
    try:
        fd = f.fileno()
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return
        fs = os.fstatvfs(fd)
    except (AttributeError, OSError, ValueError):
        return  # not a file descriptor (an in-memory stream, a zip member): nothing to ask
    free = fs.f_bavail * fs.f_frsize
    if fs.f_blocks and nbytes > free:
        raise OutputError(
            f"{label}: the output needs {nbytes} bytes ({size_words(nbytes)}) and its filesystem has "
            f"{free} free ({size_words(free)}); not written"
        )


def size_words(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


def write_header(f: BinaryIO, shape: tuple[int, ...], dtype) -> None:
    """Write a C-order, little-endian .npy header (format 1.0 unless it is too
    long) for a DType, or a numpy dtype (fixed-width text)."""
    import numpy as np

    fmt = np.lib.format
    if isinstance(dtype, DType) and not can_hold(dtype):  # never a typeless |V2: io.check_output refuses first
        raise OutputError(f"the .npy format cannot describe {dtype.name} (numpy has no such dtype)")
    np_dtype = dtype.numpy if isinstance(dtype, DType) else np.dtype(dtype)
    header = {
        "descr": fmt.dtype_to_descr(np_dtype.newbyteorder("<")),
        "fortran_order": False,
        "shape": tuple(shape),
    }
    try:
        fmt.write_array_header_1_0(f, header)
    except ValueError:
        fmt.write_array_header_2_0(f, header)


def _clean(e: Exception) -> str:
    return " ".join(str(e).split())[:200]
