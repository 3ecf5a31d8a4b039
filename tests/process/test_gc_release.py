"""Engine objects are released only by the thread that holds the engine's
lock (gpu/release.py, engines/wgpu_native.guard_releases).

A garbage collection in the copy's writer thread once aborted a CI worker
on gl: it released another device's wgpu objects there while the main
thread streamed ("BadAccess" in wgpu-hal's EGL context lock, then a Rust
abort). The process test below provokes that: devices left in reference
cycles, collections forced in the writer thread while a stream runs.
Before the fix it aborted about one run in three (20 rounds, lavapipe/
llvmpipe, Mesa 22.3); the in-process tests check the mechanism itself.

The lock did not cover wgpu-py's poll thread, which polls its device outside
it: CI still aborted one run in 15 under load (the main thread releasing a
device of a second enumeration while the first device's poll thread polled;
both adapters share the instance's EGL context but not wgpu-hal's mutex).
Devices now come from the adapter enumerated once (engines/wgpu_native.
adapters): 0 aborts in 60 runs of REPRO with two busy loops beside it, where
the old code aborted 2 in 30 (Intel Xeon, 2 cores, Mesa 22.3).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import weakref

import pytest


def _buffer(gpu):
    from onnxop_cli.gpu.buffers import BufferUsage as U

    return gpu.device.create_buffer(size=4096, usage=U.STORAGE | U.COPY_DST)


def _drop_in_a_thread(holder: list) -> None:
    thread = threading.Thread(target=holder.clear)  # the last reference goes in that thread
    thread.start()
    thread.join()


def test_an_object_dropped_by_another_thread_waits_for_the_lock_holder(gpu):
    if gpu.engine_name != "wgpu":
        pytest.skip("Dawn's calls all run on its own thread (engines/dawn/runtime.py)")
    holder = [_buffer(gpu)]
    ref = weakref.ref(holder[0])
    with gpu.lock:
        _drop_in_a_thread(holder)
        assert gpu.lock.pending == 1  # not released in that thread: it lives until the holder lets go
        assert ref() is not None and ref()._internal is not None
        with gpu.lock:  # an inner release is not the holder letting go
            pass
        assert gpu.lock.pending == 1
    assert gpu.lock.pending == 0 and ref() is None  # released by the holder, under the lock


def test_an_object_dropped_while_nobody_holds_the_lock_is_released_at_once(gpu):
    if gpu.engine_name != "wgpu":
        pytest.skip("Dawn's calls all run on its own thread (engines/dawn/runtime.py)")
    holder = [_buffer(gpu)]
    ref = weakref.ref(holder[0])
    _drop_in_a_thread(holder)
    assert ref() is None and gpu.lock.pending == 0


REPRO = r"""
import gc, sys
import numpy as np
from onnxop_cli.gpu import device, get_gpu
from onnxop_cli.gpu.buffers import BufferUsage as U
from onnxop_cli.gpu.copy import copy_through_kernel
from onnxop_cli.core.sources import MemoryBytes

backend, rounds = sys.argv[1], int(sys.argv[2])
g1 = get_gpu(backend)
others = [device.Gpu.open(*reversed(device.resolve(backend))) for _ in range(rounds)]
for g in others:
    g.cache["junk"] = [g.device.create_buffer(size=4096, usage=U.STORAGE | U.COPY_DST) for _ in range(10)]
data = MemoryBytes(np.arange(1 << 18, dtype=np.uint8))
gc.collect()
gc.set_threshold(50, 1, 1)  # collections often, in whichever thread allocates: the writer's too
for _ in range(rounds):
    g2 = others.pop()
    cycle = {"gpu": g2}
    cycle["self"] = cycle  # another device, garbage only a collection frees
    g2.cache["cycle"] = cycle
    del g2, cycle
    out = []
    copy_through_kernel(g1, data, lambda c: out.append([bytes(c)] * 3), chunk_bytes=4096)
    assert b"".join(x[0] for x in out) == data.to_array().tobytes()
print("ok")
"""


def backend_params(metafunc) -> bool:
    """The process test is for wgpu on GL, where the abort was seen."""
    if metafunc.function.__name__ != "test_collections_in_the_writer_thread_do_not_abort_the_process":
        return False
    from conftest import BACKENDS

    metafunc.parametrize("backend", [b for b in BACKENDS if b == "gl"] or BACKENDS[:1], indirect=True,
                         scope="session")
    return True


def test_collections_in_the_writer_thread_do_not_abort_the_process(backend, tmp_path):
    env = {**os.environ, "ONNXOP_BACKEND": backend}
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", REPRO, backend, "20"], capture_output=True, text=True,
                              env=env, timeout=600, cwd=tmp_path)
        assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr[-2000:])
