"""``.npy`` files: safe header parsing, lazy data, streaming writes.

The header is parsed with numpy's own format functions (a literal dict, never
a pickle); the data is not read here, only located: the GPU path reads it in
chunks. The declared size is checked against the file before anything is
allocated.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import BinaryIO

from ..errors import InputError
from ..tensor import DType, FileBytes, Tensor, dtype_of_numpy


def read_header(f: BinaryIO, label: str):
    """Parse magic and header; returns (version, shape, fortran_order, numpy dtype)."""
    import numpy as np

    fmt = np.lib.format
    try:
        version = fmt.read_magic(f)
    except ValueError as e:
        raise InputError(f"{label}: not a .npy file ({_clean(e)})") from None
    try:
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(f)
        elif version == (3, 0) and hasattr(fmt, "_read_array_header"):
            shape, fortran, dtype = fmt._read_array_header(f, version)
        else:
            raise InputError(f"{label}: unsupported .npy format version {version[0]}.{version[1]}")
    except (ValueError, SyntaxError, TypeError, EOFError) as e:
        raise InputError(f"{label}: invalid .npy header ({_clean(e)})") from None
    return version, tuple(shape), bool(fortran), dtype


def check_dtype(np_dtype, label: str) -> DType:
    """Refuse what would need a pickle or has no ONNX type; name the dtype."""
    if np_dtype.hasobject:
        raise InputError(
            f"{label}: dtype {np_dtype!s} holds Python objects; onnxop never unpickles"
        )
    if np_dtype.names is not None or np_dtype.subdtype is not None:
        raise InputError(f"{label}: structured dtype {np_dtype!s} has no ONNX tensor type")
    if np_dtype.kind in "MmV":
        raise InputError(f"{label}: dtype {np_dtype!s} has no ONNX tensor type")
    if np_dtype.kind in "US":
        raise InputError(f"{label}: string dtype {np_dtype!s} is not supported yet")
    if np_dtype.byteorder == ">":
        raise InputError(
            f"{label}: big-endian dtype {np_dtype.str} is not supported yet; "
            "save the array little-endian"
        )
    try:
        return dtype_of_numpy(np_dtype)
    except InputError as e:
        raise InputError(f"{label}: {e}") from None


def read_npy(path: Path, name: str | None = None) -> Tensor:
    """The tensor in ``path``; its bytes stay on disk until they are copied."""
    path = Path(path)
    label = str(path)
    with open(path, "rb") as f:
        _, shape, fortran, np_dtype = read_header(f, label)
        data_offset = f.tell()
        f.seek(0, 2)
        file_size = f.tell()
    dtype = check_dtype(np_dtype, label)
    if any(d < 0 for d in shape):
        raise InputError(f"{label}: negative dimension in shape {shape}")
    nbytes = math.prod(shape) * np_dtype.itemsize
    available = file_size - data_offset
    if nbytes > available:
        raise InputError(
            f"{label}: file is truncated: shape {shape} of {np_dtype} needs {nbytes} "
            f"data bytes, the file has {available}"
        )
    return Tensor(
        name=name or path.stem,
        shape=shape,
        dtype=dtype,
        data=FileBytes(path, data_offset, nbytes),
        order="F" if fortran and len(shape) > 1 else "C",
        source=label,
    )


def write_header(f: BinaryIO, shape: tuple[int, ...], dtype: DType) -> None:
    """Write a C-order, little-endian .npy header (format 1.0 unless it is too long)."""
    import numpy as np

    fmt = np.lib.format
    header = {
        "descr": fmt.dtype_to_descr(dtype.numpy.newbyteorder("<")),
        "fortran_order": False,
        "shape": tuple(shape),
    }
    try:
        fmt.write_array_header_1_0(f, header)
    except ValueError:
        fmt.write_array_header_2_0(f, header)


def _clean(e: Exception) -> str:
    return " ".join(str(e).split())[:200]
