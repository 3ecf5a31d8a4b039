"""Input files, opened once: every byte of a tensor comes from one descriptor.

Reopening an input by name per chunk would mix two files when another is
renamed over the path mid-run. An :class:`InputFile` opens the path once,
records what it opened (device, inode, size, modification time) and reads
with ``os.pread`` on that descriptor, so a rename over the path cannot mix
in: the run reads the file it opened, as ``np.load`` does. A change in place
(a truncation, a rewrite, an append) is caught by ``fstat`` before each read
and refused with the file's figures.

Descriptors are a budget: a batch of thousands of inputs reads every header
first. The soft RLIMIT_NOFILE is raised to the hard limit once; past
:func:`budget` open inputs, the least recently used one is *parked*
(closed, its identity kept) and reopened when it is read again, refused if
the path no longer names the same unchanged file.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import weakref
from collections import OrderedDict
from pathlib import Path

from ..errors import InputError, OnnxopError

RESERVE = 64  # descriptors left for everything else (the GPU driver, outputs, stdio)
# open inputs, least recently used first (weak: a tensor dropped closes its file)
_OPEN: OrderedDict[int, weakref.ref[InputFile]] = OrderedDict()
_limit: list[int] = []  # the soft limit once raised (a list: set once)


def budget() -> int:
    """How many inputs may hold a descriptor at once."""
    if not _limit:
        _limit.append(_raise_limit())
    return max(1, _limit[0] // 2 - RESERVE)


def _raise_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit (a process may); returns the soft limit."""
    try:
        import resource
    except ImportError:  # not a Unix
        return 512
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 16)
    target = min(target, 1 << 20)  # macOS refuses more than OPEN_MAX; no need for more anyway
    if soft == resource.RLIM_INFINITY or soft >= target:
        return min(soft, 1 << 20) if soft != resource.RLIM_INFINITY else 1 << 20
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return target
    except (ValueError, OSError):
        return soft


def read_error(path: Path | str, e: OSError) -> OnnxopError:
    """An input that cannot be read: exit 2 when the user can fix it (gone,
    permissions), else 1 (an I/O error)."""
    message = f"{path}: cannot read: {e.strerror or e}"
    fixable = e.errno in (errno.ENOENT, errno.EACCES, errno.EPERM, errno.EISDIR, errno.ENOTDIR, errno.ELOOP)
    return InputError(message) if fixable else OnnxopError(message)


# Each input file as it was when first opened, by real path: an output that
# is also an input is replaced only if it is still that file (io/lock.py).
_READ_AS: dict[str, tuple[int, ...]] = {}


def file_identity(st: os.stat_result) -> tuple[int, ...]:
    """Inode, size, modification and change times: any write or rename changes one."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def read_as(path: Path | str) -> tuple[int, ...] | None:
    """The identity ``path`` had when this process first opened it as an
    input, or None if it did not."""
    return _READ_AS.get(os.path.realpath(path))


def forget_reads() -> None:
    """The in-process CLI runs many commands in one process: each starts afresh."""
    _READ_AS.clear()


class InputFile:
    """One regular file, opened once, read by offset (``os.pread``)."""

    def __init__(self, path: Path | str, label: str | None = None) -> None:
        self.path = Path(path)
        self.label = label or str(path)
        self._fd = -1
        self.users = 0  # ByteSources reading this file; the last to close closes it
        fd = self._open()
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            self.close()
            raise InputError(f"{self.label}: not a regular file")
        self.identity = (st.st_dev, st.st_ino)
        _READ_AS.setdefault(os.path.realpath(self.path), file_identity(st))
        self.size = st.st_size
        self.mtime = st.st_mtime_ns

    # -- the descriptor

    def _open(self) -> int:
        while len(_OPEN) >= budget():
            oldest = _OPEN.popitem(last=False)[1]()
            if oldest is not None:
                oldest._park()
        try:
            # O_NONBLOCK: opening a FIFO named as an input must not wait for a writer
            self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE):
                raise OnnxopError(f"{self.label}: cannot open: too many open files ({e.strerror})") from None
            raise read_error(self.label, e) from None
        _OPEN[id(self)] = weakref.ref(self)
        return self._fd

    def _park(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    @property
    def fd(self) -> int:
        """The descriptor; a parked file is reopened, and must be the same file, unchanged."""
        if self._fd >= 0:
            _OPEN.move_to_end(id(self))
            return self._fd
        fd = self._open()
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != self.identity or (st.st_size, st.st_mtime_ns) != (self.size, self.mtime):
            self.close()
            raise InputError(
                f"{self.label}: the file was replaced or changed after onnxop opened it "
                f"(too many inputs to keep each open); not read"
            )
        return fd

    def close(self) -> None:
        self._park()
        _OPEN.pop(id(self), None)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    # -- reading

    def stat(self) -> os.stat_result:
        return os.fstat(self.fd)

    def check_unchanged(self, st: os.stat_result | None = None) -> None:
        """Refuse a file changed in place since it was opened (another size or
        modification time): what was read so far may be half old, half new."""
        st = st or self.stat()
        if (st.st_size, st.st_mtime_ns) != (self.size, self.mtime):
            sizes = f": {self.size} -> {st.st_size} bytes" if st.st_size != self.size else ""
            raise InputError(f"{self.label}: the file changed while onnxop read it (modified in place{sizes}); not used")

    def pread_into(self, offset: int, out: memoryview) -> int:
        """Fill ``out`` from ``offset``; returns the bytes read (fewer at the end)."""
        got = 0
        try:
            while got < len(out):
                n = os.preadv(self.fd, [out[got:]], offset + got)
                if not n:
                    break
                got += n
        except OSError as e:
            raise read_error(self.label, e) from None
        return got

    def reader(self) -> io.BufferedReader:
        """A seekable file object over the descriptor (for numpy's header parser and zipfile)."""
        return io.BufferedReader(_PreadRaw(self), buffer_size=1 << 16)

    def map(self, offset: int, nbytes: int):
        """``nbytes`` from ``offset`` mapped read-only, as a uint8 array."""
        import mmap

        import numpy as np

        self.check_unchanged()
        start = offset - offset % mmap.ALLOCATIONGRANULARITY
        try:
            mapped = mmap.mmap(self.fd, offset + nbytes - start, access=mmap.ACCESS_READ, offset=start)
        except OSError as e:
            if e.errno == errno.ENOMEM:  # no address space left (ulimit -v): a runtime failure, exit 1
                raise OnnxopError(f"out of memory: {self.label}: cannot map its {nbytes} bytes ({e.strerror})") from None
            raise read_error(self.label, e) from None
        array = np.frombuffer(mapped, dtype=np.uint8, count=nbytes, offset=offset - start)
        from .sigbus import register  # truncated in place while mapped: one line, not a silent SIGBUS

        register(array, self.label, str(self.path), offset + nbytes)
        return array


class _PreadRaw(io.RawIOBase):
    """A raw file over an InputFile: reads by offset, so it shares the
    descriptor with every other reader without a shared position."""

    def __init__(self, source: InputFile) -> None:
        self._source = source
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = self._source.pread_into(self._pos, memoryview(b).cast("B"))
        self._pos += n
        return n

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._source.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos
