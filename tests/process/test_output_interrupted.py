"""Output promises under signals, sent to separate onnxop processes as they
happen: SIGINT, SIGTERM and SIGHUP mid-stream, early, around the final
rename, twice, with a progress bar on a terminal, wrapped by Python; and
SIGKILL, which leaves one recognisable temporary file.

The promise each test holds is output_processes.py's.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

from commands import terminal_output
from conftest import error_of, random_array, seeded_rng
from made_once import made_once
import numpy as np
from output_processes import OLD, TIMEOUT, saved, start, temps
from output_processes import small  # noqa: F401 (a fixture)
import pytest

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True


TMP_NAME = re.compile(r"^\.onnxop-(\d+)-[a-z0-9]{4}\.tmp$")


SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
# One handler takes the three (core/signals.py); SIGINT alone differs (its message, and Python's
# KeyboardInterrupt before the handler is in place). Mid-stream: SIGINT and SIGHUP (SIGTERM's four
# tests below); early: SIGINT and SIGTERM (SIGHUP's default action, before the handler, is SIGTERM's).
MID_STREAM = [signal.SIGINT, signal.SIGHUP]
EARLY = [signal.SIGINT, signal.SIGTERM]


MESSAGE = {signal.SIGINT: "interrupted", signal.SIGTERM: "interrupted by SIGTERM", signal.SIGHUP: "interrupted by SIGHUP"}


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> tuple[Path, bytes]:
    """An 80 MiB input (20 chunks of 4 MiB) and the bytes its flatten gives: a signal sent once 8 MiB
    are written lands with 72 MiB to go, and the transfer is over the size that gets a progress bar
    (cli/progress.py's THRESHOLD, 64 MiB). 256 MiB proved no more, drawn and saved at 3x the CPU.
    Made once in a run."""
    from onnxop_cli.cli.progress import THRESHOLD

    def make() -> tuple[Path, bytes]:
        folder = tmp_path_factory.mktemp("big")
        x = random_array(np.random.default_rng(11), (20, 2**20), np.float32)
        assert x.nbytes > THRESHOLD
        np.save(folder / "x.npy", x)
        return folder / "x.npy", saved(x.reshape(20, -1))

    return made_once(tmp_path_factory, "output-interrupted-big", make)


def wait_for_temp(proc: subprocess.Popen, folder: Path, at_least: int = 0) -> float:
    """Wait until the output's temporary file holds ``at_least`` bytes; the time then."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        found = temps(folder)
        if found:
            try:
                if found[0].stat().st_size >= at_least:
                    return time.monotonic()
            except FileNotFoundError:
                pass
        assert proc.poll() is None, "onnxop finished before it could be interrupted"
        assert time.monotonic() < deadline, "onnxop never started writing"
        time.sleep(0.001)


def check_outcome(proc, out, err, sig, target: Path, new: bytes) -> str:
    """Exit 0 and the new output, or 128+n, one line and the old output; never a temporary file."""
    assert temps(target.parent) == [], (proc.returncode, err)
    assert "Traceback" not in err and "Exception ignored" not in err, err
    if proc.returncode == 0:
        assert target.read_bytes() == new, "exit code 0 but the output is not the new one"
        return "done"
    assert proc.returncode == 128 + sig, err
    assert out == "" and error_of(err) == MESSAGE[sig]
    assert target.read_bytes() == OLD, f"exit code {proc.returncode} but the old output is gone"
    return "interrupted"


@pytest.mark.parametrize("sig", MID_STREAM, ids=lambda s: s.name)
def test_a_signal_mid_stream_leaves_the_old_output(backend, big, tmp_path, sig):
    """Two 4 MiB chunks into a 256 MiB write: 128+n, one line, the old output."""
    x, _ = big
    (tmp_path / "y.npy").write_bytes(OLD)
    proc = start(tmp_path, "flatten", x, "-o", "y.npy", "-b", backend)
    try:
        wait_for_temp(proc, tmp_path, at_least=8 << 20)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 128 + sig, err
    assert out == "" and error_of(err) == MESSAGE[sig]
    assert (tmp_path / "y.npy").read_bytes() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["y.npy"]


@pytest.mark.parametrize("suffix", [".npz", ".pb"])
def test_sigterm_mid_stream_into_an_archive_or_a_tensorproto(backend, big, tmp_path, suffix):
    x, _ = big
    target = tmp_path / f"y{suffix}"
    target.write_bytes(OLD)
    proc = start(tmp_path, "flatten", x, "-o", target.name, "-b", backend)
    try:
        wait_for_temp(proc, tmp_path, at_least=8 << 20)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert out == "" and error_of(err) == "interrupted by SIGTERM"
    assert target.read_bytes() == OLD and temps(tmp_path) == []


@pytest.mark.parametrize("sig", EARLY, ids=lambda s: s.name)
def test_a_signal_early_stops_before_anything_is_written(backend, small, tmp_path, sig):
    """While Python starts, while modules load, while the device opens: the
    old output stays and nothing is left. Once onnxop's handlers are in
    place (they are installed before anything else loads) the end is one
    line and 128+n; before that the signal's default action ends Python."""
    x, new = small
    target = tmp_path / "y.npy"
    for delay in (0.0, 0.05, 0.15, 0.3, 0.5):
        target.write_bytes(OLD)
        proc = start(tmp_path, "flatten", x, "-o", "y.npy", "-b", backend)
        try:
            time.sleep(delay)
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=TIMEOUT)
        finally:
            proc.kill()
        if proc.returncode not in (0, 128 + sig):
            # Python was still starting, before onnxop's handlers: the
            # default action (killed by the signal; SIGINT's KeyboardInterrupt)
            assert proc.returncode in (-sig, 1), err
            assert err == "" or err.rstrip().endswith("KeyboardInterrupt"), err
            assert target.read_bytes() == OLD and temps(tmp_path) == []
            continue
        check_outcome(proc, out, err, sig, target, new)


def test_signals_around_the_final_rename_never_lie(backend, small, tmp_path, request):
    """Many runs, each sent a signal at a random moment near the end of its
    write: just before, during or just after the rename, or as the process
    exits. Each ends either done (exit 0, new output) or interrupted (128+n,
    the old output), never a mix, never a temporary file; both outcomes must
    have been seen, so the window was hit."""
    x, new = small
    target = tmp_path / "y.npy"
    # one run to learn how long the write takes here (temporary file seen -> gone)
    target.write_bytes(OLD)
    proc = start(tmp_path, "flatten", x, "-o", "y.npy", "-b", backend)
    began = wait_for_temp(proc, tmp_path)
    while temps(tmp_path) and proc.poll() is None:
        time.sleep(0.001)
    span = max(time.monotonic() - began, 0.005)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0 and target.read_bytes() == new, err

    seen = {"done": 0, "interrupted": 0}
    rng = seeded_rng(request)
    tries = 0
    # 12 runs (each signal four times), more until each outcome was seen twice: a run is a
    # process start (about 0.45 CPU s), and the outcomes, not the count, are what is checked
    while tries < 12 or (min(seen.values()) < 2 and tries < 60):
        sig = SIGNALS[tries % 3]
        tries += 1
        target.write_bytes(OLD)
        proc = start(tmp_path, "flatten", x, "-o", "y.npy", "-b", backend)
        try:
            began = wait_for_temp(proc, tmp_path)
            time.sleep(rng.uniform(0.3, 1.6) * span)
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=TIMEOUT)
        finally:
            proc.kill()
        seen[check_outcome(proc, out, err, sig, target, new)] += 1
    assert min(seen.values()) >= 1, f"the signals missed the end of the write: {seen} in {tries} runs"


def test_a_second_signal_does_not_cut_the_cleanup_short(backend, big, tmp_path):
    """SIGTERM, then Ctrl-C while onnxop unwinds: still one line, the code
    of the signal handled first (Python runs handlers of signals that came
    together in number order), the old output and no temporary file."""
    x, _ = big
    (tmp_path / "y.npy").write_bytes(OLD)
    proc = start(tmp_path, "flatten", x, "-o", "y.npy", "-b", backend)
    try:
        wait_for_temp(proc, tmp_path, at_least=8 << 20)
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.002)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    first = signal.Signals(proc.returncode - 128)
    assert first in (signal.SIGTERM, signal.SIGINT), err
    assert out == "" and error_of(err) == MESSAGE[first]
    assert (tmp_path / "y.npy").read_bytes() == OLD and temps(tmp_path) == []


def test_a_signal_with_a_progress_bar_on_a_terminal(backend, big, tmp_path):
    """The bar (a rich thread drawing on stderr) ends with the run: one error line after it."""
    import pty

    x, _ = big
    (tmp_path / "y.npy").write_bytes(OLD)
    leader, follower = pty.openpty()
    proc = start(tmp_path, "flatten", x, "-o", "y.npy", "-b", backend, stderr=follower)
    os.close(follower)
    try:
        wait_for_temp(proc, tmp_path, at_least=8 << 20)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    err = terminal_output(leader)
    assert proc.returncode == 143, err
    assert "Traceback" not in err and err.rstrip().endswith("onnxop: error: interrupted by SIGTERM"), err
    assert (tmp_path / "y.npy").read_bytes() == OLD and temps(tmp_path) == []


def test_sigkill_leaves_one_recognisable_temporary_file(backend, big, tmp_path):
    """What the README says a SIGKILL can leave: one .onnxop-<pid>-XXXX.tmp."""
    x, _ = big
    (tmp_path / "y.npy").write_bytes(OLD)
    proc = start(tmp_path, "flatten", x, "-o", "y.npy", "-b", backend)
    try:
        wait_for_temp(proc, tmp_path, at_least=8 << 20)
        proc.kill()
        proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    left = temps(tmp_path)
    assert len(left) == 1 and len(left[0].name) <= 24
    assert TMP_NAME.match(left[0].name).group(1) == str(proc.pid)
    assert (tmp_path / "y.npy").read_bytes() == OLD


def test_a_signal_wrapped_by_python_is_still_an_interruption():
    """Python 3.11 wraps an exception raised in __set_name__ (a dataclass
    being defined while a module loads) in a RuntimeError: a signal that
    lands there must still end the run as that signal, in one line."""
    import signal as signals_module

    from onnxop_cli.cli.main import _describe
    from onnxop_cli.errors import Interrupted, interruption

    class Trap:
        def __set_name__(self, owner, name):
            raise Interrupted.by(signals_module.SIGTERM)

    with pytest.raises(BaseException) as caught:
        type("Defined", (), {"field": Trap()})
    found = interruption(caught.value)
    assert found is not None and found.exit_code == 143
    assert _describe(caught.value, ["flatten"]) == ("interrupted by SIGTERM", 143)
    assert interruption(RuntimeError("no signal here")) is None
