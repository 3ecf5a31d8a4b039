"""The operators with tensor inputs from many threads at once, each call's GPU work
under its engine's lock (gpu/device.py Gpu.lock, gpu/release.py).

test_api_threads.py runs the views from threads; this runs Concat, Pad,
Where, Split, Gather, ScatterND, Tile, OneHot, Compress and a three-node
graph through onnxop's onnx.backend: kernels that
share the device's pipelines, cached buffers and queue. Every result must be
numpy's, bit for bit, in output buffers poisoned with 0xA5. On Dawn, which
on Vulkan is called from whichever thread asks, the rule itself is checked
too, since a break of it shows as a wrong byte or an abort in one run of
hundreds ("free(): invalid pointer", once, from a release under another
thread's submits): every ``wgpu*`` call made by a thread that holds neither
the engine's lock nor the device-opening lock is a failure, named with where
it came from. Threads collect garbage as they go, so finalizers run in them.
The engine is what is tested, so this fans out over the backends.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import collections, gc, sys, threading, traceback
    import numpy as np
    from onnxop_cli import api
    from onnxop_cli.gpu import device

    backend, threads, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    outside = collections.Counter()
    if backend.startswith("dawn-"):
        from onnxop_cli.gpu.engines.dawn import runtime

        run = runtime._OneThread.run

        def checked(self, fn, *args):
            lock = device._engine_locks.get("dawn")
            if lock is not None and not lock.owned() and not device._opening._is_owned():
                where = " <- ".join(f"{f.name}:{f.lineno}" for f in reversed(traceback.extract_stack()[-6:-2]))
                outside[(getattr(fn, "__name__", repr(fn)), where)] += 1
            return run(self, fn, *args)

        runtime._OneThread.run = checked
    bad = []

    from onnx import TensorProto, helper
    from onnxop_cli import backend as onnx_backend

    def graph_rep(dtype):
        t = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
                 helper.make_node("Concat", ["t", "t"], ["c"], axis=2),
                 helper.make_node("Gather", ["c", "i"], ["y"], axis=1)]
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", t, ["n", 7, 5]),
                                            helper.make_tensor_value_info("i", TensorProto.INT64, [3])],
                              [helper.make_tensor_value_info("y", t, ["n", 3, 7])])
        return onnx_backend.prepare(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]), backend=backend)

    reps = {d: graph_rep(d) for d in (np.int32, np.int16)}

    def cases(rng, a):
        n = a.shape[0]
        idx = rng.integers(-n, n, size=9)
        rows = rng.permutation(n)[: max(1, n // 2)].reshape(-1, 1)
        upd = rng.integers(-9, 9, size=(len(rows),) + a.shape[1:]).astype(a.dtype)
        scattered = a.copy()
        scattered[rows[:, 0]] = upd
        keep = rng.integers(0, 2, size=n).astype(bool)
        depth = 6
        hot = rng.integers(-depth, depth, size=(n, 3))
        return [
            (lambda: api.concat(a, a[::-1], axis=1, backend=backend), lambda: np.concatenate([a, a[::-1]], 1)),
            (lambda: api.pad(a, [0, 1, 2, 0, 2, 1], mode="reflect", backend=backend),
             lambda: np.pad(a, [(0, 0), (1, 2), (2, 1)], mode="reflect")),
            (lambda: api.where(a > 0, a, -a, backend=backend), lambda: np.where(a > 0, a, -a)),
            (lambda: api.split(a, axis=1, num_outputs=2, backend=backend)[1], lambda: a[:, 4:]),
            (lambda: api.gather(a, idx, axis=0, backend=backend), lambda: a[idx]),
            (lambda: api.scatter_nd(a, rows, upd, backend=backend), lambda: scattered),
            (lambda: api.tile(a, [2, 1, 3], backend=backend), lambda: np.tile(a, (2, 1, 3))),
            (lambda: api.one_hot(hot, np.array(depth), np.array([0, 1], a.dtype), backend=backend),
             lambda: np.eye(depth, dtype=a.dtype)[hot % depth]),
            (lambda: api.compress(a, keep, axis=0, backend=backend), lambda: a[keep]),
            (lambda: reps[a.dtype.type].run([a, np.array([4, -1, 0])])[0],
             lambda: np.concatenate([a.transpose(0, 2, 1)] * 2, 2)[:, [4, -1, 0]]),
        ]

    def work(k):
        rng = np.random.default_rng(50 + k)
        for i in range(rounds):
            a = rng.integers(-1000, 1000, size=(int(rng.integers(2, 60)), 7, 5)).astype([np.int32, np.int16][k % 2])
            all_cases = cases(rng, a)
            got, want = all_cases[(i + k) % len(all_cases)]
            try:
                got = got()
            except Exception as e:
                bad.append(f"thread {k} round {i}: {type(e).__name__}: {e}")
                continue
            want = np.ascontiguousarray(want())
            if got.shape != want.shape or got.tobytes() != want.tobytes():
                bad.append(f"thread {k} round {i} ({(i + k) % len(all_cases)}): wrong bytes")
            if i % 4 == k % 4:
                gc.collect()  # cyclic garbage finalized in this thread, whoever holds the lock

    ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    gc.collect()
    for (name, where), n in outside.most_common(8):
        bad.append(f"{n} x {name} outside the engine lock, from {where}")
    print("\\n".join(bad[:10]) if bad else "OK")
    sys.exit(1 if bad else 0)
    """
)


def test_tensor_operators_threads_each_get_their_own_bytes(backend):
    done = subprocess.run(
        [sys.executable, "-u", "-X", "faulthandler", "-c", SCRIPT, backend, "4", "27"],  # as test_api_threads.py
        capture_output=True, text=True, timeout=600, env={**os.environ, "ONNXOP_POISON": "0xA5"},
    )
    assert done.returncode == 0 and done.stdout.strip() == "OK", f"rc {done.returncode}\n{done.stdout}\n{done.stderr[-2000:]}"
