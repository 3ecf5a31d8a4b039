"""Signals that used to leave litter.

Every catchable signal whose default action ends the process ends a run
as SIGTERM does: 128+n, one line, the old output untouched and no
``.onnxop-*`` file left (GNU sort's list). SIGXCPU from a real CPU limit; a
SIGKILL while an ``.npz`` streams in from stdin leaves nothing in $TMPDIR (the
spool has no name); an output folder moved mid-write keeps no temporary
file. Real processes and real signals, one backend (the output path is what
is tested).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from made_once import made_once

ENV = {**os.environ, "ONNXOP_BACKEND": "vulkan"}
OLD = b"the old output, which must survive\n"
TIMEOUT = 120

SIGNALS = [signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGQUIT,
           signal.SIGXCPU, signal.SIGIO, signal.SIGPWR, signal.SIGRTMIN + 3]


def name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"SIGRTMIN+{sig - signal.SIGRTMIN}"


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """A 128 MiB input: long enough to be caught mid-write (made once in a run)."""

    def make() -> Path:
        folder = tmp_path_factory.mktemp("big")
        np.save(folder / "x.npy", np.random.default_rng(7).integers(1, 255, size=128 << 20, dtype=np.uint8))
        return folder / "x.npy"

    return made_once(tmp_path_factory, "signals-big", make)


def start(cwd: Path, *args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "onnxop_cli", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **{"text": True, "env": ENV, **kw})


def litter(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if "onnxop" in p.name)


def wait_for_temp(proc: subprocess.Popen, folder: Path, at_least: int = 4 << 20) -> None:
    deadline = time.monotonic() + TIMEOUT
    while True:
        for p in folder.glob(".onnxop-*.tmp"):
            try:
                if p.stat().st_size >= at_least:
                    return
            except FileNotFoundError:
                pass
        assert proc.poll() is None, "onnxop finished before it could be signalled"
        assert time.monotonic() < deadline, "onnxop never started writing"
        time.sleep(0.002)


@pytest.mark.parametrize("sig", SIGNALS, ids=name)
def test_every_ending_signal_cleans_up(big, tmp_path, sig):
    (tmp_path / "y.npy").write_bytes(OLD)
    proc = start(tmp_path, "flatten", str(big), "-o", "y.npy")
    try:
        wait_for_temp(proc, tmp_path)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 128 + sig, err
    assert err == f"onnxop: error: interrupted by {name(sig)}\n"
    assert (tmp_path / "y.npy").read_bytes() == OLD
    assert litter(tmp_path) == []


def test_a_real_cpu_time_limit(big, tmp_path):
    """ulimit -t: the kernel sends SIGXCPU at the soft limit (and again each
    second). The run ends 152 with nothing left, wherever the limit falls."""
    (tmp_path / "y.npy").write_bytes(OLD)

    def limit():
        used = resource.getrusage(resource.RUSAGE_SELF)
        resource.setrlimit(resource.RLIMIT_CPU, (int(used.ru_utime + used.ru_stime) + 2, 60))

    done = subprocess.run([sys.executable, "-m", "onnxop_cli", "tile", str(big), "--repeats", "8", "-o", "y.npy"],
                          cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300, preexec_fn=limit)
    assert done.returncode == 128 + signal.SIGXCPU, done.stderr
    assert done.stderr == "onnxop: error: interrupted by SIGXCPU\n"
    assert (tmp_path / "y.npy").read_bytes() == OLD
    assert litter(tmp_path) == []


def test_a_real_file_size_limit(big, tmp_path):
    """ulimit -f: Python ignores SIGXFSZ, so the write fails with EFBIG: one
    line, exit 1, the old output kept, nothing left."""
    (tmp_path / "y.npy").write_bytes(OLD)

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (8 << 20, 8 << 20))

    done = subprocess.run([sys.executable, "-m", "onnxop_cli", "flatten", str(big), "-o", "y.npy"],
                          cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300, preexec_fn=limit)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and "y.npy" in done.stderr and "File too large" in done.stderr, done.stderr
    assert (tmp_path / "y.npy").read_bytes() == OLD
    assert litter(tmp_path) == []


def test_sigkill_while_an_npz_streams_in_leaves_nothing_in_tmpdir(tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    np.savez(tmp_path / "w.npz", a=np.random.default_rng(1).integers(0, 255, size=16 << 20, dtype=np.uint8))
    data = (tmp_path / "w.npz").read_bytes()
    proc = start(tmp_path, "flatten", "-", "-o", "out.npz", env={**ENV, "TMPDIR": str(tmpdir)},
                 stdin=subprocess.PIPE, text=False)
    proc.stdin.write(data[: len(data) // 2])  # half the archive, and the pipe stays open
    proc.stdin.flush()
    deadline = time.monotonic() + TIMEOUT
    spool = None
    while spool is None:  # the half-read archive is being spooled: find it among the process's fds
        for fd in os.listdir(f"/proc/{proc.pid}/fd"):
            try:
                where = os.readlink(f"/proc/{proc.pid}/fd/{fd}")
            except OSError:
                continue
            if where.startswith(str(tmpdir)) and os.stat(f"/proc/{proc.pid}/fd/{fd}").st_size >= len(data) // 4:
                spool = where
        assert time.monotonic() < deadline, "onnxop never spooled stdin"
        time.sleep(0.01)
    assert os.listdir(tmpdir) == [], "the spool has a name: a SIGKILL would leave it"
    proc.kill()
    proc.wait(timeout=TIMEOUT)
    assert os.listdir(tmpdir) == []
    assert litter(tmp_path) == []


def test_an_output_folder_moved_mid_write_keeps_no_temporary_file(big, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "y.npy").write_bytes(OLD)
    proc = start(tmp_path, "flatten", str(big), "-o", "out/y.npy")
    try:
        wait_for_temp(proc, out)
        out.rename(tmp_path / "moved")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert sorted(p.name for p in (tmp_path / "moved").iterdir()) == ["y.npy"]
    assert (tmp_path / "moved" / "y.npy").read_bytes() == OLD
    assert not out.exists()
