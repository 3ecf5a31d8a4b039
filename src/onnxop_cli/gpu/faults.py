"""WebGPU failures as one line each: wgpu-native's log captured (a lost
device is reported there), an engine's errors turned into GpuError, and how
long one GPU step may take before the device is called hung."""

from __future__ import annotations

import logging
import os
import sys
from contextlib import contextmanager
from typing import Iterator

from ..errors import GpuError, UsageError
from . import engines

ENV_TIMEOUT = "ONNXOP_GPU_TIMEOUT"
# Seconds one GPU step (a chunk's map) may take before the device is called
# hung. A chunk takes milliseconds; a Fortran re-layout of a whole binding a
# few seconds on a CPU adapter: this only ends waits that would never end.
DEFAULT_TIMEOUT = 120.0


class _WgpuLogCapture(logging.Handler):
    """Keeps wgpu-native's log lines (device lost, uncaptured errors) so they
    can be reported as one clear message instead of being printed."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


_log_capture = _WgpuLogCapture()


def _quiet_wgpu_logger() -> None:
    log = logging.getLogger("wgpu")
    if _log_capture not in log.handlers:
        log.addHandler(_log_capture)
        log.propagate = False
        if os.environ.get("ONNXOP_DEBUG"):
            log.addHandler(logging.StreamHandler())


def gpu_timeout() -> float:
    """The seconds a GPU step may take ($ONNXOP_GPU_TIMEOUT, else DEFAULT_TIMEOUT)."""
    value = os.environ.get(ENV_TIMEOUT, "").strip()
    if not value:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise UsageError(f"${ENV_TIMEOUT} must be a positive number of seconds, got {value!r}")
    return seconds


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    detail = [ln for ln in lines if not ln.lower().startswith(("validation error", "caused by"))]
    return (detail or lines or [type(text).__name__])[0][:300]


@contextmanager
def gpu_errors(what: str, adapter: str = "") -> Iterator[None]:
    """Turn any WebGPU failure inside the block into one GpuError line."""
    where = f" on {adapter}" if adapter else ""
    before = len(_log_capture.messages)
    try:
        yield
    except (*_engine_errors(), RuntimeError, ValueError, MemoryError) as e:
        if isinstance(e, (GpuError, UsageError)):
            raise
        oom = isinstance(e, MemoryError) or "OutOfMemory" in type(e).__name__
        kind = "out of GPU memory" if oom else "failed"
        raise GpuError(f"WebGPU {what} {kind}{where}: {_first_line(str(e))}") from e
    check_lost(before, what, adapter)


def check_lost(since: int, what: str, adapter: str = "") -> None:
    """A GpuError with wgpu-native's message if it logged a lost device after its ``since``-th message
    (worded as ``gpu_errors``' failures: the step first, whatever phrase ``what`` is)."""
    lost = [m for m in _log_capture.messages[since:] if "lost" in m.lower()]
    if lost:
        where = f" on {adapter}" if adapter else ""
        raise GpuError(f"WebGPU {what} failed{where}: device lost: {_first_line(lost[-1])}")


def _engine_errors() -> tuple[type[BaseException], ...]:
    """The error types of the engines loaded in this process."""
    loaded = [m for m in ("wgpu_native", "dawn.engine", "browser.engine") if f"{engines.__name__}.{m}" in sys.modules]
    if "wgpu_native" in loaded and "wgpu" not in sys.modules:
        loaded.remove("wgpu_native")
    return tuple(t for m in loaded for t in sys.modules[f"{engines.__name__}.{m}"].error_types())
