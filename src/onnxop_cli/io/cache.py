"""onnxop's folder in the user's cache ($XDG_CACHE_HOME/onnxop, else
~/.cache/onnxop) and the one way files are written there: through the one
atomic writer (atomic.py: a temporary file renamed over the old one with
signals held, removed on any failure or signal), so a reader never sees half
a file. Everything in it can be deleted at any time; onnxop only re-measures
or re-parses what it finds missing. A file that several processes add to
(kernels.json) is read, changed and written under ``locked``, so no process's
addition is lost to another's write."""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..core import signals
from ..errors import OnnxopError
from . import lock
from .atomic import TMP_PREFIX, TMP_SUFFIX, atomic_output


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(root) if root and os.path.isabs(root) else Path.home() / ".cache"
    return base / "onnxop"


def write_atomic(path: Path, data: bytes) -> bool:
    """Replace ``path`` with ``data``; False (nothing changed) when the
    folder cannot be written: a cache is a convenience, never an error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(path) as f:
            os.fchmod(f.fileno(), 0o600)  # ours alone: read_regular(private=True) trusts no other writer
            f.write(data)
    except (OSError, OnnxopError):
        return False
    _sweep(path.parent)
    # atomic_output holds signals from the rename until the next checkpoint
    # (an output's commit); a cache file is not an output: the work goes on,
    # and a signal that came meanwhile ends it here, with the file complete.
    signals.checkpoint()
    return True


def _sweep(folder: Path) -> None:
    """Remove the temporary files of writers that died mid-write (SIGKILL, a
    power cut: atomic.py removes its own on anything else). In an output
    folder they are left, named by pid, for the user; this folder is
    onnxop's, and each would stay for good (a cffi cache's is ~300 KB)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        found = re.fullmatch(rf"{re.escape(TMP_PREFIX)}(\d+)-[a-z0-9]+{re.escape(TMP_SUFFIX)}", name)
        if found and int(found[1]) != os.getpid() and not lock.alive(int(found[1])):
            try:
                os.unlink(folder / name)
            except OSError:
                pass


LOCK_SUFFIX = ".lock"
LOCK_WAIT = 10.0  # seconds: a holder keeps the lock for a read and a write (milliseconds)


@contextmanager
def locked(path: Path, wait: float = LOCK_WAIT) -> Iterator[bool]:
    """Hold an advisory lock (``flock``) on ``<path>.lock`` beside ``path``
    while the block reads, changes and writes ``path``; yields whether it is
    held. The kernel drops the lock of a process that dies (SIGKILL
    included), so a stale lock cannot exist; the lock file itself stays
    (empty, harmless). The block runs unlocked, as before there was a lock,
    where one cannot be had: a folder that cannot be written (the write then
    fails too), a filesystem without locks, no ``fcntl``, or a holder that
    keeps it past ``wait`` (a stopped process)."""
    fd = _open_lock(path)
    try:
        yield fd is not None and _flock(fd, wait)
    finally:
        if fd is not None:
            os.close(fd)  # drops the lock


def _open_lock(path: Path) -> int | None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK  # a FIFO: no wait
        return os.open(f"{path}{LOCK_SUFFIX}", flags, 0o600)
    except OSError:
        return None


def _flock(fd: int, wait: float) -> bool:
    try:
        import fcntl
    except ImportError:  # not POSIX
        return False
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR) or time.monotonic() >= deadline:
                return False  # ENOLCK, EOPNOTSUPP...: no locks here; or held too long
        time.sleep(0.005)


def read_regular(path: Path, private: bool = False) -> bytes | None:
    """``path``'s bytes if it is a regular file (and, ``private``, one of
    ours that no one else can write), else None. Opened without blocking: a
    FIFO put in its place (which open() would wait on for good) is not read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with open(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or (private and (st.st_uid != os.getuid() or st.st_mode & 0o022)):
                return None
            return f.read()
    except OSError:
        return None
