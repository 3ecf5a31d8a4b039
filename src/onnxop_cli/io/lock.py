"""One writer per output at a time, and no update written over a newer file.

A read-modify-write (``onnxop unsqueeze w.npz -m a -o w.npz``, an in-place
``.npy``) must never report success for a change another process then
overwrote, nor overwrite another's change. Two guards, as git's ``index.lock``:

- the lock: ``.<name>.onnxop-lock`` is created with ``O_CREAT | O_EXCL``
  next to the output's real target before its temporary file, and removed
  after the rename or on any failure (a signal included). A second onnxop
  that finds it refuses at once (exit 1, one line) and writes nothing. The
  file holds the writer's pid: one left by a process that no longer exists
  (SIGKILL, a power cut), or whose pid a process started since holds (a
  container's pid 1, this very process), is stale and is taken over.
- the changed-check: an output that is also an input of this run (the same
  real path) must be, just before the rename, the file that was read -- the
  same inode, size, modification and change times as when onnxop opened it.
  Otherwise another program (not one that takes the lock: numpy, cp) wrote it
  in between, and the run refuses rather than replace that change.

Only onnxop takes the lock; the changed-check is what protects a change made
by anything else, up to the instant of the rename (a rename cannot be made
conditional on Linux; the window is the few microseconds between the last
stat and the rename).
"""

from __future__ import annotations

import errno
import hashlib
import os

from ..errors import OutputError

LOCK_PREFIX = "."
LOCK_SUFFIX = ".onnxop-lock"
NAME_MAX = 255


def lock_name(name: str) -> str:
    """The lock's file name for an output named ``name`` (hashed when the
    name is too long to carry a prefix and a suffix)."""
    lock = f"{LOCK_PREFIX}{name}{LOCK_SUFFIX}"
    if len(os.fsencode(lock)) <= NAME_MAX:
        return lock
    return f"{LOCK_PREFIX}{hashlib.sha256(os.fsencode(name)).hexdigest()[:32]}{LOCK_SUFFIX}"


def acquire(dirfd: int, name: str, label: str) -> str:
    """Create the lock for output ``name`` in the folder ``dirfd``; return its
    name. Raises OutputError when another live onnxop holds it."""
    lock = lock_name(name)
    for _ in range(3):
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600, dir_fd=dirfd)
        except FileExistsError:
            holder = _holder(dirfd, lock)
            if holder is not None and alive(holder) and not _started_after(holder, _mtime(dirfd, lock)):
                raise OutputError(
                    f"{label}: another onnxop (pid {holder}) is writing this file; not written "
                    f"(run again when it is done)"
                ) from None
            _take_over(dirfd, lock, holder)
            continue
        except OSError as e:
            raise OutputError(f"{label}: cannot create the lock file {lock}: {e.strerror}") from e
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
        finally:
            os.close(fd)
        return lock
    raise OutputError(f"{label}: cannot take the lock file {lock}: other processes keep replacing it")


def release(dirfd: int, lock: str) -> None:
    try:
        os.unlink(lock, dir_fd=dirfd)
    except OSError:
        pass  # the folder went away or became read-only: nothing more we can do


def _holder(dirfd: int, lock: str) -> int | None:
    """The pid in a lock file, or None if it holds none (yet: a writer is
    between creating and filling it, or it is not ours)."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC, dir_fd=dirfd)
    except OSError:
        return None
    try:
        text = os.read(fd, 32).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    return int(text) if text.isdigit() else None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


def _started_after(pid: int, when: float | None) -> bool:
    """Whether process ``pid`` started after ``when`` (a lock's modification
    time), by more than the clocks' rounding: then it is not the writer that
    wrote the lock but a later process given the dead writer's pid -- always
    so for a container's pid 1, and for this very process when it got the
    pid of the one killed before it. Linux's /proc; False where unknown."""
    if when is None:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            ticks = int(f.read().rsplit(b")", 1)[1].split()[19])  # field 22, starttime, in clock ticks since boot
        with open("/proc/stat", "rb") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith(b"btime "))
        started = boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return False
    return started > when + 2.0  # btime is whole seconds and follows clock adjustments


def _mtime(dirfd: int, lock: str) -> float | None:
    try:
        return os.stat(lock, dir_fd=dirfd, follow_symlinks=False).st_mtime
    except OSError:
        return None


def _take_over(dirfd: int, lock: str, holder: int | None) -> None:
    """Remove a stale lock. A lock with no pid yet may be a live writer's
    that is still being filled: give it a moment first."""
    if holder is None:
        import time

        time.sleep(0.05)
        again = _holder(dirfd, lock)
        if again is not None:
            if alive(again):
                return  # the next try reports it
        elif _exists(dirfd, lock) and _age(dirfd, lock) < 2.0:
            return
    release(dirfd, lock)


def _exists(dirfd: int, lock: str) -> bool:
    try:
        os.stat(lock, dir_fd=dirfd, follow_symlinks=False)
    except OSError:
        return False
    return True


def _age(dirfd: int, lock: str) -> float:
    import time

    try:
        return time.time() - os.stat(lock, dir_fd=dirfd, follow_symlinks=False).st_mtime
    except OSError:
        return 0.0


def identity(st: os.stat_result) -> tuple[int, ...]:
    """What says a file is the one that was read: its inode, size, and
    modification and change times (any write or rename changes one)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def check_unchanged(dirfd: int, name: str, read_as: tuple[int, ...] | None, label: str) -> None:
    """Refuse to replace an output that is not the file this run read."""
    if read_as is None:
        return
    try:
        now = identity(os.stat(name, dir_fd=dirfd))
    except FileNotFoundError:
        now = None
    except OSError as e:
        if e.errno != errno.ENOENT:
            raise
        now = None
    if now != read_as:
        what = "was removed" if now is None else "was replaced or changed by another process"
        raise OutputError(
            f"{label}: the file {what} after onnxop read it; not replaced, so that change is kept "
            f"(run again to apply this one to it)"
        )
