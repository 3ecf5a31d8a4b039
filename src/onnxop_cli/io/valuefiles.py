"""A folder of tensor files named by value: ``DIR/<name>.npy`` (.pb for the
types numpy lacks), as ``run -o DIR/`` and ``run --dump DIR`` write them and
``run --check DIR`` and ``compare A/ B/`` read them.

A model's value names come from the file: ``/backbone/conv1/Conv_output_0``,
``..``, a newline. Each character outside ``[A-Za-z0-9_.+-]`` (and a leading
``.``) becomes ``%XX`` of its UTF-8 bytes, as in a URL, so every name is one
file name in the folder and different names are different files; names
that would still meet (on a file system that ignores case) or that are too
long for one are refused before anything is written.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from ..errors import UsageError

if TYPE_CHECKING:
    from ..core.tensor import DType, Tensor

MAX_NAME = 240  # bytes of a file name, the suffix included (most file systems: 255)


def file_stem(name: str) -> str:
    """``name`` as one file name's stem: ``/a/b:0`` -> ``%2Fa%2Fb%3A0``."""
    out = []
    for k, ch in enumerate(name):
        if re.fullmatch(r"[A-Za-z0-9_+-]", ch) or (ch == "." and k > 0):
            out.append(ch)
        else:
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass")))
    return "".join(out)


def suffix(dtype: DType) -> str:
    from . import npy

    return ".npy" if npy.can_hold(dtype) else ".pb"


def value_paths(folder: Path, values: Iterable[tuple[str, DType]], what: str,
                fmt: str | None = None) -> dict[str, Path]:
    """name -> ``folder/<stem><suffix>`` for each (name, dtype), the suffix
    ``fmt``'s when given (--format); refuses, up front, a name that no file
    name can hold and two names that would meet."""
    paths: dict[str, Path] = {}
    seen: dict[str, str] = {}
    for name, dtype in values:
        if not name:
            raise UsageError(f"{what}: a value has no name; it cannot be a file in {folder}")
        file = file_stem(name) + ("." + fmt.lower().lstrip(".") if fmt else suffix(dtype))
        if len(file.encode()) > MAX_NAME:
            raise UsageError(f"{what}: value {name!r} makes a file name of {len(file.encode())} bytes "
                             f"(at most {MAX_NAME}); it cannot be a file in {folder}")
        key = file.casefold()
        if key in seen and seen[key] != name:
            raise UsageError(f"{what}: values {seen[key]!r} and {name!r} would be one file, "
                             f"{str(folder / file)!r}, on a file system that ignores case")
        seen[key] = name
        paths[name] = folder / file
    return paths


def check_names(folder: Path, names: Iterable[str], what: str) -> None:
    """``value_paths``' refusals for values whose types are not known yet (either suffix)."""
    from ..core.tensor import dtype_by_name

    names = list(names)
    for dtype in ("float32", "bfloat16"):  # .npy, .pb
        value_paths(folder, [(n, dtype_by_name(dtype)) for n in names], what)


def find(folder: Path, name: str) -> Path | None:
    """The file of value ``name`` in ``folder`` (either suffix), if any; two that could be it (``y.npy`` and
    ``y.pb``, or ``X%3A0.npy`` beside ``X:0.npy``, the name written as it is) are refused, naming both, not
    one taken without a word."""
    # the name as it is, where no encoded stem (letters, digits, _+-.%) can be it: never another value's file
    as_is = name.isprintable() and "/" not in name and re.search(r"[^A-Za-z0-9_+.%-]", name)
    stems = dict.fromkeys((file_stem(name), name) if as_is else (file_stem(name),))
    found = [folder / (stem + s) for stem in stems for s in (".npy", ".pb") if (folder / (stem + s)).is_file()]
    if len(found) > 1:
        raise UsageError(f"{str(folder)!r}: {' and '.join(repr(p.name) for p in found)} could each be value "
                         f"{name!r}; keep one")
    return found[0] if found else None


def write(path: Path, t: Tensor) -> None:
    """One host tensor into ``path``, atomically (io.open_writer)."""
    from . import open_writer

    with open_writer(path) as writer:
        if t.dtype.is_string:
            writer.strings(t.name, t.strings, t.text_dtype)
            return
        with writer.tensor(t.name, tuple(t.shape), t.dtype) as sink:
            if t.size:
                sink(memoryview(row_major(t)))


def row_major(t: Tensor):
    """``t``'s bytes in row-major order, little-endian, sub-byte types packed."""
    import numpy as np

    from ..core.tensor import Tensor as T

    if t.order == "C" and not t.byteswap:
        return np.ascontiguousarray(t.data.to_array()).reshape(-1).view(np.uint8)[: t.nbytes]
    a = np.ascontiguousarray(t.to_numpy())
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return row_major(T.from_numpy(a, t.name, dtype=t.dtype))
