"""String tensors on the host: ONNX strings are UTF-8 ``bytes``.

Converting numpy text (``<U``, ``S``) to and from the object arrays of bytes
a Tensor holds, and bounding the memory they take before they are made.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..errors import InputError

if TYPE_CHECKING:
    import numpy as np


def strings_to_bytes(array: np.ndarray) -> np.ndarray:
    """An object array of ``bytes`` (ONNX's string elements) from str or bytes values."""
    import numpy as np

    check_text(np.asarray(array))
    out = np.empty(np.shape(array), dtype=object)
    flat = out.reshape(-1)
    for i, value in enumerate(np.asarray(array).reshape(-1)):
        if isinstance(value, (bytes, np.bytes_)):
            flat[i] = bytes(value)
        elif isinstance(value, (str, np.str_)):
            try:
                flat[i] = str(value).encode("utf-8")
            except UnicodeEncodeError as e:  # a lone surrogate in an object array's str (check_text sees only <U)
                raise InputError(f"a string holds U+{ord(e.object[e.start]):04X}, which is no Unicode character "
                                 "(ONNX strings are UTF-8)") from None
        else:
            raise InputError(f"a string tensor holds a value of type {type(value).__name__}, not text")
    return out


def check_text(array: np.ndarray) -> None:
    """Refuse numpy fixed-width text (UCS-4) holding code units that are no
    character: surrogates, or values past U+10FFFF. Python cannot even hold
    the latter in a str, and neither has a UTF-8 form (ONNX strings are
    UTF-8). Checked on the raw code units, before any str is made."""
    import numpy as np

    if array.dtype.kind != "U" or array.size == 0 or array.dtype.itemsize == 0:
        return
    codes = np.ascontiguousarray(array).view(np.dtype("u4").newbyteorder(array.dtype.byteorder)).reshape(-1)
    for start in range(0, codes.size, 1 << 22):  # in slices: the masks stay small for a huge array
        part = codes[start : start + (1 << 22)]
        bad = (part > 0x10FFFF) | ((part >= 0xD800) & (part <= 0xDFFF))
        if bad.any():
            code = int(part[np.argmax(bad)])
            raise InputError(f"a string holds U+{code:04X}, which is no Unicode character (ONNX strings are UTF-8)")


def text_dtype_of(np_dtype: np.dtype) -> str:
    """The little-endian name of a numpy text dtype (``<U5``, ``|S2``); "" for object arrays."""
    return np_dtype.newbyteorder("<").str if np_dtype.kind in "US" else ""


STRING_OVERHEAD = 8 + 33  # bytes per string held in memory: a pointer and a Python bytes object


def check_string_memory(count: int, nbytes: int, label: str) -> None:
    """Refuse, before they are made, ``count`` strings of ``nbytes`` bytes in
    all that would not fit the memory available (one line, not MemoryError)."""
    need = count * STRING_OVERHEAD + nbytes
    free = available_memory()
    if free is not None and need > free:
        raise InputError(
            f"{label}: {count} strings of {nbytes} bytes need about {need} bytes of memory; "
            f"{free} bytes are available"
        )


def available_memory() -> int | None:
    """Bytes of memory available now (Linux's MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def strings_to_text(array: np.ndarray) -> np.ndarray:
    """The values as onnx.numpy_helper gives them: an object array of ``str``
    (UTF-8 decoded); left as ``bytes`` if any element is not valid UTF-8."""
    import numpy as np

    try:
        texts = [b.decode("utf-8") for b in array.reshape(-1)]
    except UnicodeDecodeError:
        return array.copy()
    out = np.empty(array.shape, dtype=object)
    out.reshape(-1)[:] = texts
    return out
