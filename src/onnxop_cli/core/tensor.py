"""The Tensor value and the ONNX dtype table.

A Tensor is raw bytes plus shape, ONNX dtype and memory order. Its bytes are a
:class:`sources.ByteSource`: memory, a byte range of a file or a stream, read
in chunks when the GPU asks for them.

The dtype table carries the TensorProto numbers of the ONNX spec. It is written
out here (not built from ``onnx``) so that reading a ``.npy`` file never pays
for importing ``onnx``; ``tests/unit/test_tensor.py`` checks every row against
``onnx.TensorProto`` and ``onnx.helper.tensor_dtype_to_np_dtype``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError
from .sources import (  # noqa: F401 - the byte sources, re-exported where callers found them
    MAP_THRESHOLD,
    ByteSource,
    FileBytes,
    MemoryBytes,
    StreamBytes,
)
from .strings import (  # noqa: F401 - the string helpers, re-exported where they were
    check_string_memory,
    check_text,
    strings_to_bytes,
    strings_to_text,
    text_dtype_of,
)

if TYPE_CHECKING:
    import numpy as np


# --------------------------------------------------------------------- dtypes


@dataclass(frozen=True)
class DType:
    """One ONNX tensor element type.

    ``name`` is what the ONNX docs print (``dtype=float32``): numpy's name, or
    ml_dtypes' name for the types numpy lacks. ``onnx_name`` is the name in
    ``tensor(...)`` type strings. ``bits`` is the element width; 0 for string.
    """

    name: str
    onnx_name: str
    onnx_type: int
    bits: int
    numpy_native: bool = True

    @property
    def is_string(self) -> bool:
        return self.bits == 0

    @property
    def is_packed(self) -> bool:
        """Sub-byte types: several elements share one byte, as ONNX stores them."""
        return 0 < self.bits < 8

    @property
    def itemsize(self) -> int:
        """Bytes per element for byte-sized types (0 for packed and string)."""
        return self.bits // 8 if self.bits >= 8 else 0

    @property
    def numpy_itemsize(self) -> int:
        """Bytes per element of this type's numpy array: 8 for strings (object
        pointers), 1 for the packed types (ml_dtypes keeps one per byte)."""
        return 8 if self.is_string else max(1, self.bits // 8)

    def nbytes(self, count: int) -> int:
        """Bytes needed for ``count`` elements, packed the way ONNX packs them."""
        if self.is_string:
            raise ValueError("string tensors have no fixed byte size")
        return (count * self.bits + 7) // 8

    @cached_property
    def numpy(self) -> np.dtype:
        """The numpy dtype (ml_dtypes for the types numpy lacks)."""
        import numpy as np

        if self.is_string:
            return np.dtype(object)
        if self.numpy_native:
            return np.dtype(self.name)
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, self.name))

    def __str__(self) -> str:
        return self.name


def _table() -> tuple[DType, ...]:
    rows = [
        # name, onnx_name, TensorProto number, bits, numpy has it
        ("float32", "float", 1, 32, True),
        ("uint8", "uint8", 2, 8, True),
        ("int8", "int8", 3, 8, True),
        ("uint16", "uint16", 4, 16, True),
        ("int16", "int16", 5, 16, True),
        ("int32", "int32", 6, 32, True),
        ("int64", "int64", 7, 64, True),
        ("object", "string", 8, 0, True),
        ("bool", "bool", 9, 8, True),
        ("float16", "float16", 10, 16, True),
        ("float64", "double", 11, 64, True),
        ("uint32", "uint32", 12, 32, True),
        ("uint64", "uint64", 13, 64, True),
        ("complex64", "complex64", 14, 64, True),
        ("complex128", "complex128", 15, 128, True),
        ("bfloat16", "bfloat16", 16, 16, False),
        ("float8_e4m3fn", "float8e4m3fn", 17, 8, False),
        ("float8_e4m3fnuz", "float8e4m3fnuz", 18, 8, False),
        ("float8_e5m2", "float8e5m2", 19, 8, False),
        ("float8_e5m2fnuz", "float8e5m2fnuz", 20, 8, False),
        ("uint4", "uint4", 21, 4, False),
        ("int4", "int4", 22, 4, False),
        ("float4_e2m1fn", "float4e2m1", 23, 4, False),
        ("float8_e8m0fnu", "float8e8m0", 24, 8, False),
        ("uint2", "uint2", 25, 2, False),
        ("int2", "int2", 26, 2, False),
    ]
    return tuple(DType(*row) for row in rows)


DTYPES: tuple[DType, ...] = _table()
_BY_NAME = {d.name: d for d in DTYPES} | {d.onnx_name: d for d in DTYPES}
_BY_ONNX = {d.onnx_type: d for d in DTYPES}
STRING = _BY_ONNX[8]


def dtype_by_name(name: str) -> DType:
    """Look a dtype up by its docs name (``float32``) or ONNX name (``float``)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        known = ", ".join(d.name for d in DTYPES)
        raise InputError(f"unknown dtype {name!r}; known: {known}") from None


def type_number(name: str) -> int | None:
    """The TensorProto number of a type by its name, any case: ONNX's (float,
    bfloat16, string) or numpy's and ml_dtypes' (float32, float8_e4m3fn); None
    for a name no ONNX type has."""
    key = name.strip().lower()
    dtype = _BY_NAME.get(key)
    # strings by ONNX's name only: numpy's "object" says nothing of what the objects are
    return None if dtype is None or (dtype.is_string and key != "string") else dtype.onnx_type


def dtype_by_onnx(onnx_type: int) -> DType:
    """Look a dtype up by its TensorProto number."""
    try:
        return _BY_ONNX[onnx_type]
    except KeyError:
        raise InputError(f"unknown ONNX data type {onnx_type}") from None


def dtype_of_numpy(np_dtype: np.dtype) -> DType:
    """The ONNX dtype for a numpy dtype, ignoring byte order."""
    import numpy as np

    if np_dtype.kind in "OUS":
        return STRING
    name = np_dtype.newbyteorder("=").name if np_dtype.kind != "V" else np_dtype.name
    found = _BY_NAME.get(name)
    if found is None or found.is_string:
        raise InputError(f"dtype {np.dtype(np_dtype)!s} has no ONNX tensor type")
    return found


# ----------------------------------------------------------------- shapes

MAX_INDEX = 2**63 - 1  # numpy's npy_intp on 64-bit platforms; ONNX dims are int64 too


def max_rank() -> int:
    """The most dimensions a numpy array can have (NPY_MAXDIMS)."""
    import numpy as np

    return 64 if int(np.__version__.split(".")[0]) >= 2 else 32


def check_shape(shape: tuple[int, ...], itemsize: int, label: str, noun: str = "shape") -> None:
    """Refuse a shape numpy cannot describe, before anything is allocated: more
    than ``max_rank()`` dimensions, or non-zero dimensions whose product times
    the element size overflows 2**63 - 1 bytes. (numpy refuses ``(0, 2**62)``
    float32 too: a zero dimension does not make the others representable.)
    Such a shape could not be the reference's, nor be written as a file numpy
    reads, whatever the file's size. Dimensions are known not to be negative."""
    rank = len(shape)
    if rank > max_rank():
        raise InputError(
            f"{label}: {noun} has rank {rank}; numpy (and so onnxop) supports at most {max_rank()} dimensions"
        )
    span = max(1, itemsize)
    for d in shape:
        span *= max(1, d)
        if span > MAX_INDEX:
            raise InputError(
                f"{label}: {noun} {tuple(shape)} is too large: its non-zero dimensions times the "
                f"{max(1, itemsize)}-byte element size exceed 2**63 - 1 bytes"
            )


# ----------------------------------------------------------------- tensor


@dataclass
class Tensor:
    """Raw bytes + shape + ONNX dtype + memory order.

    For string tensors ``strings`` holds a numpy object array of ``bytes``
    (ONNX stores UTF-8 bytes) and ``data`` is None: strings have no GPU form.
    ``text_dtype`` is the numpy dtype they came as (``<U5`` text, ``|S2``
    bytes; empty from a .pb), so an .npy output gives back the same kind.

    ``byteswap`` is non-zero when the bytes are big-endian (a ``>f4`` .npy
    file): the unit, in bytes, that the re-layout kernel reverses (the element
    size; half of it for complex types). ``named`` says the name came from the
    file (a TensorProto's name, an .npz member) rather than from a file name.
    """

    name: str
    shape: tuple[int, ...]
    dtype: DType
    data: ByteSource | None = None
    order: str = "C"  # "C" (row-major) or "F" (column-major, from .npy files)
    strings: np.ndarray | None = field(default=None, repr=False)
    source: str = ""  # where the tensor came from, for messages (a path)
    byteswap: int = 0  # 0: little-endian; else the byte-swap unit of big-endian data
    named: bool = False  # the name is the tensor's own, not a file's stem
    text_dtype: str = ""  # strings from numpy text ("<U5", "|S2"): the dtype an .npy output keeps

    def __post_init__(self) -> None:
        self.shape = tuple(int(d) for d in self.shape)
        if self.data is not None and self.data.nbytes != self.nbytes:
            raise InputError(
                f"{self.source or self.name}: {self.data.nbytes} data bytes do not match "
                f"shape {self.shape} of {self.dtype} ({self.nbytes} bytes)"
            )

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return 0 if self.dtype.is_string else self.dtype.nbytes(self.size)

    def close(self) -> None:
        """Done with this tensor: its input file's descriptor is released."""
        close = getattr(self.data, "close", None)
        if close is not None:
            close()

    @classmethod
    def from_numpy(cls, array, name: str = "x", dtype: DType | None = None) -> Tensor:
        """Wrap a numpy array, storing its bytes as they are: a Fortran-ordered
        array stays Fortran-ordered and a big-endian one big-endian (the GPU
        re-lays them out); strings become UTF-8 bytes; 2- and 4-bit types are
        packed."""
        import numpy as np

        array = np.asanyarray(array)
        label = name if name.isidentifier() else repr(name)  # an API argument's name, or a model's (quoted)
        try:
            dtype = dtype or dtype_of_numpy(array.dtype)
        except InputError as e:
            raise e.reworded(f"{label}: {e.message}") from None
        if dtype.is_string:
            kept = text_dtype_of(array.dtype)
            try:
                strings = strings_to_bytes(array)
            except InputError as e:  # numbers in an object array: it is taken as ONNX strings, so say so and whose
                held = "an object array, taken as ONNX strings: " if array.dtype == object else ""
                raise e.reworded(f"{label}: {held}{e.message}") from None
            return cls(name, array.shape, dtype, strings=strings, text_dtype=kept)
        if dtype.is_packed:  # one element per byte in numpy; packed as ONNX stores them
            return cls(name, array.shape, dtype, MemoryBytes(pack_subbyte(array, dtype)))
        swap = swap_unit(array.dtype)
        if array.flags.c_contiguous:
            return cls(name, array.shape, dtype, MemoryBytes(array), "C", byteswap=swap)
        if array.flags.f_contiguous:
            return cls(name, array.shape, dtype, MemoryBytes(array.T), "F", byteswap=swap)
        contiguous = MemoryBytes(np.ascontiguousarray(array))
        return cls(name, array.shape, dtype, contiguous, "C", byteswap=swap)

    def to_numpy(self, *, fixed_width: bool = False, native: bool = True) -> np.ndarray:
        """The values as a numpy array (unpacking sub-byte types), in the
        native byte order: whoever takes them (onnxruntime, onnx.reference,
        a bit comparison) reads an element's bytes as a native number, so a
        big-endian file's values are swapped here (a copy; Fortran order stays
        a view, which numpy indexes by its strides). ``native=False``, for
        printing, which reads only the elements it shows: a big-endian file's
        values as a view of its bytes (a ``>`` dtype numpy reads right), no
        copy of a large file in memory. Strings are
        an object array (str, or bytes if any is not UTF-8) -- with
        ``fixed_width``, the numpy text dtype they came as (``|S2``, ``<U5``)
        when they came as one."""
        import numpy as np

        if self.dtype.is_string:
            assert self.strings is not None
            if fixed_width and self.text_dtype:
                kept = np.dtype(self.text_dtype)
                values = self.strings if kept.kind == "S" else strings_to_text(self.strings)
                return values.reshape(-1).astype(kept).reshape(self.shape)
            return strings_to_text(self.strings).reshape(self.shape)
        assert self.data is not None
        raw = self.data.to_array()
        if self.dtype.is_packed:
            return unpack_subbyte(raw, self.dtype, self.size).reshape(self.shape)
        flat = raw.view(self.dtype.numpy.newbyteorder(">") if self.byteswap else self.dtype.numpy)
        if self.byteswap and native:
            flat = flat.astype(self.dtype.numpy)
        if self.order == "F":
            return flat.reshape(self.shape[::-1]).T
        return flat.reshape(self.shape)


def swap_unit(np_dtype: np.dtype) -> int:
    """The byte-swap unit of a big-endian numpy dtype (0 for native little-endian
    and single bytes): the element size, or one component of a complex."""
    if np_dtype.byteorder != ">" or np_dtype.itemsize <= 1:
        return 0
    return np_dtype.itemsize // 2 if np_dtype.kind == "c" else np_dtype.itemsize


def unpack_subbyte(raw: np.ndarray, dtype: DType, count: int) -> np.ndarray:
    """Unpack ONNX-packed 2- or 4-bit elements (low bits first) to one per byte."""
    import numpy as np

    per_byte = 8 // dtype.bits
    mask = (1 << dtype.bits) - 1
    shifts = np.arange(per_byte, dtype=np.uint8) * dtype.bits
    codes = ((raw[:, None] >> shifts) & mask).reshape(-1)[:count].astype(np.uint8)
    return codes.view(dtype.numpy)


def pack_subbyte(values: np.ndarray, dtype: DType) -> np.ndarray:
    """Pack one-per-byte 2- or 4-bit elements the way ONNX stores them."""
    import numpy as np

    per_byte = 8 // dtype.bits
    mask = (1 << dtype.bits) - 1
    codes = np.ascontiguousarray(values).reshape(-1).view(np.uint8) & mask
    pad = (-codes.size) % per_byte
    codes = np.concatenate([codes, np.zeros(pad, np.uint8)]).reshape(-1, per_byte)
    shifts = np.arange(per_byte, dtype=np.uint8) * dtype.bits
    return np.bitwise_or.reduce(codes << shifts, axis=1).astype(np.uint8)


def file_size(path: Path) -> int:
    return os.stat(path).st_size
