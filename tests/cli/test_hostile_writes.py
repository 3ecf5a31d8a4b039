"""Nothing lost when a run fails part-way: a disk that fills in the writer
thread, Ctrl-C (in-process and a real SIGINT), a read that fails
mid-stream, an .npz whose second member fails: no new file, no temporary
file, an existing output or input untouched.
"""

from __future__ import annotations

import errno
import os
import threading
from contextlib import contextmanager

import numpy as np
import pytest

from conftest import error_of, random_array
from hostile_inputs import TIMEOUT, cli, files
from hostile_inputs import streamed  # noqa: F401 (a fixture)
from onnxop_cli.errors import ExitCode, GpuError


@contextmanager
def failing_sink(monkeypatch, at_chunk: int, error: BaseException):
    """The .npy writer's sink raises ``error`` on chunk ``at_chunk``; yields
    the names of the threads it ran in."""
    from onnxop_cli.io import npy as npy_mod

    real = npy_mod.NpyWriter.tensor
    threads: list[str] = []

    @contextmanager
    def tensor(self, name, shape, dtype):
        with real(self, name, shape, dtype) as write:
            calls = 0

            def sink(chunk):
                nonlocal calls
                calls += 1
                threads.append(threading.current_thread().name)
                if calls == at_chunk:
                    raise error
                write(chunk)

            yield sink

    monkeypatch.setattr(npy_mod.NpyWriter, "tensor", tensor)
    yield threads


@pytest.mark.every_backend  # the engine's streaming and its failures, on each engine and adapter
def test_disk_full_in_the_writer_thread_leaves_the_output_untouched(backend, streamed, cwd, capsys, monkeypatch):
    with failing_sink(monkeypatch, 3, OSError(errno.ENOSPC, "No space left on device")) as threads:
        code, _, err = cli(capsys, "flatten", "x.npy", "-o", "y.npy", "-b", backend)
    assert threads[-1] == "onnxop-writer"  # the failure happened where it would on a big file
    assert code == ExitCode.ERROR
    assert error_of(err) == "y.npy: cannot write: No space left on device"
    assert (cwd / "y.npy").read_bytes() == b"precious"
    assert files(cwd) == ["x.npy", "y.npy"]


@pytest.mark.every_backend  # the engine's streaming and its failures, on each engine and adapter
def test_ctrl_c_in_the_writer_thread_leaves_the_output_untouched(backend, streamed, cwd, capsys, monkeypatch):
    with failing_sink(monkeypatch, 5, KeyboardInterrupt()) as threads:
        code, _, err = cli(capsys, "flatten", "x.npy", "-o", "y.npy", "-b", backend)
    assert threads[-1] == "onnxop-writer"
    assert code == ExitCode.INTERRUPTED and error_of(err) == "interrupted"
    assert (cwd / "y.npy").read_bytes() == b"precious"
    assert files(cwd) == ["x.npy", "y.npy"]


@pytest.mark.every_backend  # the engine's streaming and its failures, on each engine and adapter
def test_ctrl_c_while_reading_mid_stream_leaves_the_output_untouched(backend, streamed, cwd, capsys, monkeypatch):
    from onnxop_cli.core.tensor import FileBytes

    calls = []

    def interrupting(real):  # the 4th read of the input, whichever way it is read (one run or a batch)
        def read(self, *args):
            calls.append(args)
            if len(calls) == 4:
                raise KeyboardInterrupt
            real(self, *args)
        return read

    for name in ("readinto", "readruns"):
        monkeypatch.setattr(FileBytes, name, interrupting(getattr(FileBytes, name)))
    code, _, err = cli(capsys, "flatten", "x.npy", "-o", "y.npy", "-b", backend)
    assert len(calls) == 4, f"the input was read {len(calls)} times: no read was interrupted mid-stream"
    assert code == ExitCode.INTERRUPTED and error_of(err) == "interrupted"
    assert (cwd / "y.npy").read_bytes() == b"precious"
    assert files(cwd) == ["x.npy", "y.npy"]


@pytest.mark.every_backend  # the engine's streaming and its failures, on each engine and adapter
def test_a_failed_run_over_its_own_input_leaves_the_input_untouched(backend, streamed, cwd, capsys, monkeypatch):
    before = (cwd / "x.npy").read_bytes()
    with failing_sink(monkeypatch, 7, OSError(errno.EIO, "Input/output error")):
        code, _, err = cli(capsys, "flatten", "x.npy", "-o", "x.npy", "-b", backend)
    assert code == ExitCode.ERROR and error_of(err) == "x.npy: cannot write: Input/output error"
    assert (cwd / "x.npy").read_bytes() == before
    assert files(cwd) == ["x.npy", "y.npy"]


def test_npz_output_whose_second_member_fails_leaves_the_output_untouched(
    backend, cwd, capsys, rng, monkeypatch, unraisable
):
    import onnxop_cli.gpu as gpu_pkg

    np.savez(cwd / "m.npz", a=random_array(rng, (3, 4), "float32"), b=random_array(rng, (5,), "int32"))
    (cwd / "out.npz").write_bytes(b"precious")
    real = gpu_pkg.copy_through_kernel
    calls = []

    def second_fails(*a, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise GpuError("WebGPU dispatch failed on test adapter: simulated")
        return real(*a, **kw)

    monkeypatch.setattr(gpu_pkg, "copy_through_kernel", second_fails)
    code, out, err = cli(capsys, "flatten", "m.npz", "-o", "out.npz", "-b", backend)
    assert code == ExitCode.ERROR
    assert error_of(err) == "WebGPU dispatch failed on test adapter: simulated"  # and no 'Exception ignored'
    assert (cwd / "out.npz").read_bytes() == b"precious"
    assert files(cwd) == ["m.npz", "out.npz"]


@pytest.mark.every_backend  # the engine's streaming and its failures, on each engine and adapter
def test_a_real_sigint_mid_stream_leaves_the_output_untouched(backend, tmp_path):
    """Ctrl-C as a user sends it: SIGINT to a separate onnxop process while
    it is part-way through writing a file larger than several chunks."""
    import signal
    import subprocess
    import sys
    import time

    x = np.random.default_rng(5).integers(0, 2**32, 64 * 2**20, dtype=np.uint32).view(np.float32)  # 256 MiB
    np.save(tmp_path / "x.npy", x)
    del x
    (tmp_path / "y.npy").write_bytes(b"precious")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "onnxop_cli", "flatten", "x.npy", "-o", "y.npy", "-b", backend],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        written = 0
        while written < 8 * 2**20:  # two 4 MiB chunks in: the stream is running
            assert proc.poll() is None, "onnxop finished before it could be interrupted"
            assert time.monotonic() < deadline, "onnxop never started writing"
            temps = [p for p in tmp_path.iterdir() if p.name.startswith(".onnxop-")]
            written = temps[0].stat().st_size if temps else 0
            time.sleep(0.002)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == ExitCode.INTERRUPTED, err
    assert out == "" and error_of(err) == "interrupted"
    assert (tmp_path / "y.npy").read_bytes() == b"precious"
    assert files(tmp_path) == ["x.npy", "y.npy"]
