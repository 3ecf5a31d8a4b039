"""``-`` as a path: a ``.npy`` stream on stdin, or ``.npy`` bytes to stdout.

stdin is read front to back, once: the header is parsed with the same safe
reader as files (``npy.read_header``, never a pickle), then the data streams
through the GPU in chunks without being held in memory. The stream must hold
exactly one ``.npy`` file: bytes after the data are refused, and waiting for
the end of the stream also means a pipeline's messages come out in order.

stdout gets the header and the data as the GPU returns them. It cannot be
written atomically: a failure part-way leaves a partial stream (the exit code
says so); a file named with ``-o`` is still written atomically.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from ..errors import InputError, UsageError
from ..tensor import StreamBytes, Tensor
from . import npy

STDIO = "-"
STDIN_NAME = "stdin"  # the tensor's name, as shown and as written to JSON
STDOUT_LABEL = "stdout"  # where "wrote ..." says the output went


def is_stdio(path: object) -> bool:
    """True for the path ``-`` (stdin as an input, stdout as an output)."""
    return path is not None and str(path) == STDIO


def _stdin() -> BinaryIO:
    return sys.stdin.buffer


def _stdout() -> BinaryIO:
    return sys.stdout.buffer


class StdinBytes(StreamBytes):
    """StreamBytes that also checks, after the last data byte, that the stream ends."""

    def readinto(self, offset: int, out: memoryview) -> None:
        super().readinto(offset, out)
        if self._pos == self.nbytes:
            self._expect_end()

    def _expect_end(self) -> None:
        extra = self._stream.read(1)
        if extra:
            rest = 1 + sum(len(b) for b in iter(lambda: self._stream.read(1 << 20), b""))
            raise InputError(
                f"{self.label}: {rest} bytes follow the .npy data; pipe exactly one .npy file"
            )


def read_npy_stream(stream: BinaryIO | None = None, *, label: str = "-", isatty: bool | None = None) -> Tensor:
    """The tensor of a ``.npy`` stream (stdin by default); its data is read
    later, front to back, when the GPU asks for it."""
    if stream is None:
        if (sys.stdin.isatty() if isatty is None else isatty):
            raise UsageError(
                "-: stdin is a terminal; pipe a .npy file in (example: onnxop flatten - < a.npy)"
            )
        stream = _stdin()
    peek = getattr(stream, "peek", None)
    if peek is not None and not peek(1):
        raise InputError(f"{label}: stdin is empty; pipe a .npy file in (example: onnxop flatten - < a.npy)")
    _, shape, fortran, np_dtype = npy.read_header(stream, label)
    npy.check_dtype(np_dtype, label)
    nbytes = npy.declared_size(shape, np_dtype, label)
    data = StdinBytes(stream, nbytes, label)
    if nbytes == 0:
        data._expect_end()
    # Same rules as a file: big-endian is byte-swapped and Fortran order
    # re-laid out on the GPU, text becomes a string tensor (read now).
    return npy.tensor_from_header(label, STDIN_NAME, shape, fortran, np_dtype, data)


def check_stdout(isatty: bool | None = None) -> None:
    """Refuse to write binary .npy bytes onto a terminal."""
    if sys.stdout.isatty() if isatty is None else isatty:
        raise UsageError(
            "-o -: stdout is a terminal; redirect it to a file or a pipe "
            "(example: onnxop flatten a.npy -o - | onnxop show -)"
        )


@contextmanager
def stdout_writer(stream: BinaryIO | None = None) -> Iterator[npy.NpyWriter]:
    """A .npy writer on stdout: the header, then the data as the GPU returns it."""
    out = _stdout() if stream is None else stream
    writer = npy.NpyWriter(out, STDOUT_LABEL)
    yield writer
    writer.close()
    out.flush()


def stdio_label(path: Path | str) -> str:
    """How messages name a path: ``stdout`` for ``-``, else the path."""
    return STDOUT_LABEL if is_stdio(path) else str(path)
