"""WebGPU failures as one line each: wgpu-native's log captured (a lost device is reported there), an
engine's errors turned into GpuError, how long one GPU step may take before the device is called hung,
and an address-space limit (``ulimit -v``) as "out of memory", not a crash (``check_headroom``).

Under an address-space limit the WebGPU stacks fail inside themselves when an
allocation is refused: wgpu-native aborts ("double free or corruption", a Rust
panic on ERROR_OUT_OF_HOST_MEMORY) or dies of SIGSEGV; Mesa's loader prints
warnings and finds no adapter. None of that can be caught from Python. So,
before an engine is loaded and a device created, ``check_headroom`` compares the
room the limit leaves with what creating a device and running a kernel take,
and refuses with one line (exit 1) when it is short.

Two measures keep that need small where a limit is set: glibc gives each
thread a 64 MiB malloc arena of address space (lavapipe starts a thread per
core), so the arenas are limited to one (``mallopt(M_ARENA_MAX, 1)``), which
takes a wgpu-native run on lavapipe from about 1.37 GB of address space to
about 590 MB (VmPeak, 2 cores, Mesa 22.3). Without a limit nothing changes.

NEED is what a process uses beyond its size at the check (VmPeak minus VmSize,
measured on lavapipe and llvmpipe, Mesa 22.3, 2 cores, a 4 KiB transpose),
with a margin: wgpu 359 MiB for the device and about 90 more to compile and
run a kernel; dawn 287 and about 70.
"""

from __future__ import annotations

import logging
import os
import sys
from contextlib import contextmanager
from functools import lru_cache
from typing import Iterator

from ..errors import GpuError, UsageError
from . import engines

ENV_TIMEOUT = "ONNXOP_GPU_TIMEOUT"
# Seconds one GPU step (a chunk's map) may take before the device is called
# hung. A chunk takes milliseconds; a Fortran re-layout of a whole binding a
# few seconds on a CPU adapter: this only ends waits that would never end.
DEFAULT_TIMEOUT = 120.0
MIB = 1 << 20
NEED = {"wgpu": 512 * MIB, "dawn": 400 * MIB}  # see the module docstring
M_ARENA_MAX = -8  # glibc's mallopt parameter


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


def address_limit() -> int | None:
    """The address-space limit in bytes, or None when there is none."""
    import resource  # POSIX only, asked only when a device is opened

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def status_bytes(name: str) -> int:
    """A size field of /proc/self/status (``VmSize``, ``VmRSS``), in bytes (0 where /proc cannot say)."""
    key = name.encode() + b":"
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def check_headroom(engine: str, what: str = "creating a WebGPU device") -> None:
    """Refuse, before it can crash, ``what`` on ``engine`` under a limit that
    leaves less room than NEED (GpuError: exit 1, 'out of memory: ...')."""
    cap = address_limit()
    if cap is None:
        return
    _limit_arenas()
    room = cap - status_bytes("VmSize")  # the address space in use now
    need = NEED.get(engine, max(NEED.values()))
    if room < need:
        raise GpuError(
            f"out of memory: the address-space limit (ulimit -v) of {cap // MIB} MiB leaves {max(room, 0) // MIB} MiB; "
            f"{what} with the {engine} engine needs about {need // MIB} MiB (raise the limit)"
        )


@lru_cache(maxsize=None)  # once a process
def _limit_arenas() -> None:
    try:
        import ctypes

        ctypes.CDLL(None).mallopt(M_ARENA_MAX, 1)
    except (OSError, AttributeError):
        pass
