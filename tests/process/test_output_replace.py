"""Replacing an output safely.

- Two in-place read-modify-writes at once never both exit 0 with one change
  lost: the loser exits 1 with one line and the file is the winner's (real
  processes on one file, many rounds; the lock and the changed-check).
- The temporary file is fsynced before the rename and the folder after it
  (seen with strace, in the process's own system calls: one process writes
  the three formats in turn).
- The replaced output keeps its ACL and extended attributes, never setuid.
One backend: the output path is what is tested, not a kernel.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from commands import run_commands
from conftest import random_array
from made_once import made_once

ENV = {**os.environ, "ONNXOP_BACKEND": "vulkan"}
# Rounds of the two-writer races: with the lock and the changed-check both taken out, each test
# failed in its first round, in each of 4 tries; 4 rounds, not 8, still meet other interleavings.
ROUNDS = 4


def start(cwd: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "onnxop_cli", *args], cwd=cwd, env=ENV, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def onnxop(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "onnxop_cli", *args], cwd=cwd, env=ENV, text=True,
                          capture_output=True, timeout=300)


def lonely(folder: Path, *names: str) -> None:
    """Nothing but ``names`` is left in the folder: no temporary file, no lock."""
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)


# ------------------------------------------------------------ item 3: two writers


def test_two_in_place_npz_updates_never_lose_one(tmp_path, rng):
    a = random_array(rng, (300, 500), np.float64)
    b = random_array(rng, (200, 700), np.int32)
    wins = set()
    for _ in range(ROUNDS):
        np.savez(tmp_path / "w.npz", a=a, b=b)
        procs = {m: start(tmp_path, "unsqueeze", "w.npz", "-m", m, "--axes", "0", "-o", "w.npz") for m in "ab"}
        done = {m: (p.wait(timeout=300), p.communicate()[1]) for m, p in procs.items()}
        with np.load(tmp_path / "w.npz") as z:
            got = {k: z[k] for k in z.files}
        assert sorted(got) == ["a", "b"]
        for m, (code, err) in done.items():
            changed = got[m].shape == (1, *{"a": a, "b": b}[m].shape)
            if code == 0:
                assert changed, f"{m} exited 0 but its change is not in the file"
                wins.add(m)
            else:
                assert code == 1 and err.count("\n") == 1 and err.startswith("onnxop: error: w.npz: "), err
                assert not changed, f"{m} failed but its change is in the file"
                assert got[m].tobytes() == {"a": a, "b": b}[m].tobytes()
        assert any(code == 0 for code, _ in done.values()), done
        lonely(tmp_path, "w.npz")
    assert wins  # (which one wins is the scheduler's choice)


def test_two_in_place_npy_rewrites_never_both_succeed_over_each_other(tmp_path, rng):
    x = random_array(rng, (500, 600), np.float32)
    for _ in range(ROUNDS):
        np.save(tmp_path / "x.npy", x)
        procs = [start(tmp_path, "transpose", "x.npy", "-o", "x.npy") for _ in range(2)]
        codes = [p.wait(timeout=300) for p in procs]
        errs = [p.communicate()[1] for p in procs]
        got = np.load(tmp_path / "x.npy")
        # each success applied its transpose to the file it read: two successes
        # in a row (the second read the first's output) give x again
        wanted = x.T if codes.count(0) == 1 else x
        assert codes.count(0) >= 1, errs
        assert got.tobytes() == np.ascontiguousarray(wanted).tobytes(), (codes, errs)
        for code, err in zip(codes, errs):
            assert code == 0 or (code == 1 and err.count("\n") == 1), err
        lonely(tmp_path, "x.npy")


def test_an_output_changed_after_it_was_read_is_not_replaced(tmp_path, rng):
    """The changed-check on its own (another program, which takes no lock,
    wrote the file between onnxop's read and its rename)."""
    from onnxop_cli.core import files
    from onnxop_cli.errors import OutputError
    from onnxop_cli.io import atomic

    target = tmp_path / "w.npy"
    np.save(target, random_array(rng, (4, 5), np.int16))
    files.forget_reads()
    files.InputFile(target).close()  # read, as a run reads its input
    theirs = random_array(rng, (7,), np.uint8)
    np.save(tmp_path / "other.npy", theirs)
    os.replace(tmp_path / "other.npy", target)  # another program's atomic write
    with pytest.raises(OutputError, match=r"w\.npy: the file was replaced or changed by another process"):
        with atomic.atomic_output(target) as f:
            f.write(b"ours")
    assert np.load(target).tobytes() == theirs.tobytes()
    lonely(tmp_path, "w.npy")
    files.forget_reads()


def test_a_stale_lock_is_taken_over_and_a_live_one_refuses(tmp_path, rng):
    from onnxop_cli.io.lock import lock_name

    x = random_array(rng, (3, 4), np.float32)
    np.save(tmp_path / "x.npy", x)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / lock_name("y.npy")).write_text(dead.stdout)  # a SIGKILLed writer's lock
    done = onnxop(tmp_path, "transpose", "x.npy", "-o", "y.npy")
    assert done.returncode == 0, done.stderr
    lonely(tmp_path, "x.npy", "y.npy")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / lock_name("y.npy")).write_text(f"{sleeper.pid}\n")
        before = (tmp_path / "y.npy").read_bytes()
        done = onnxop(tmp_path, "flatten", "x.npy", "-o", "y.npy")
        assert done.returncode == 1
        assert done.stderr == (f"onnxop: error: y.npy: another onnxop (pid {sleeper.pid}) is writing this file; "
                               "not written (run again when it is done)\n")
        assert (tmp_path / "y.npy").read_bytes() == before
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_lock_whose_pid_a_later_process_got_is_taken_over(tmp_path, rng):
    """A writer SIGKILLed mid-write leaves its pid in the lock; a process started since may get that pid (a container's
    pid 1 every run, or the next onnxop itself), and onnxop refused the output for good, "another onnxop (pid N)"
    naming itself. A holder that started after the lock was written is not its writer: the lock is stale."""
    import time

    from onnxop_cli.io.lock import lock_name

    np.save(tmp_path / "x.npy", random_array(rng, (3, 4), np.float32))
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock = tmp_path / lock_name("y.npy")
        lock.write_text(f"{sleeper.pid}\n")
        os.utime(lock, (time.time() - 60,) * 2)  # written a minute before the process holding that pid started
        done = onnxop(tmp_path, "transpose", "x.npy", "-o", "y.npy")
        assert done.returncode == 0, done.stderr
        lonely(tmp_path, "x.npy", "y.npy")
    finally:
        sleeper.kill()
        sleeper.wait()


# ------------------------------------------------------------ item 4: fsync


SUFFIXES = [".npy", ".npz", ".pb"]


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> list[str]:
    """The system calls (openat, fsync, rename) of one process writing y.npy, y.npz and y.pb in
    turn (tests/commands.py's driver: the calls are what is tested, and the process's start is
    the same for each), seen with strace. Made once in a run."""
    from commands import driver, jobs

    if not shutil.which("strace"):
        pytest.skip("strace is not installed (apt-get install strace)")

    def make() -> list[str]:
        folder = tmp_path_factory.mktemp("fsync")
        np.save(folder / "x.npy", random_array(np.random.default_rng(4), (64, 64), np.float32))
        log = folder / "trace"
        done = subprocess.run(["strace", "-f", "-qq", "-o", str(log), "-e",
                               "trace=openat,fsync,fdatasync,renameat,renameat2,rename", *driver()],
                              input=jobs([(folder, ["flatten", "x.npy", "-o", f"y{s}"]) for s in SUFFIXES]),
                              cwd=folder, env=ENV, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert [json.loads(line)[0] for line in done.stdout.splitlines()] == [0] * len(SUFFIXES), done.stdout
        return [line.split(None, 1)[1] for line in log.read_text().splitlines() if " " in line]

    return made_once(tmp_path_factory, "output-replace-traced", make)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_the_file_is_synced_before_the_rename_and_the_folder_after(traced, suffix):
    """Between the rename of the output before it and its own: its temporary file fsynced; between its
    rename and the next output's: the folder fsynced."""
    calls = traced
    opened: dict[str, str] = {}  # fd -> the openat that made it, as of each call
    named = []  # (call, what its fd names then)
    for call in calls:
        if call.startswith("openat(") and "= " in call:
            opened[call.rsplit("= ", 1)[1].split()[0]] = call
        fd = call.split("(", 1)[1].split(")")[0] if call.startswith("fsync(") else ""
        named.append((call, opened.get(fd, "")))
    outputs = [i for i, c in enumerate(calls) if c.startswith("rename") and re.search(r"y\.(npy|npz|pb)\b", c)]
    renames = [i for i in outputs if f"y{suffix}" in calls[i]]
    assert len(outputs) == len(SUFFIXES) and len(renames) == 1, calls
    r = renames[0]
    k = outputs.index(r)
    begun, ended = (outputs[k - 1] if k else 0), (outputs[k + 1] if k + 1 < len(outputs) else len(calls))
    synced_before = [c for c, what in named[begun:r] if c.startswith("fsync(") and ".onnxop-" in what]
    synced_after = [c for c, what in named[r:ended] if c.startswith("fsync(") and "O_DIRECTORY" in what]
    assert synced_before, "the temporary file was not fsynced before the rename"
    assert synced_after, "the folder was not fsynced after the rename"


# ------------------------------------------------------------ item 5: ACL, xattrs


def _xattrs_supported(folder: Path) -> bool:
    probe = folder / "probe"
    probe.write_bytes(b"")
    try:
        os.setxattr(probe, "user.onnxop", b"1")
        return True
    except OSError:
        return False
    finally:
        probe.unlink()


@pytest.fixture
def xattr_folder(tmp_path):
    """tmp_path where it keeps user xattrs; else a small tmpfs (root only)."""
    if _xattrs_supported(tmp_path):
        yield tmp_path
        return
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4M,user_xattr", "tmpfs", str(mnt)], capture_output=True)
    if made.returncode != 0 or not _xattrs_supported(mnt):
        if os.environ.get("CI"):
            pytest.fail(f"CI: no filesystem here keeps xattrs ({made.stderr!r})")
        pytest.skip("no filesystem here keeps user xattrs, and tmpfs cannot be mounted")
    yield mnt
    subprocess.run(["umount", str(mnt)])


def test_replacing_an_output_keeps_its_acl_and_xattrs_but_not_setuid(xattr_folder, rng):
    """Each format's output (.npy, .npz, .pb), written, given xattrs, an ACL and setuid, then replaced.
    What the commands write is under test, not the process: the writes run in one process and the
    replacements in another (tests/commands.py); a failure names its suffix."""
    folder = xattr_folder
    np.save(folder / "x.npy", random_array(rng, (5, 6), np.int8))
    outs = [folder / f"y{suffix}" for suffix in (".npy", ".npz", ".pb")]
    for out, done in zip(outs, run_commands([(folder, ["flatten", "x.npy", "-o", out.name]) for out in outs],
                                            env=ENV)):
        assert done.returncode == 0, (out.name, done.stderr)
    acl, before, ino = {}, {}, {}
    for out in outs:
        os.setxattr(out, "user.origin", b"lab-7\x00\xff")
        os.setxattr(out, "user.note", b"keep me")
        acl[out] = bool(shutil.which("setfacl")) and subprocess.run(
            ["setfacl", "-m", "u:nobody:rw,g:daemon:r", str(out)]).returncode == 0
        os.chmod(out, 0o6764 if acl[out] else 0o6754)  # setuid + setgid must not carry over
        before[out] = {a: os.getxattr(out, a) for a in os.listxattr(out)}
        ino[out] = out.stat().st_ino
    replaced = run_commands([(folder, ["transpose", "x.npy", "-o", out.name]) for out in outs], env=ENV)
    assert len(replaced) == len(outs)
    for out, done in zip(outs, replaced):
        assert done.returncode == 0, (out.name, done.stderr)
        assert out.stat().st_ino != ino[out], out.name  # really replaced
        after = {a: os.getxattr(out, a) for a in os.listxattr(out)}
        assert after["user.origin"] == b"lab-7\x00\xff" and after["user.note"] == b"keep me", out.name
        if acl[out]:
            assert after["system.posix_acl_access"] == before[out]["system.posix_acl_access"], out.name
            shown = subprocess.run(["getfacl", "-c", str(out)], capture_output=True, text=True).stdout
            assert "user:nobody:rw-" in shown and "group:daemon:r--" in shown, out.name
        mode = out.stat().st_mode & 0o7777
        assert mode & 0o6000 == 0, (out.name, oct(mode))
        assert mode == (0o764 if acl[out] else 0o754), (out.name, oct(mode))
