"""Write-then-rename, so a failure never leaves a partial or clobbered file.

An output behaves like ``numpy.save``'s, where that is safe (git's lockfile
and the ``atomicwrites`` library work the same way):

- a symlink is written through: the temporary file sits next to the link's
  real target (the chain resolved), is renamed over that target, and the link
  stays a link;
- an existing file that is not a regular file (a device such as /dev/null, a
  FIFO, a socket) or that the user may not write is refused up front;
- the new file gets the old one's permission bits minus setuid, setgid and
  sticky (and, where allowed, its owner and group), or 0666 minus the umask;
- hard links part: the name gets a new inode, the other names keep the old.

The temporary file is ``.onnxop-<pid>-<random>.tmp`` (at most 24 characters,
so any name numpy.save can write works, and a leftover after a SIGKILL says
whose it is). It is removed on any failure, a signal included; the rename is
made with signals held (see signals.py).
"""

from __future__ import annotations

import errno
import os
import random
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from ..core import signals
from ..errors import OutputError, UsageError

TMP_PREFIX = ".onnxop-"
TMP_SUFFIX = ".tmp"
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
_live: set[Path] = set()  # this process's temporary files not yet renamed or removed
_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def real_target(path: Path) -> Path:
    """The file an output to ``path`` replaces: ``path``, or the end of its
    symlink chain (which need not exist yet: numpy.save creates it)."""
    path = Path(path)
    if not path.is_symlink():
        return path
    try:
        os.stat(path)
    except FileNotFoundError:
        pass  # a dangling link: its target is created, as open() would
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UsageError(f"{path}: the symlink leads into a loop") from None
        raise UsageError(f"{path}: cannot follow the symlink: {e.strerror}") from None
    return Path(os.path.realpath(path))


def check_output_path(path: Path) -> None:
    """Refuse, before any work is done, an output that cannot be written."""
    path = Path(path)
    target = real_target(path)
    via = f" (the symlink leads to {target})" if target != path else ""
    try:
        st = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        st = None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise UsageError(f"{path}: output path is a folder{via}; give a file name")
        for test, kind in _KINDS:
            if test(st.st_mode):
                raise UsageError(f"{path}: is {kind}{via}, not a regular file; onnxop writes regular files only")
        if not os.access(target, os.W_OK):
            raise UsageError(f"{path}: permission denied: the file is not writable for you{via}")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{path}: output folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{path}: output folder {parent} is not writable")


@contextmanager
def atomic_output(path: Path) -> Iterator[BinaryIO]:
    """Yield a temporary file next to ``path``'s real target; rename it over
    the target when the block finishes, remove it on any failure."""
    path = Path(path)
    check_output_path(path)
    target = real_target(path)
    tmp: Path | None = None
    try:
        with signals.held():  # created and recorded, or neither
            fd, tmp = _create_temp(target)
        with os.fdopen(fd, "wb") as f:
            yield f
        with signals.held():  # the rename is the commit: no signal may report it undone
            os.replace(tmp, target)
            _live.discard(tmp)
            signals.commit()
    except BaseException as e:
        _remove(tmp)
        if isinstance(e, OSError):
            raise OutputError(f"{path}: cannot write: {e.strerror or e}") from e
        raise


def _create_temp(target: Path) -> tuple[int, Path]:
    """A new temporary file in ``target``'s folder, with the mode (and owner)
    the output will have."""
    folder = target.parent if str(target.parent) else Path(".")
    try:
        old = os.stat(target)
    except OSError:
        old = None
    for _ in range(100):
        name = f"{TMP_PREFIX}{os.getpid()}-{''.join(random.choices(_ALPHABET, k=4))}{TMP_SUFFIX}"
        tmp = folder / name
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            continue
        except OSError as e:
            raise OutputError(f"{target}: cannot create a temporary file in {folder}: {e.strerror}") from e
        _live.add(tmp)
        try:
            _carry_mode(fd, old)
        except BaseException:
            os.close(fd)
            raise
        return fd, tmp
    raise OutputError(f"{target}: cannot create a temporary file in {folder}: too many name collisions")


def _carry_mode(fd: int, old: os.stat_result | None) -> None:
    """The mode the user would expect, not 0600: an existing file's permission
    bits without setuid/setgid/sticky (and its owner and group, where this
    user may give them), else 0666 minus the umask."""
    if old is None:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        return
    try:
        os.fchown(fd, old.st_uid, old.st_gid)
    except PermissionError:
        pass  # not root, and not our group: the file is ours, as numpy.save's would not be
    os.fchmod(fd, stat.S_IMODE(old.st_mode) & 0o777)


def _remove(tmp: Path | None) -> None:
    with signals.held():
        if tmp is not None:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass  # the folder went away or became read-only: nothing more we can do
            _live.discard(tmp)


def remove_leftovers() -> None:
    """Remove temporary files whose own cleanup was cut short (a second
    exception right as the first was handled). The CLI calls this last."""
    for tmp in list(_live):
        _remove(tmp)
