"""Batches that fail while they run say what was written: a full disk mid
batch, a signal between jobs, out of memory; and the smaller messages
(a .pb's size limit in bytes, a backend without adapters).

Refusals are checked for their outcome AND for what they left: the folder's
files byte for byte, no output, no temporary file.
"""

from __future__ import annotations

import json
import os
import signal
import sys

import numpy as np
import pytest

from batch_folders import one_line, sh
from batch_folders import tree  # noqa: F401 (a fixture)
from conftest import cli
from onnxop_cli.errors import ExitCode

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True


def test_a_full_disk_mid_batch_lists_what_was_written(backend, tree):
    """ulimit -f: writing the third output fails with EFBIG, a real write error."""
    np.save(tree / "big.npy", np.arange(5000, dtype=np.float32))
    cmd = "ulimit -f 4; onnxop flatten a.npy b.npy big.npy p/input_0.npy --axis 0 -o out"
    done = sh(cmd + " --json", tree, backend)
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert doc["written"] == ["out/a.npy", "out/b.npy"]
    assert doc["failed"] == {"input": "big.npy", "output": "out/big.npy"}
    assert doc["exit_code"] == 1 and doc["status"] == "error"
    assert one_line(done.stderr) == doc["message"] == (
        "out/big.npy: cannot write: File too large (batch stopped at out/big.npy, not written; "
        "written before it: out/a.npy, out/b.npy)"
    )
    assert sorted(os.listdir(tree / "out")) == ["a.npy", "b.npy"]  # no temporary file, nothing after
    assert np.load(tree / "out" / "b.npy").tobytes() == np.load(tree / "b.npy").tobytes()

    for f in ("a.npy", "b.npy"):
        (tree / "out" / f).unlink()
    done = sh(cmd, tree, backend)
    assert done.returncode == 1
    assert done.stdout.count(", wrote out/") == 2 and "written before it: out/a.npy, out/b.npy" in done.stderr


def test_a_signal_between_jobs_stops_the_batch(backend, tree, capsys, monkeypatch):
    """A real SIGTERM arriving as the first output is committed: that output
    is in place, the batch stops before the second job, exit 143."""
    from onnxop_cli.core import signals

    real_commit = signals.commit

    def commit_and_get_killed():
        real_commit()
        os.kill(os.getpid(), signal.SIGTERM)

    old = {s: signal.getsignal(s) for s in signals.TERMINATING}
    signals.install()
    monkeypatch.setattr(signals, "commit", commit_and_get_killed)
    try:
        code, out, err = cli(capsys, "flatten", "a.npy", "b.npy", "-o", "out", "--json", "-b", backend)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        signals.reset()
    assert code == 143
    doc = json.loads(out)
    assert doc["written"] == ["out/a.npy"] and doc["failed"] == {"input": "b.npy", "output": "out/b.npy"}
    assert one_line(err).startswith("interrupted by SIGTERM (batch stopped at out/b.npy")
    assert os.listdir(tree / "out") == ["a.npy"]


def test_out_of_memory_is_named(backend, tree, capsys, monkeypatch):
    from onnxop_cli.core import apply as core

    def no_memory(*a, **kw):
        raise MemoryError("Unable to allocate 78.2 GiB for an array with shape (10,) and data type <U2000000")

    monkeypatch.setattr(core, "apply", no_memory)
    code, out, err = cli(capsys, "flatten", "a.npy", "-o", "out/a.npy", "-b", backend)
    assert code == ExitCode.ERROR
    assert one_line(err) == "out of memory: Unable to allocate 78.2 GiB for an array with shape (10,) and data type <U2000000"
    assert os.listdir(tree / "out") == []


def test_pb_size_message_gives_the_limit_in_bytes(tmp_path):
    from onnxop_cli import io
    from onnxop_cli.io.tensorproto import PROTOBUF_LIMIT
    from onnxop_cli.core.tensor import DTYPES

    uint8 = next(d for d in DTYPES if d.name == "uint8")
    with pytest.raises(Exception) as e:
        io.check_output(tmp_path / "o.pb", uint8, nbytes=PROTOBUF_LIMIT + 1)
    assert f"{PROTOBUF_LIMIT + 1} bytes do not fit a .pb (at most {PROTOBUF_LIMIT} bytes of data" in str(e.value)


@pytest.mark.skipif(sys.platform == "darwin", reason="Metal exists there")
def test_a_backend_without_adapters_lists_the_other_backends(tree):
    done = sh("onnxop flatten a.npy --backend metal -o out/m.npy", tree)
    assert done.returncode == 1
    message = one_line(done.stderr)
    assert message.startswith("no metal WebGPU adapter found (adapters seen: none; other backends have: ")
    assert "Vulkan" in message
    assert os.listdir(tree / "out") == []
