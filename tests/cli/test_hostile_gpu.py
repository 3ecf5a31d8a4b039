"""A GPU that runs out of memory, is lost mid-stream, goes silent or fails a
map: one line, exit 1, the wait ended, nothing written; a bad timeout
setting is a usage error.
"""

from __future__ import annotations

import logging
import threading

import pytest

from conftest import error_of
from hostile_inputs import cli, files, matches
from hostile_inputs import streamed  # noqa: F401 (a fixture)
from onnxop_cli.errors import ExitCode


@pytest.fixture
def own_gpu(backend, monkeypatch):
    """A Gpu of its own for this test (its buffers, its device), with wgpu's
    captured messages starting empty: what a test does to it cannot reach
    the shared device the other tests use."""
    from onnxop_cli.gpu import device

    from onnxop_cli.gpu import choose

    monkeypatch.setattr(device._log_capture, "messages", [])
    gpu = device.Gpu.open(*reversed(device.resolve(backend)))
    monkeypatch.setitem(device._gpus, backend, gpu)
    # the copy kernel is chosen now (measured, or read from the cache), so that the readbacks the
    # tests below count or fail are the copy's own whatever ran before (run alone, the first was
    # the calibration's)
    choose.choice(gpu)
    return gpu


def _buffer_class(gpu):
    """The engine's buffer class, whose map_async the tests below replace."""
    if gpu.engine_name == "dawn":
        from onnxop_cli.gpu.engines.dawn.engine import Buffer

        return Buffer
    from wgpu.backends.wgpu_native import GPUBuffer

    return GPUBuffer


class _Device:
    """A device whose buffer allocations fail as an exhausted GPU's do."""

    def __init__(self, real) -> None:
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def create_buffer(self, **kw):
        import wgpu

        raise wgpu.GPUOutOfMemoryError(f"Not enough memory left: allocating {kw.get('size')} bytes")


class _NeverAnswered:
    """A map promise that never resolves (a device gone silent)."""

    def __init__(self) -> None:
        self._thread_event = threading.Event()

    def sync_wait(self):  # pragma: no cover - Gpu.wait gives up first
        self._thread_event.wait()

    def wait(self, timeout):  # as Dawn's promises are waited on
        return self._thread_event.wait(timeout)


@pytest.fixture
def stalled_readback(own_gpu, monkeypatch):
    """From the third readback on, maps are never answered."""
    import wgpu

    GPUBuffer = _buffer_class(own_gpu)
    real = GPUBuffer.map_async
    reads = []

    def map_async(self, mode, offset=0, size=None):
        if int(mode) & int(wgpu.MapMode.READ):
            reads.append(1)
            if len(reads) >= 3:
                return _NeverAnswered()
        return real(self, mode, offset, size)

    monkeypatch.setattr(GPUBuffer, "map_async", map_async)


@pytest.mark.every_backend  # the engine's streaming and its failures, on each engine and adapter
def test_out_of_gpu_memory_is_one_line_exit_1(own_gpu, streamed, cwd, capsys):
    own_gpu.device = _Device(own_gpu.device)
    code, _, err = cli(capsys, "flatten", "x.npy", "-o", "y.npy", "-b", own_gpu.info.our_backend)
    assert code == ExitCode.ERROR
    assert matches(
        error_of(err),
        f"WebGPU allocating copy buffers out of GPU memory on {own_gpu.name}: Not enough memory left: allocating ...",
    ), err
    assert (cwd / "y.npy").read_bytes() == b"precious"
    assert files(cwd) == ["x.npy", "y.npy"]


@pytest.mark.every_backend  # the engine's streaming and its failures, on each engine and adapter
def test_a_device_reported_lost_mid_stream_ends_the_wait(own_gpu, streamed, stalled_readback, cwd, capsys):
    """wgpu-native reports the loss through wgpu's logger; the map it was
    waiting for never comes. onnxop stops waiting when the report comes."""
    timer = threading.Timer(
        0.3, lambda: logging.getLogger("wgpu").error("The WGPU device was lost (Unknown):\nVK_ERROR_DEVICE_LOST")
    )
    timer.start()
    try:
        code, _, err = cli(capsys, "flatten", "x.npy", "-o", "y.npy", "-b", own_gpu.info.our_backend, timeout=20)
    finally:
        timer.cancel()
    assert code == ExitCode.ERROR
    # the writer (waiting for the readback) or the reader (its next upload or dispatch) notices first
    assert error_of(err) in [
        f"WebGPU {step} failed on {own_gpu.name}: device lost: The WGPU device was lost (Unknown):"
        for step in ("readback", "upload", "dispatch")
    ], err
    assert (cwd / "y.npy").read_bytes() == b"precious"
    assert files(cwd) == ["x.npy", "y.npy"]


@pytest.mark.every_backend  # the engine's streaming and its failures, on each engine and adapter
def test_a_device_that_goes_silent_times_out(own_gpu, streamed, stalled_readback, cwd, capsys, monkeypatch):
    monkeypatch.setenv("ONNXOP_GPU_TIMEOUT", "0.5")
    code, _, err = cli(capsys, "flatten", "x.npy", "-o", "y.npy", "-b", own_gpu.info.our_backend, timeout=20)
    assert code == ExitCode.ERROR
    assert error_of(err) == (
        f"WebGPU readback did not finish within 0.5 s on {own_gpu.name}; the device is hung or lost "
        "($ONNXOP_GPU_TIMEOUT sets the limit)"
    )
    assert (cwd / "y.npy").read_bytes() == b"precious"
    assert files(cwd) == ["x.npy", "y.npy"]


class _Rejected:
    """A map promise that fails, as wgpu-native's do on a lost device."""

    def __init__(self) -> None:
        self._thread_event = threading.Event()
        self._thread_event.set()

    def sync_wait(self):
        raise RuntimeError("Could not map buffer (3 : Device is lost).")

    def wait(self, timeout):
        return True


@pytest.mark.every_backend  # the engine's streaming and its failures, on each engine and adapter
def test_a_map_that_fails_is_one_line_exit_1(own_gpu, streamed, cwd, capsys, monkeypatch):
    import wgpu

    GPUBuffer = _buffer_class(own_gpu)
    real = GPUBuffer.map_async
    reads = []

    def map_async(self, mode, offset=0, size=None):
        promise = real(self, mode, offset, size)
        if int(mode) & int(wgpu.MapMode.READ):
            reads.append(1)
            if len(reads) == 2:  # the real map completes (and is undone); the caller sees a failure
                promise.sync_wait()
                self.unmap()
                return _Rejected()
        return promise

    monkeypatch.setattr(GPUBuffer, "map_async", map_async)
    # Objects left by earlier tests in this worker are collected now, not by a collection
    # that happens to run in the copy's writer thread mid-failure: wgpu-native aborted the
    # whole worker once there (CI, gl), releasing another device's object from that thread.
    import gc

    gc.collect()
    gc.disable()
    try:
        code, _, err = cli(capsys, "flatten", "x.npy", "-o", "y.npy", "-b", own_gpu.info.our_backend, timeout=20)
    finally:
        gc.enable()
    assert code == ExitCode.ERROR
    assert error_of(err) == f"WebGPU readback failed on {own_gpu.name}: Could not map buffer (3 : Device is lost)."
    assert (cwd / "y.npy").read_bytes() == b"precious"
    assert files(cwd) == ["x.npy", "y.npy"]


def test_a_bad_timeout_setting_is_a_usage_error(backend, streamed, cwd, capsys, monkeypatch):
    monkeypatch.setenv("ONNXOP_GPU_TIMEOUT", "soon")
    from onnxop_cli.gpu.device import gpu_timeout
    from onnxop_cli.errors import UsageError

    with pytest.raises(UsageError, match=r"\$ONNXOP_GPU_TIMEOUT must be a positive number of seconds, got 'soon'"):
        gpu_timeout()
