"""Several processes adding to the schedule cache (gpu/choose.py's kernels.json) at once.

Each entry is added by reading the file, adding it and renaming a new file
over the old one; without a lock a process that read before another's
rename wrote its own over it, and the other's entries were lost (61 of 80
with four processes adding 20 each), to be measured again by the next run.
The read-to-rename is now under a flock on ``kernels.json.lock``
(io/cache.py ``locked``). Real processes, calling the real ``_write``;
the entries' keys are theirs (no GPU needed: what is tested is the file).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from onnxop_cli.gpu import choose
from onnxop_cli.io import cache

WRITER = textwrap.dedent(
    """
    import sys
    from onnxop_cli.gpu import choose

    class Named(choose.Question):
        def key(self, gpu):
            return self.name

    who, n = sys.argv[1], int(sys.argv[2])
    for i in range(n):
        choose._write(None, Named(f"{who}-{i}", ("a", "b")), choose.Choice("a", "measured", {"a": 2.0, "b": 1.0}))
    """
)

HOLDER = textwrap.dedent(
    """
    import time
    from onnxop_cli.gpu import choose
    from onnxop_cli.io.cache import locked

    with locked(choose.cache_path()) as held:
        print(held, flush=True)
        time.sleep(120)
    """
)


def env_for(home) -> dict:
    return {**os.environ, "XDG_CACHE_HOME": str(home)}


def keys(home) -> set[str]:
    return set(json.loads((home / "onnxop" / choose.CACHE_FILE).read_text())["entries"])


def writers(home, names, n) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", WRITER, w, str(n)], env=env_for(home),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for w in names]


def test_processes_adding_entries_at_once_lose_none(tmp_path):
    names, n = ["w0", "w1", "w2", "w3"], 20
    for p in writers(tmp_path, names, n):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and not out and not err, err
    assert keys(tmp_path) == {f"{w}-{i}" for w in names for i in range(n)}
    # nothing left beside it but the (empty) lock file: no temporary file, no output lock
    assert sorted(os.listdir(tmp_path / "onnxop")) == [choose.CACHE_FILE, choose.CACHE_FILE + cache.LOCK_SUFFIX]


def test_a_holder_killed_with_sigkill_leaves_no_stale_lock(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], env=env_for(tmp_path), stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "True"
        [blocked] = writers(tmp_path, ["blocked"], 1)
        time.sleep(1.0)
        assert blocked.poll() is None  # waiting for the lock, not writing over the holder's read
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    t0 = time.monotonic()
    blocked.communicate(timeout=60)
    assert blocked.returncode == 0 and keys(tmp_path) == {"blocked-0"}
    assert time.monotonic() - t0 < cache.LOCK_WAIT / 2  # the kernel dropped the lock with the process


def entry_written(home, monkeypatch) -> bool:
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))

    class Named(choose.Question):
        def key(self, gpu):
            return self.name

    choose._write(None, Named("q", ("a", "b")), choose.Choice("a", "measured", {"a": 2.0, "b": 1.0}))
    return (home / "onnxop" / choose.CACHE_FILE).exists() and keys(home) == {"q"}


def test_a_filesystem_without_locks_still_gets_the_entry(tmp_path, monkeypatch):
    import fcntl

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", no_locks)
    assert entry_written(tmp_path, monkeypatch)  # written unlocked, as before the lock


def test_a_lock_held_too_long_is_waited_for_then_written_without(tmp_path, monkeypatch):
    import fcntl

    def busy(fd, op):
        raise BlockingIOError(errno.EWOULDBLOCK, os.strerror(errno.EWOULDBLOCK))

    monkeypatch.setattr(fcntl, "flock", busy)  # a stopped process holds it
    t0 = time.monotonic()
    with cache.locked(tmp_path / "x.json", wait=0.2) as held:
        assert held is False
    assert 0.2 <= time.monotonic() - t0 < 5


def test_a_cache_folder_that_cannot_be_made_is_no_error(tmp_path, monkeypatch):
    (tmp_path / "file").write_bytes(b"")  # $XDG_CACHE_HOME/onnxop under a regular file: no folder, no lock, no write
    assert not entry_written(tmp_path / "file", monkeypatch)


def test_a_symlinked_lock_file_is_not_followed(tmp_path, monkeypatch):
    (tmp_path / "onnxop").mkdir()
    (tmp_path / "onnxop" / (choose.CACHE_FILE + cache.LOCK_SUFFIX)).symlink_to(tmp_path / "elsewhere")
    assert entry_written(tmp_path, monkeypatch)  # written unlocked
    assert not (tmp_path / "elsewhere").exists()


def test_a_writer_killed_mid_write_leaves_nothing_after_the_next_write(tmp_path, monkeypatch):
    """A writer SIGKILLed between its temporary file and the rename leaves ``.onnxop-<pid>-xxxx.tmp`` (an
    output folder keeps it for the user to see whose it is); in the cache folder, onnxop's, each stayed for good.
    The next write removes those of pids no longer alive, and keeps a live writer's."""
    folder = tmp_path / "onnxop"
    folder.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (folder / f".onnxop-{int(dead.stdout)}-ab12.tmp").write_text('{"version": 1, "ent')  # half a file
        (folder / f".onnxop-{live.pid}-cd34.tmp").write_text("")
        (folder / "notes.tmp").write_text("")  # not onnxop's name: kept
        assert entry_written(tmp_path, monkeypatch)
        assert sorted(os.listdir(folder)) == [f".onnxop-{live.pid}-cd34.tmp", choose.CACHE_FILE,
                                             choose.CACHE_FILE + cache.LOCK_SUFFIX, "notes.tmp"]
    finally:
        live.kill()
        live.wait()


def test_a_fifo_in_the_cache_folder_is_not_waited_on(tmp_path):
    """kernels.json (or its lock file, or a cffi header cache) replaced by a FIFO: open() waits for a writer that
    never comes, and every onnxop hung before its first kernel. Opened without blocking and read only if regular."""
    folder = tmp_path / "onnxop"
    folder.mkdir()
    for name in (choose.CACHE_FILE, choose.CACHE_FILE + cache.LOCK_SUFFIX):
        for left in folder.iterdir():
            left.unlink()
        os.mkfifo(folder / name)
        [p] = writers(tmp_path, [name], 1)
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0 and not err, err
    os.mkfifo(folder / "cffi-x.json")
    assert cache.read_regular(folder / "cffi-x.json", private=True) is None
