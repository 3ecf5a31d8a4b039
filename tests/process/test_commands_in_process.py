"""tests/commands.py's runner: a command run in the test's own process (run_job) meets what a
fresh driver process gives it -- the same exit code, stdout and stderr for errors, stdin, binary
stdout, a per-command environment and $TMPDIR -- and leaves nothing of itself behind (folder,
environment, streams, tempfile's folder). Python's own warning filters apply and a warning is
printed to the command's stderr, not recorded by pytest."""

from __future__ import annotations

import io
import os
import sys
import tempfile
import warnings

import numpy as np

from commands import run_commands, run_job


def test_in_process_and_in_a_driver_process_give_the_same(tmp_path):
    x = np.arange(12, dtype=np.int16).reshape(3, 4)
    np.save(tmp_path / "x.npy", x)
    piped = io.BytesIO()
    np.save(piped, x)
    commands = [
        (tmp_path, ["flatten", "missing.npy"]),  # one error line, exit 2
        (tmp_path, ["show", "-"]),  # no stdin given: an empty pipe
        (tmp_path, ["show", "-"], piped.getvalue()),
        (tmp_path, ["transpose", "x.npy", "-o", "-"]),  # binary stdout
        (tmp_path, ["flatten", "x.npy", "-o", "y.npy"], None, {"ONNXOP_POISON": "300"}),
    ]
    before = (os.getcwd(), dict(os.environ), tempfile.gettempdir(), sys.stdin, sys.stdout, sys.stderr)
    here = run_commands(commands, text=False)
    assert (os.getcwd(), dict(os.environ), tempfile.gettempdir(), sys.stdin, sys.stdout, sys.stderr) == before
    there = run_commands(commands, text=False, process=True)
    assert [(r.returncode, r.stdout, r.stderr) for r in here] == [(r.returncode, r.stdout, r.stderr) for r in there]
    codes = [r.returncode for r in here]
    assert codes == [2, 2, 0, 0, 2], [r.stderr for r in here]
    assert b"stdin is empty" in here[1].stderr and b"shape=(3, 4)" in here[2].stdout
    assert here[3].stdout.startswith(b"\x93NUMPY")
    assert b"ONNXOP_POISON" in here[4].stderr


def test_a_command_meets_its_tmpdir_and_python_s_warning_filters(tmp_path):
    """A warning is printed to the command's stderr (DeprecationWarning hidden, as Python hides
    it), not recorded by pytest; tempfile's folder is the command's $TMPDIR, not the one this
    process found first."""
    def run(argv):
        warnings.warn("a stray warning", RuntimeWarning)
        warnings.warn("hidden by Python's filters", DeprecationWarning)
        print(tempfile.gettempdir())
        return 3

    tempfile.gettempdir()
    code, out, err = run_job(run, tmp_path, [], None, {**os.environ, "TMPDIR": str(tmp_path)})
    assert (code, out) == (3, f"{tmp_path}\n")
    assert "RuntimeWarning: a stray warning" in err and "hidden" not in err, err
