"""Address-space limits (``ulimit -v``, RLIMIT_AS): "out of memory", not a crash.

Under an address-space limit the WebGPU stacks fail inside themselves when an
allocation is refused: wgpu-native aborts ("double free or corruption", a Rust
panic on ERROR_OUT_OF_HOST_MEMORY) or dies of SIGSEGV; Mesa's loader prints
warnings and finds no adapter. None of that can be caught from Python. So,
before an engine is loaded and a device created, :func:`check` compares the
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

import resource

from ..errors import GpuError

MIB = 1 << 20
NEED = {"wgpu": 512 * MIB, "dawn": 400 * MIB}  # see the module docstring
M_ARENA_MAX = -8  # glibc's mallopt parameter

_arenas_limited = False


def limit() -> int | None:
    """The address-space limit in bytes, or None when there is none."""
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


def check(engine: str, what: str = "creating a WebGPU device") -> None:
    """Refuse, before it can crash, ``what`` on ``engine`` under a limit that
    leaves less room than NEED (GpuError: exit 1, 'out of memory: ...')."""
    cap = limit()
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


def _limit_arenas() -> None:
    global _arenas_limited
    if _arenas_limited:
        return
    _arenas_limited = True
    try:
        import ctypes

        ctypes.CDLL(None).mallopt(M_ARENA_MAX, 1)
    except (OSError, AttributeError):
        pass
