"""A mapped input truncated in place while onnxop reads it
(``onnxop show big.npy & truncate -s 100M big.npy``) ends the run with one
line naming the file and the missing bytes, exit 2 -- never a silent SIGBUS.
A real process, a real truncate, on a 320 MiB file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

ENV = {**os.environ, "ONNXOP_BACKEND": "vulkan"}
N = 80 << 20  # float32 elements: 320 MiB, past the mapping threshold (64 MiB)
KEEP = 100 << 20


@pytest.fixture
def big(tmp_path):
    path = tmp_path / "big.npy"
    a = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(N,))
    a[:] = 1.5
    a.flush()
    del a
    return path


def wait_mapped(proc: subprocess.Popen, path) -> bool:
    """True once ``proc`` has ``path`` mapped (its /proc maps name it)."""
    for _ in range(1200):
        if proc.poll() is not None:
            return False
        try:
            with open(f"/proc/{proc.pid}/maps") as f:
                if str(path) in f.read():
                    return True
        except OSError:
            return False
        time.sleep(0.01)
    return False


@pytest.mark.parametrize("argv", [["show"], ["show", "--hist"]])
def test_truncated_while_mapped_is_one_line(big, argv):
    size = big.stat().st_size
    proc = subprocess.Popen([sys.executable, "-m", "onnxop_cli", *argv, big.name], cwd=big.parent,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    try:
        assert wait_mapped(proc, big), "the input was never mapped"
        os.truncate(big, KEEP)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != -signal.SIGBUS, "died of SIGBUS"
    assert proc.returncode == 2, err
    assert err.decode() == (
        f"onnxop: error: big.npy: file was truncated while onnxop read it: it now has {KEEP} bytes, "
        f"{size - KEEP} of the {size} needed are missing; not used\n"
    )


def test_a_fault_outside_every_mapping_keeps_its_default_action(tmp_path):
    """The handler only answers for onnxop's own mappings; any other SIGBUS dies as before."""
    code = (
        "from onnxop_cli.core import sigbus; sigbus.install(); import os, signal; os.kill(os.getpid(), signal.SIGBUS)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert done.returncode == -signal.SIGBUS
    assert b"onnxop: error" not in done.stderr
