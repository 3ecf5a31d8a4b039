"""A signal while one of several outputs is written ends the run there.

``onnxop run`` of a model with three outputs, ``split`` (one input or a
batch of two) and an ``.npz`` of several members: SIGTERM or SIGINT that
arrives while output 2 is being written ends the run with 128+n. The outputs
finished before it may stay, the one being written is either complete or
absent (never partial), nothing begun after the signal is written, and no
temporary file is left. Real processes and real signals: the run is caught
once output 1 is complete and output 2's temporary file is growing (outputs
of 32 MiB each, so it is still being written when the signal comes).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ONE_BACKEND = True  # the outputs' writing is what is tested, not a kernel

ENV = {**os.environ, "ONNXOP_BACKEND": os.environ.get("ONNXOP_BACKEND", "vulkan")}
TIMEOUT = 120
PART = 32 << 20  # bytes per output: long enough to be caught mid-write
MESSAGE = {signal.SIGINT: "interrupted", signal.SIGTERM: "interrupted by SIGTERM"}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """x.npy and w.npy (3 parts of PART bytes), a one-node Split model and an
    Identity -> Split graph, both with outputs a, b, c."""
    import onnx
    from onnx import TensorProto, helper

    folder = tmp_path_factory.mktemp("signals")
    rng = np.random.default_rng(3)
    for stem in ("x", "w"):
        np.save(folder / f"{stem}.npy", rng.integers(1, 255, size=3 * PART, dtype=np.uint8))

    def model(nodes, path):
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [3 * PART])],
                                  [helper.make_tensor_value_info(n, TensorProto.UINT8, [PART]) for n in "abc"])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), folder / path)

    model([helper.make_node("Split", ["x"], list("abc"), axis=0, num_outputs=3)], "split.onnx")
    model([helper.make_node("Identity", ["x"], ["t"]),
           helper.make_node("Split", ["t"], list("abc"), axis=0, num_outputs=3)], "graph.onnx")
    return folder


def start(cwd: Path, *args: str) -> subprocess.Popen:
    """onnxop at the lowest priority: on a loaded machine the test's polling
    still runs while output 2 is being written (the window is tens of ms)."""
    return subprocess.Popen(["nice", "-n", "19", sys.executable, "-m", "onnxop_cli", *args], cwd=cwd, env=ENV,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # nice execs: one process


def temps(folder: Path) -> list[Path]:
    return [p for p in folder.glob(".onnxop-*") if p.name.endswith(".tmp")]


def sizes(folder: Path) -> list[int]:
    found = []
    for p in temps(folder):
        try:
            found.append(p.stat().st_size)
        except FileNotFoundError:
            pass
    return found


def growing(folder: Path, at_least: int) -> bool:
    return any(n >= at_least for n in sizes(folder))


def second_begun(folder: Path) -> bool:
    """Output 1 is complete (in place, or a whole temporary file: split puts
    a job's outputs in place together) and output 2's temporary file is
    growing."""
    if not folder.is_dir():
        return False
    done = len(finished(folder)) + sum(n > PART for n in sizes(folder))
    return done == 1 and any((1 << 20) <= n < PART for n in sizes(folder))


def writing(folder: Path) -> bool:
    """Whether onnxop has begun writing into ``folder`` (a temporary file or a finished output there)."""
    return folder.is_dir() and any(p.name.endswith(".npy") or p.name.endswith(".tmp") for p in folder.iterdir())


def catch(proc: subprocess.Popen, ready, near) -> bool:
    """Wait until ``ready()`` (output 2 is being written), polling fast once
    ``near()`` (the first output begun: 32 MiB more to write before the window
    opens), every 10 ms before it (the process's start, a second or more: a look
    each ms took as much CPU as the niced onnxop it waited for); False where
    onnxop finished first (the poll missed the window)."""
    deadline = time.monotonic() + TIMEOUT
    fast = False
    while not ready():
        if proc.poll() is not None:
            proc.communicate()
            return False
        assert time.monotonic() < deadline, "onnxop never reached its second output"
        fast = fast or near()
        time.sleep(0.001 if fast else 0.01)
    return True


def caught(folder: Path, args, ready, near, tries: int = 3) -> subprocess.Popen:
    """onnxop started in ``folder`` and caught at ``ready`` (``near``: see catch): started
    again (its outputs removed) where it finished first, ``tries`` times at most."""
    for _ in range(tries):
        proc = start(folder, *args)
        if catch(proc, ready, near):
            return proc
        for p in [*folder.glob("out*"), *folder.glob("out/*")][::-1]:
            p.rmdir() if p.is_dir() else p.unlink()
    pytest.fail(f"onnxop finished before it could be signalled, {tries} times")


def order(name: str) -> tuple[int, int]:
    """(input, output) of a written file: a.npy b.npy c.npy (run's output
    names), x_0.npy ... (split's), w_0.npy ... (a batch's second input)."""
    stem = name.removesuffix(".npy")
    if stem in ("a", "b", "c"):
        return 0, "abc".index(stem)
    source, _, k = stem.rpartition("_")
    return ("x", "w").index(source), int(k)


def finished(folder: Path) -> list[str]:
    return sorted((p.name for p in folder.glob("*.npy")), key=order)


def interrupted(proc: subprocess.Popen, sig: int, stopped: str = "") -> str:
    """Send ``sig``; the run's stdout. ``stopped``: what a batch says after the message."""
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 128 + sig, err
    assert err.endswith(f"onnxop: error: {MESSAGE[sig]}{stopped}\n") and "Traceback" not in err, err
    return out


# a batch, whatever the operator, says where it stopped: no part of x is in place (a job's parts are put in place
# together), w is not begun
STOPPED = {"split-batch": " (batch stopped at out/x_0.npy, out/x_1.npy, out/x_2.npy, not written; written before it: "
                          "none)"}
FOLDER_CASES = {
    "run-graph": ["run", "graph.onnx", "x.npy", "-o", "out/"],
    "run-one-node": ["run", "split.onnx", "x.npy", "-o", "out/"],
    "split": ["split", "x.npy", "--num-outputs", "3", "-o", "out/"],
    "split-batch": ["split", "x.npy", "w.npy", "--num-outputs", "3", "-o", "out/"],
}


# every route with SIGTERM; SIGINT takes the same way, once
ROUTES = [(case, signal.SIGTERM) for case in FOLDER_CASES] + [("run-graph", signal.SIGINT)]


@pytest.mark.parametrize("case, sig", ROUTES, ids=[f"{c}-{signal.Signals(s).name}" for c, s in ROUTES])
def test_a_signal_during_the_second_output_writes_nothing_after_it(files, tmp_path, case, sig):
    for f in files.iterdir():
        (tmp_path / f.name).symlink_to(f)
    out = tmp_path / "out"
    proc = caught(tmp_path, FOLDER_CASES[case], lambda: second_begun(out), lambda: writing(out))
    said = interrupted(proc, sig, STOPPED.get(case, ""))
    after = finished(out)
    assert temps(out) == []
    # output 1 may stay, output 2 (being written) is complete or absent, nothing later is begun
    assert [order(name) for name in after] in ([], [(0, 0)], [(0, 0), (0, 1)]), after
    for name in after:
        assert np.load(out / name).nbytes == PART, name
        assert f"wrote out/{name}" in said, said  # what stays is said


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: signal.Signals(s).name)
def test_a_signal_during_an_archives_second_member_leaves_no_archive(files, tmp_path, sig):
    for f in files.iterdir():
        (tmp_path / f.name).symlink_to(f)
    argv = ["run", "graph.onnx", "x.npy", "-o", "out.npz"]
    proc = caught(tmp_path, argv, lambda: growing(tmp_path, PART + (1 << 20)), lambda: temps(tmp_path) != [])
    interrupted(proc, sig)
    assert not (tmp_path / "out.npz").exists()
    assert temps(tmp_path) == []
