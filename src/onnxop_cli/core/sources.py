"""Where a tensor's bytes come from: memory, a byte range of an input file,
or a stream, each read in chunks when the GPU asks for them (so a tensor
never has to fit in RAM twice). tensor.Tensor holds one of these.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Callable, Iterable, Protocol

from ..errors import InputError, OnnxopError
from .files import read_error

if TYPE_CHECKING:
    import numpy as np

    from .files import InputFile


class ByteSource(Protocol):
    """Where a tensor's bytes come from. Read front to back, in chunks."""

    nbytes: int

    def readinto(self, offset: int, out: memoryview) -> None:
        """Fill ``out`` with the bytes at ``offset``; raise InputError if short."""

    def to_array(self) -> np.ndarray:
        """All bytes in memory as a 1-D uint8 array."""

    def close(self) -> None:
        """Done with these bytes: an input file's descriptor is closed."""


class MemoryBytes:
    """Bytes already in memory (any C-contiguous buffer, viewed as uint8)."""

    def __init__(self, buffer) -> None:
        import numpy as np

        # Raw bytes as bytes (np.asarray(b"") would be one empty S1 item: 1 byte)
        arr = np.frombuffer(buffer, np.uint8) if isinstance(buffer, (bytes, bytearray, memoryview)) else np.asarray(buffer)
        if not arr.flags.c_contiguous:
            raise ValueError("MemoryBytes needs a C-contiguous buffer")
        self._array = arr.reshape(-1).view(np.uint8)
        self.nbytes = int(self._array.nbytes)

    def readinto(self, offset: int, out: memoryview) -> None:
        out[:] = memoryview(self._array[offset : offset + len(out)])

    def to_array(self) -> np.ndarray:
        return self._array

    def close(self) -> None:
        pass

    @classmethod
    def filled(cls, fill: Callable[[Callable[[memoryview], None]], object], nbytes: int) -> MemoryBytes:
        """``nbytes`` collected in memory from ``fill``, which hands its chunks,
        in order, to the sink it is given (a kernel's result with no output file)."""
        import numpy as np

        buf = np.empty(nbytes, dtype=np.uint8)
        filled = 0

        def sink(chunk: memoryview) -> None:
            nonlocal filled
            buf[filled : filled + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
            filled += len(chunk)

        fill(sink)
        return cls(buf)


class FileBytes:
    """A byte range of an input file, read from the descriptor opened when
    its header was read (see files.py): a file renamed over the path cannot
    mix in, and one changed in place is refused, with the file's figures."""

    def __init__(self, file: InputFile | Path, offset: int, nbytes: int) -> None:
        from .files import InputFile

        self.file = file if isinstance(file, InputFile) else InputFile(file)
        self.file.users += 1
        self._closed = False
        self.path = self.file.path
        self.offset = offset
        self.nbytes = nbytes

    def readinto(self, offset: int, out: memoryview) -> None:
        try:
            self._check()
            got = self.file.pread_into(self.offset + offset, out)
            if got != len(out):
                raise self._truncated(len(out) - got)
            self._check()  # changed during the read: what was read may be half new
        except OSError as e:  # named here: an OSError reaching the output would be blamed on it
            raise read_error(self.path, e) from None

    def readruns(self, runs: Iterable[tuple[int, int, int]], out: memoryview) -> None:
        """Fill ``out`` from (offset, out byte, bytes) runs: as readinto each,
        with the file checked once before the runs and once after (a large
        transpose reads a band as a million short runs: the two checks per
        run cost more than the reads)."""
        try:
            self._check()
            fd, base, preadv = self.file.fd, self.offset, os.preadv
            for offset, into, n in runs:
                piece = out[into : into + n]
                if preadv(fd, [piece], base + offset) != n:  # short (or interrupted): the careful way
                    got = self.file.pread_into(base + offset, piece)
                    if got != n:
                        raise self._truncated(n - got)
            self._check()  # changed during the reads: what was read may be half new
        except OSError as e:
            raise read_error(self.path, e) from None

    def _check(self) -> None:
        st = self.file.stat()
        if st.st_size < self.offset + self.nbytes:
            raise self._truncated(self.offset + self.nbytes - st.st_size)
        self.file.check_unchanged(st)

    def _truncated(self, at_least: int) -> InputError:
        """The whole range's shortfall, from the file's size now (not the
        chunk's: a chunk read short says only where the file ends)."""
        end = self.offset + self.nbytes
        try:
            now = self.file.stat().st_size
        except OSError:
            now = None
        if now is not None and self.file.size >= end:  # whole when opened: it shrank under the read
            # the words the SIGBUS handler (core/sigbus.py) uses for a mapped read of the same file
            return InputError(
                f"{self.file.label}: file was truncated while onnxop read it: it now has {now} bytes, "
                f"{max(end - now, at_least)} of the {end} needed are missing; not used"
            )
        missing = at_least if now is None else max(at_least, end - now)
        return InputError(
            f"{self.file.label}: file is truncated: expected {self.nbytes} data bytes "
            f"from offset {self.offset}, it ends {missing} bytes early"
        )

    def to_array(self) -> np.ndarray:
        import numpy as np

        if self.nbytes >= MAP_THRESHOLD:
            return self._mapped()
        out = np.empty(self.nbytes, dtype=np.uint8)
        if self.nbytes:
            self.readinto(0, memoryview(out))
        return out

    def _mapped(self) -> np.ndarray:
        """The range mapped read-only, from the same descriptor: printing a
        summary of a large tensor then reads only the pages it shows, and
        nothing is held twice."""
        self._check()
        return self.file.map(self.offset, self.nbytes)

    def close(self) -> None:
        """This tensor is done with the file; the last user closes it."""
        if not self._closed:
            self._closed = True
            self.file.users -= 1
            if self.file.users <= 0:
                self.file.close()


# File ranges at least this large are mapped instead of read when all their
# values are asked for (printing, show); a result this large is kept in an
# unlinked temporary file instead of memory (core.apply without an output).
MAP_THRESHOLD = 64 << 20


def read_runs(source: ByteSource, runs: Iterable[tuple[int, int, int]], out: memoryview) -> None:
    """Fill ``out`` from ``source`` as (source byte, out byte, bytes) runs:
    the source's own ``readruns`` where it has one (FileBytes: one check of
    the file for all of them), else one readinto per run."""
    batch = getattr(source, "readruns", None)
    if batch is not None:
        batch(runs, out)
        return
    for offset, into, n in runs:
        source.readinto(offset, out[into : into + n])


def readinto_full(f: BinaryIO, out: memoryview) -> int:
    """readinto until ``out`` is full or the stream ends; returns bytes read."""
    got = 0
    while got < len(out):
        n = f.readinto(out[got:])
        if not n:
            break
        got += n
    return got


STREAM_STEP = 64 << 20  # first allocation when a stream is read into memory; then it doubles


class StreamBytes:
    """Bytes from a stream that can only be read forwards (stdin)."""

    def __init__(self, stream: BinaryIO, nbytes: int, label: str = "<stdin>") -> None:
        self._stream = stream
        self._pos = 0
        self.nbytes = nbytes
        self.label = label

    def readinto(self, offset: int, out: memoryview) -> None:
        if offset != self._pos:
            raise RuntimeError("StreamBytes is read front to back, once")
        got = readinto_full(self._stream, out)
        self._pos += got
        if got != len(out):
            raise InputError(
                f"{self.label}: stream is truncated: expected {self.nbytes} data bytes, the stream has {self._pos}"
            )

    def finish(self) -> None:
        """Read the data bytes no kernel asked for (a Slice of the front), so
        a truncated stream is refused as the same file would be, the stream's
        end is checked (StdinBytes), and the feeding process never sees its
        pipe closed early. Memory stays one step."""
        step = bytearray(min(1 << 20, max(self.nbytes - self._pos, 0)))
        while self._pos < self.nbytes:
            n = min(len(step), self.nbytes - self._pos)
            self.readinto(self._pos, memoryview(step)[:n])

    def to_array(self) -> np.ndarray:
        """The rest of the stream in memory. It grows with what actually
        arrives, never to the size the header claims: a stream declaring a
        terabyte and ending early fails with little memory used."""
        import numpy as np

        buf = bytearray()
        while self._pos < self.nbytes:
            step = min(self.nbytes - self._pos, max(STREAM_STEP, len(buf)))
            start = len(buf)
            buf.extend(bytes(step))
            self.readinto(self._pos, memoryview(buf)[start:])
        return np.frombuffer(buf, dtype=np.uint8) if buf else np.empty(0, dtype=np.uint8)

    def close(self) -> None:
        pass


def finish(source: object) -> None:
    """Read a stream source (stdin) to its end and check it, through any
    wrapper (progress.CountingBytes); other sources need nothing."""
    done = getattr(_innermost(source), "finish", None)
    if callable(done):
        done()


def _innermost(source: object) -> object:
    while hasattr(source, "inner"):  # progress.CountingBytes and the like
        source = source.inner
    return source


def random_access(source: object) -> bool:
    """Whether reading ``source`` out of order is cheap (memory, a file), through any wrapper."""
    return isinstance(_innermost(source), (MemoryBytes, FileBytes))


SPOOL_STEP = 4 << 20


class Spooled:
    """A source copied front to back into an unlinked temporary file (``spool_source``)."""

    def __init__(self, file: BinaryIO, nbytes: int) -> None:
        self.file, self.nbytes = file, nbytes

    def readinto(self, offset: int, out: memoryview) -> None:
        self.file.seek(offset)
        self.file.readinto(out)

    def close(self) -> None:
        self.file.close()


def spool_source(source: ByteSource) -> Spooled:
    """``source`` (one read only front to back: stdin, a compressed .npz member) in an unlinked temporary
    file, to be read out of order (the strided gather's plans, gpu/gather.py); OnnxopError naming the
    folder where it does not fit."""
    folder = tempfile.gettempdir()
    file = tempfile.TemporaryFile(prefix="onnxop-", dir=folder)
    try:
        buf = memoryview(bytearray(min(SPOOL_STEP, source.nbytes)))
        for offset in range(0, source.nbytes, len(buf)):
            piece = buf[: min(len(buf), source.nbytes - offset)]
            source.readinto(offset, piece)
            file.write(piece)
        file.flush()
    except OSError as e:
        file.close()
        raise OnnxopError(
            f"{folder}: cannot hold the {source.nbytes}-byte input that is read out of order: "
            f"{e.strerror or e} (set TMPDIR)"
        ) from None
    except BaseException:
        file.close()
        raise
    return Spooled(file, source.nbytes)
