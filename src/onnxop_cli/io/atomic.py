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
from . import lock

TMP_PREFIX = ".onnxop-"
TMP_SUFFIX = ".tmp"
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
_live: set[tuple[int, str]] = set()  # (folder fd, name): this process's temporary and lock files
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


def output_argument(raw: str, folder_ok: bool = False) -> Path:
    """``-o``'s text as a Path, refusing what ``Path()`` would silently turn
    into another path: the empty string (``Path("")`` is ``.``, so an unset
    ``-o "$OUT"`` would write into the current folder, over the input), and a
    trailing ``/`` on what is not an existing folder (``Path("new.npy/")`` is
    ``new.npy``; cp says "Not a directory"). ``folder_ok``: the command's
    output may be a new folder (Split's parts), so ``parts/`` that does not
    exist yet is that folder; a trailing ``/`` on an existing file is still refused."""
    if raw == "":
        raise UsageError("-o: the output path is empty (an unset variable?); give a file or folder name")
    if "\0" in raw:
        raise UsageError(f"-o {raw!r}: a path cannot hold a NUL character")
    if raw.endswith(os.sep) or raw.endswith(os.sep + "."):
        try:
            is_dir = stat.S_ISDIR(os.stat(raw).st_mode)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise UsageError(f"{raw}: the output path leads into a symlink loop") from None
            is_dir = False
        if folder_ok and not is_dir and not os.path.lexists(raw.rstrip(os.sep).removesuffix(os.sep + ".") or os.sep):
            return Path(raw)  # a folder still to be made
        if not is_dir:
            raise UsageError(f"{raw}: Not a directory (a trailing / names a folder, and there is none); "
                             f"drop the / to write a file, or make the folder to write into it")
    return Path(raw)


def input_argument(raw: str) -> Path:
    """An input's text as a Path, with the same two refusals as
    :func:`output_argument`: ``""`` (not the current folder) and ``a.npy/``
    (not ``a.npy``: cat says "Not a directory")."""
    if raw == "":
        raise UsageError("the input path is empty (an unset variable?); give a file name, or - for stdin")
    if raw.endswith(os.sep) and os.path.exists(raw.rstrip(os.sep) or os.sep) and not os.path.isdir(raw):
        raise UsageError(f"{raw}: Not a directory (a trailing / names a folder); drop the / to read the file")
    return Path(raw)


def check_output_path(path: Path) -> None:
    """Refuse, before any work is done, an output that cannot be written."""
    path = Path(path)
    target = real_target(path)
    via = f" (the symlink leads to {target})" if target != path else ""
    try:
        st = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        st = None
    except OSError as e:  # a loop, a name too long: paths the user can fix
        if e.errno in (errno.ELOOP, errno.ENAMETOOLONG, errno.EACCES):
            what = "leads into a symlink loop" if e.errno == errno.ELOOP else f"cannot be used: {e.strerror}"
            raise UsageError(f"{path}: the output path {what}{via}") from None
        raise OutputError(f"{path}: cannot look at the output: {e.strerror}{via}") from None
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
    the target when the block finishes, remove it on any failure. A signal
    held since an earlier output of the run was renamed into place is raised
    first: no output is begun after a signal (signals.checkpoint).

    The folder is held open and every step (lock, temporary file, rename,
    removal) is made relative to it, so a folder moved or renamed mid-write
    takes the temporary file with it and never keeps a leftover."""
    signals.checkpoint()  # a signal held since an earlier output was put in place: this one is not begun
    path = Path(path)
    check_output_path(path)
    target = real_target(path)
    folder = target.parent if str(target.parent) else Path(".")
    name = target.name
    from ..core.files import read_as

    was_read = read_as(target)  # the file as this run read it, when the output is also an input
    try:
        dirfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise OutputError(f"{path}: cannot open the output folder {folder}: {e.strerror}") from e
    lock_file: str | None = None
    tmp: str | None = None
    try:
        with signals.held():  # created and recorded, or neither
            lock_file = lock.acquire(dirfd, name, str(path))
            _live.add((dirfd, lock_file))
        with signals.held():
            fd, tmp = _create_temp(dirfd, name, folder)
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            _sync(f.fileno())  # the data is on disk before the name points at it
        with signals.held():  # the rename is the commit: no signal may report it undone
            lock.check_unchanged(dirfd, name, was_read, str(path))
            os.replace(tmp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
            _live.discard((dirfd, tmp))
            tmp = None
            signals.commit()
        _sync_folder(dirfd)  # ... and the rename itself survives a power cut
    except BaseException as e:
        _remove(dirfd, tmp)
        if isinstance(e, OSError):
            raise OutputError(f"{path}: cannot write: {e.strerror or e}") from e
        raise
    finally:
        _remove(dirfd, lock_file)
        if not any(d == dirfd for d, _ in _live):  # else remove_leftovers still needs it
            os.close(dirfd)


def _sync(fd: int) -> None:
    """fsync, as sqlite and git do before a rename: without it a power cut
    can leave the new name on an empty or partial file (ext4 and xfs order
    data before a rename-over only by heuristics; other filesystems not at
    all). A failing fsync is an I/O error: the output is not put in place."""
    os.fsync(fd)


def _sync_folder(dirfd: int) -> None:
    """fsync the folder after the rename, so the new entry is durable. Some
    filesystems cannot sync a folder (EINVAL): the output is in place, so
    nothing is reported (the rename was the commit)."""
    try:
        os.fsync(dirfd)
    except OSError:
        pass


def _create_temp(dirfd: int, name: str, folder: Path) -> tuple[int, str]:
    """A new temporary file in the folder ``dirfd``, with the mode (owner,
    ACL and extended attributes) the output will have."""
    try:
        old = os.stat(name, dir_fd=dirfd)
    except OSError:
        old = None
    for _ in range(100):
        tmp = f"{TMP_PREFIX}{os.getpid()}-{''.join(random.choices(_ALPHABET, k=4))}{TMP_SUFFIX}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600, dir_fd=dirfd)
        except FileExistsError:
            continue
        except OSError as e:
            raise OutputError(f"{folder / name}: cannot create a temporary file in {folder}: {e.strerror}") from e
        _live.add((dirfd, tmp))
        try:
            _carry_mode(fd, old)
            if old is not None:
                _carry_xattrs(dirfd, name, fd)
        except BaseException:
            os.close(fd)
            raise
        return fd, tmp
    raise OutputError(f"{folder / name}: cannot create a temporary file in {folder}: too many name collisions")


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


# Extended attributes never carried: security.capability is a privilege (as
# setuid is), and the other security.* ones (SELinux, IMA) belong to the
# system's policy for the new file, as for any file created in that folder.
_NOT_CARRIED = ("security.",)


def _carry_xattrs(dirfd: int, name: str, fd: int) -> None:
    """Copy the old file's extended attributes, its POSIX ACLs
    (``system.posix_acl_access``) and ``user.*`` included, onto the new file,
    as numpy.save (which rewrites the file in place) keeps them. Where the
    filesystem has none, or refuses one (a namespace this user may not
    write), the output is still written: the attributes are the file's
    metadata, not its data."""
    if not hasattr(os, "listxattr"):
        return
    source = f"/proc/self/fd/{dirfd}/{name}"  # the folder we hold, wherever it is now
    try:
        names = os.listxattr(source)
    except OSError:
        return  # no xattr support here (ENOTSUP), or no /proc
    for attr in names:
        if attr.startswith(_NOT_CARRIED):
            continue
        try:
            os.setxattr(fd, attr, os.getxattr(source, attr))
        except OSError:
            pass  # this filesystem or user cannot set it: carry what can be carried


def _remove(dirfd: int, tmp: str | None) -> None:
    with signals.held():
        if tmp is not None:
            try:
                os.unlink(tmp, dir_fd=dirfd)
            except OSError:
                pass  # the folder went away or became read-only: nothing more we can do
            _live.discard((dirfd, tmp))


def remove_leftovers() -> None:
    """Remove temporary files whose own cleanup was cut short (a second
    exception right as the first was handled). The CLI calls this last."""
    folders = {dirfd for dirfd, _ in _live}
    for dirfd, tmp in list(_live):
        _remove(dirfd, tmp)
    for dirfd in folders:
        try:
            os.close(dirfd)
        except OSError:
            pass
