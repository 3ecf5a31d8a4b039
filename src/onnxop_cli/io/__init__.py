"""Tensor files, one module per format, chosen by suffix."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from ..errors import UsageError
from ..tensor import DType, Tensor
from . import npy, stdio
from .atomic import atomic_output, check_output_path

Sink = Callable[[memoryview], None]
FORMATS = (".npy",)


def _suffix(path: Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        shown = suffix or "no suffix"
        raise UsageError(f"{path}: unknown format ({shown}); onnxop reads and writes {', '.join(FORMATS)}")
    return suffix


def read_tensor(path: Path) -> Tensor:
    """Read the tensor in ``path`` (its bytes are read later, in chunks);
    ``-`` is a .npy stream on stdin."""
    if stdio.is_stdio(path):
        return stdio.read_npy_stream()
    path = Path(path)
    _suffix(path)
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if not path.is_file():
        raise UsageError(f"{path}: not a regular file")
    return npy.read_npy(path)


def read_tensors(path: Path) -> list[Tensor]:
    """Every tensor a file holds, for ``onnxop show``: one for .npy and .pb,
    each member for .npz (formats that hold several tensors list them here)."""
    return [read_tensor(path)]


def check_output(path: Path, dtype: DType | None = None) -> None:
    """Refuse an output path before any work is done."""
    if stdio.is_stdio(path):
        return stdio.check_stdout()
    _suffix(path)
    check_output_path(Path(path))


@contextmanager
def open_output(path: Path, shape: tuple[int, ...], dtype: DType) -> Iterator[Sink]:
    """A sink that writes the tensor's data into ``path``, atomically: the file
    appears, complete, only if the block finishes. ``-`` streams a .npy to
    stdout instead (not atomic: a stream cannot be taken back)."""
    if stdio.is_stdio(path):
        with stdio.stdout_output(shape, dtype) as sink:
            yield sink
        return
    path = Path(path)
    _suffix(path)
    with atomic_output(path) as f:
        npy.write_header(f, shape, dtype)
        yield f.write


__all__ = ["FORMATS", "read_tensor", "read_tensors", "check_output", "open_output", "atomic_output"]
