"""The Python API from many threads at once.

Each thread reshapes, transposes and slices its own random array; every
result must be byte-identical to numpy's, with no other thread's values, no
zeros and no panic. The threads start in a fresh process, so their first
calls race to open the device too (the lazy device, Dawn's instance). The
engine is what is tested, so this fans out over the backends.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import sys, threading
    import numpy as np
    from onnxop_cli import api

    backends = sys.argv[1].split(",")
    threads, rounds = int(sys.argv[2]), int(sys.argv[3])
    bad = []

    def work(k):
        rng = np.random.default_rng(1000 + k)
        backend = backends[k % len(backends)]
        dtype = [np.int32, np.uint8, np.float64, np.int16][k % 4]
        for i in range(rounds):
            shape = (int(rng.integers(1, 90)), int(rng.integers(1, 70)), 3)
            raw = rng.integers(1, 256, size=int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8)
            a = raw.view(dtype).reshape(shape)
            try:
                if i % 3 == 0:
                    got, want = api.reshape(a, [-1, 3], backend=backend), a.reshape(-1, 3)
                elif i % 3 == 1:
                    got, want = api.transpose(a, [2, 0, 1], backend=backend), a.transpose(2, 0, 1)
                else:
                    got, want = api.slice_(a, [0, -1], [1000, -1000], steps=[2, -1], backend=backend), a[::2, ::-1]
            except Exception as e:
                bad.append(f"thread {k} round {i}: {type(e).__name__}: {e}")
                continue
            want = np.ascontiguousarray(want)
            if got.shape != want.shape or got.dtype != want.dtype or got.tobytes() != want.tobytes():
                bad.append(f"thread {k} round {i} on {backend}: wrong bytes (shape {got.shape} vs {want.shape})")

    ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print("\\n".join(bad[:5]) if bad else "OK")
    sys.exit(1 if bad else 0)
    """
)


def _run(backends: str, threads: int = 6, rounds: int = 40) -> subprocess.CompletedProcess:
    return subprocess.run(
        # -u: "OK" reaches the pipe before exit, so an abort at exit tells itself from one mid-run;
        # faulthandler: an abort prints every thread's Python stack
        [sys.executable, "-u", "-X", "faulthandler", "-c", SCRIPT, backends, str(threads), str(rounds)],
        capture_output=True, text=True, timeout=600, env={**os.environ, "ONNXOP_POISON": "0xA5"},
    )


def test_threads_each_get_their_own_bytes(backend):
    """Six threads, 40 calls each, first calls racing to open the device:
    every result is numpy's, bit for bit (the output buffers are poisoned)."""
    for attempt in range(2):  # a race shows in some runs only: two fresh processes
        done = _run(backend)
        assert done.returncode == 0 and done.stdout.strip() == "OK", (
            f"run {attempt}: rc {done.returncode}\n{done.stdout}\n{done.stderr[-2000:]}"
        )


def test_threads_on_both_engines_at_once(backend):
    """Threads on wgpu and on Dawn in one process, at the same time."""
    if backend.startswith(("dawn-", "browser-")):
        pytest.skip("run once per adapter type, from its wgpu parametrisation")
    from onnxop_cli.gpu.engines import installed

    if not installed("dawn"):
        pytest.skip("dawn-python is not installed")
    done = _run(f"{backend},dawn-{backend}", threads=4, rounds=30)
    assert done.returncode == 0 and done.stdout.strip() == "OK", f"{done.stdout}\n{done.stderr[-2000:]}"
