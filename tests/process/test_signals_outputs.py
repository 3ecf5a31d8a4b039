"""A signal while one of several outputs is written ends the run there.

``onnxop run`` of a model with three outputs, ``split`` (one input or a
batch of two) and an ``.npz`` of several members: SIGTERM or SIGINT that
arrives while output 2 is being written ends the run with 128+n. The outputs
finished before it may stay, the one being written is either complete or
absent (never partial), nothing begun after the signal is written, and no
temporary file is left. Real processes and real signals: the run is caught
once output 1 is complete and output 2's temporary file is there, not yet
whole, and stopped there (SIGSTOP: a look at the files while it is stopped
is exact, and the signal sent then lands there; without the stop, output 2
was 32 MiB and output 3 as large, so that the signal could not come too
late). Output 2 is 8 MiB (made on the device, then written, in about 0.2 s
on a quiet machine: the window), outputs 1 and 3 64 KiB: their size is not
what is tested.
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

from made_once import made_once

ONE_BACKEND = True  # the outputs' writing is what is tested, not a kernel

ENV = {**os.environ, "ONNXOP_BACKEND": os.environ.get("ONNXOP_BACKEND", "vulkan")}
TIMEOUT = 120
PART = 8 << 20  # bytes of output 2: long enough to be caught while it is made and written
EDGE = 64 << 10  # bytes of outputs 1 and 3 (split writes a part of 4 KiB last: not output 1)
SIZES = {0: EDGE, 1: PART, 2: EDGE}  # by output
HEADER = 128  # bytes of a .npy header here
MESSAGE = {signal.SIGINT: "interrupted", signal.SIGTERM: "interrupted by SIGTERM"}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """x.npy and w.npy (parts of EDGE, PART and EDGE bytes), a one-node Split model and an
    Identity -> Split graph, both with outputs a, b, c (those sizes, the Split's input s).
    Made once in a run."""

    def make() -> Path:
        import onnx
        from onnx import TensorProto, helper

        folder = tmp_path_factory.mktemp("signals")
        rng = np.random.default_rng(3)
        total = sum(SIZES.values())
        for stem in ("x", "w"):
            np.save(folder / f"{stem}.npy", rng.integers(1, 255, size=total, dtype=np.uint8))

        def model(nodes, path):
            sizes = helper.make_tensor("s", TensorProto.INT64, [3], list(SIZES.values()))
            graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [total])],
                                      [helper.make_tensor_value_info(n, TensorProto.UINT8, [SIZES[k]])
                                       for k, n in enumerate("abc")], initializer=[sizes])
            onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), folder / path)

        model([helper.make_node("Split", ["x", "s"], list("abc"), axis=0)], "split.onnx")
        model([helper.make_node("Identity", ["x"], ["t"]),
               helper.make_node("Split", ["t", "s"], list("abc"), axis=0)], "graph.onnx")
        return folder

    return made_once(tmp_path_factory, "signals-outputs-files", make)


def start(cwd: Path, *args: str) -> subprocess.Popen:
    """onnxop at the lowest priority: on a loaded machine the test's polling
    still runs while output 2 is being made and written (a tenth of a second or so)."""
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


WHOLE = (HEADER + EDGE, HEADER + PART)  # the sizes of a whole .npy output


def second_begun(folder: Path) -> bool:
    """Output 1 is complete (in place, or a whole temporary file: split puts
    a job's outputs in place together) and output 2's temporary file is
    there, not yet whole (nothing else is begun)."""
    if not folder.is_dir():
        return False
    found = sizes(folder)
    done = len(finished(folder)) + sum(n in WHOLE for n in found)
    return done == 1 and any(n not in WHOLE for n in found)


def second_member(folder: Path) -> bool:
    """The archive's temporary file holds member 1 whole and not yet member 2."""
    return any(HEADER + EDGE < n < PART for n in sizes(folder))


def writing(folder: Path) -> bool:
    """Whether onnxop has begun writing into ``folder`` (a temporary file or a finished output there)."""
    return folder.is_dir() and any(p.name.endswith(".npy") or p.name.endswith(".tmp") for p in folder.iterdir())


def stopped(proc: subprocess.Popen) -> bool:
    """SIGSTOP ``proc`` and wait until all its threads have stopped (waitid, the status left for
    Popen to reap); False where it ended first."""
    proc.send_signal(signal.SIGSTOP)
    found = os.waitid(os.P_PID, proc.pid, os.WSTOPPED | os.WEXITED | os.WNOWAIT)
    return found.si_code == os.CLD_STOPPED


def catch(proc: subprocess.Popen, ready, near) -> bool:
    """Wait until ``ready()`` (output 2 is being written), polling fast once
    ``near()`` (the first output begun), every 10 ms before it (the process's
    start, a second or more: a look each ms took as much CPU as the niced
    onnxop it waited for); then stop it there, still ``ready()`` (a signal sent
    while it is stopped lands where it stopped: interrupted() continues it).
    False where onnxop finished first (the poll missed the window)."""
    deadline = time.monotonic() + TIMEOUT
    fast = False
    while True:
        if ready():
            if not stopped(proc):
                break
            if ready():
                return True
            proc.send_signal(signal.SIGCONT)  # it passed the window between the look and the stop
        if proc.poll() is not None:
            break
        assert time.monotonic() < deadline, "onnxop never reached its second output"
        fast = fast or near()
        time.sleep(0.001 if fast else 0.01)
    proc.communicate()
    return False


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
    """Send ``sig`` to the stopped run and continue it; the run's stdout. ``stopped``: what a batch
    says after the message."""
    proc.send_signal(sig)
    proc.send_signal(signal.SIGCONT)
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
    "split": ["split", "x.npy", "--split", ",".join(map(str, SIZES.values())), "-o", "out/"],
    "split-batch": ["split", "x.npy", "w.npy", "--split", ",".join(map(str, SIZES.values())), "-o", "out/"],
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
        assert np.load(out / name).nbytes == SIZES[order(name)[1]], name
        assert f"wrote out/{name}" in said, said  # what stays is said


def test_a_signal_during_an_archives_second_member_leaves_no_archive(files, tmp_path):
    """SIGTERM (SIGINT takes the same way: the routes above)."""
    for f in files.iterdir():
        (tmp_path / f.name).symlink_to(f)
    argv = ["run", "graph.onnx", "x.npy", "-o", "out.npz"]
    proc = caught(tmp_path, argv, lambda: second_member(tmp_path), lambda: temps(tmp_path) != [])
    interrupted(proc, signal.SIGTERM)
    assert not (tmp_path / "out.npz").exists()
    assert temps(tmp_path) == []
