"""``-`` as a path: a ``.npy`` stream on stdin, or ``.npy`` bytes to stdout.

stdin is read front to back, once: the header is parsed with the same safe
reader as files (``npy.read_header``, never a pickle), then the data streams
through the GPU in chunks without being held in memory. The stream must hold
exactly one ``.npy`` file: bytes after the data are refused, and waiting for
the end of the stream also means a pipeline's messages come out in order.

stdout gets the header and the data as the GPU returns them. It cannot be
written atomically: a failure part-way leaves a partial stream (the exit code
says so); a file named with ``-o`` is still written atomically.

The standard streams themselves may be closed (``<&-``, ``>&-``) or broken (a
reader that went away, ``> /dev/full``). ``guard_standard_fds`` puts
``/dev/null`` on a closed one at start-up -- otherwise the next file opened
(an output's temporary file) would get its number, and anything written to
"stdout" would land in the output -- and remembers it was closed: reading
``-`` from a closed stdin is a usage error, and text for a closed stdout is
dropped as ``> /dev/null`` would drop it. A failed write on stdout becomes
:class:`StdoutError`, one line naming stdout.
"""

from __future__ import annotations

import errno
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from ..errors import InputError, OutputError, UsageError
from ..core.sources import StreamBytes
from ..core.tensor import Tensor
from . import npy

STDIO = "-"
STDIN_NAME = "stdin"  # the tensor's name, as shown and as written to JSON
STDOUT_LABEL = "stdout"  # where "wrote ..." says the output went

# stdin takes any format onnxop reads (io/sniff.py tells them apart)
PIPE_HINT = "pipe a .npy, .npz or .pb (TensorProto) in (example: onnxop flatten - < a.npy)"


_closed: set[int] = set()  # standard fds that were closed when onnxop started


class StdoutError(OutputError):
    """Writing to stdout failed: the reader went away, or the disk is full."""

    def __init__(self, e: OSError) -> None:
        reason = "broken pipe (the reader stopped reading)" if e.errno == errno.EPIPE else e.strerror or str(e)
        super().__init__(f"{STDOUT_LABEL}: {reason}")
        self.errno = e.errno


def reader_left(e: BaseException) -> bool:
    """True when ``e`` says stdout's reader went away (EPIPE: ``| head``)."""
    return isinstance(e, (StdoutError, OSError)) and getattr(e, "errno", None) == errno.EPIPE


def guard_standard_fds() -> None:
    """Put /dev/null on stdin, stdout or stderr where one is closed, and
    remember which were (the console entry point calls this first)."""
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        _closed.add(fd)
        stream = open(fd, mode, closefd=False, encoding="utf-8", errors="backslashreplace")
        setattr(sys, name, stream)


def stdout_closed() -> bool:
    return 1 in _closed


def write_all(stream: BinaryIO, data) -> None:
    """All of ``data`` into the binary ``stream``. A pipe whose reader leaves
    in the middle of a large write takes part of it and says so only by the
    count (a buffered writer then returns that count, the rest dropped):
    the rest is written again, and that write fails with EPIPE."""
    view = memoryview(data).cast("B")
    while len(view):
        n = stream.write(view)
        if n is None:  # a raw stream that would block: stdout is not non-blocking
            raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))
        view = view[n:]


TEXT_STEP = 1024  # characters per write: 4 KiB at most in UTF-8, within the buffer, whose flush writes all or fails


def write_text(text: str) -> None:
    """Result text (a printout, a JSON document) to stdout, all of it; a
    failure names stdout. Written in steps: one large write to a pipe whose
    reader leaves part-way is taken in part and the rest dropped silently
    (write_all), which the buffer's own flush of each step never does."""
    try:
        for start in range(0, len(text), TEXT_STEP):
            sys.stdout.write(text[start : start + TEXT_STEP])
        sys.stdout.flush()
    except OSError as e:
        raise StdoutError(e) from None


def settle_stdout() -> None:
    """Before exiting: flush stdout, and if that cannot be done point it at
    /dev/null, so that Python's own flush at exit prints no traceback."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError):
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, sys.stdout.fileno())
            os.close(null)
        except (OSError, ValueError, AttributeError):
            pass


def is_stdio(path: object) -> bool:
    """True for the path ``-`` (stdin as an input, stdout as an output)."""
    return path is not None and str(path) == STDIO


def _stdin() -> BinaryIO:
    if 0 in _closed or sys.stdin is None:
        raise UsageError(f"-: stdin is closed; {PIPE_HINT}")
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
        _stdin()  # a closed stdin is refused before anything else
        if (sys.stdin.isatty() if isatty is None else isatty):
            raise UsageError(
                f"-: stdin is a terminal; {PIPE_HINT}"
            )
        stream = _stdin()
    peek = getattr(stream, "peek", None)
    if peek is not None and not peek(1):
        raise InputError(f"{label}: stdin is empty; {PIPE_HINT}")
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
    """Refuse to write binary .npy bytes onto a terminal, or a closed stdout."""
    if stdout_closed():
        raise UsageError("-o -: stdout is closed; redirect it to a file or a pipe")
    if sys.stdout.isatty() if isatty is None else isatty:
        raise UsageError(
            "-o -: stdout is a terminal; redirect it to a file or a pipe "
            "(example: onnxop flatten a.npy -o - | onnxop show -)"
        )


@contextmanager
def stdout_writer(stream: BinaryIO | None = None, module=npy) -> Iterator[npy.NpyWriter]:
    """A writer on stdout (a .npy one, or ``module``'s: an .npz or a .pb):
    the header, then the data as the GPU returns it. An .npz is written as
    a zip stream can be, each member's sizes after its data."""
    out = _NamedStdout(_stdout() if stream is None else stream)
    writer = module.WRITER(out, STDOUT_LABEL)
    try:
        yield writer
        writer.close()
    except BaseException:
        abort = getattr(writer, "abort", None)
        if abort is not None:
            abort()
        raise
    out.flush()


class _NamedStdout:
    """stdout's binary stream, whose failures name stdout (StdoutError)."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream

    def write(self, data) -> int:
        try:
            write_all(self._stream, data)
        except OSError as e:
            raise StdoutError(e) from None
        return memoryview(data).nbytes

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as e:
            raise StdoutError(e) from None


def stdio_label(path: Path | str) -> str:
    """How messages name a path: ``stdout`` for ``-``, else the path."""
    return STDOUT_LABEL if is_stdio(path) else str(path)
