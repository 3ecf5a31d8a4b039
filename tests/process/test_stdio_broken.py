"""stdio closed or broken, as real processes under real shell redirections
(``bash -c``): closed stdin, closed stdout, every stream closed, a reader
gone before the first byte, a full stdout, lost 'wrote' lines.

Refusals are checked for their outcome AND for what they left: the folder's
files byte for byte, no output, no temporary file.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from batch_folders import one_line, sh
from batch_folders import tree  # noqa: F401 (a fixture)

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True


def test_closed_stdin_is_a_usage_error(tree):
    for cmd in ("onnxop show - <&-", "onnxop flatten - -o out/o.npy <&-"):
        done = sh(cmd, tree)
        assert done.returncode == 2, (cmd, done.stderr)
        assert one_line(done.stderr) == "-: stdin is closed; pipe a .npy, .npz or .pb (TensorProto) in (example: onnxop flatten - < a.npy)"
    assert os.listdir(tree / "out") == []


@pytest.mark.parametrize("quiet", ["", "-q"])
def test_closed_stdout_does_not_turn_success_into_failure(backend, tree, quiet):
    done = sh(f"onnxop flatten a.npy -o out/o.npy {quiet} >&-", tree, backend)
    assert done.returncode == 0 and done.stderr == ""
    assert np.load(tree / "out" / "o.npy").tobytes() == np.load(tree / "a.npy").tobytes()


def test_every_stream_closed(backend, tree):
    done = sh("onnxop flatten a.npy -o out/o.npy <&- >&- 2>&-", tree, backend)
    assert done.returncode == 0
    assert os.listdir(tree / "out") == ["o.npy"]  # fd 1 was not the output's temporary file
    assert np.load(tree / "out" / "o.npy").shape == (2, 12)


def test_npy_to_a_closed_stdout_is_refused(tree):
    done = sh("onnxop flatten a.npy -o - >&-", tree)
    assert done.returncode == 2
    assert one_line(done.stderr) == "-o -: stdout is closed; redirect it to a file or a pipe"


def test_a_usage_error_into_a_gone_reader_still_exits_2(tree):
    done = sh('onnxop flatten a.npy --axis 9 --json | true; echo "${PIPESTATUS[0]}"', tree)
    assert done.stdout == "2\n"
    assert one_line(done.stderr) == "a.npy: Flatten: axis 9 is out of range [-3, 3] for an input of rank 3"


def closed_pipe() -> int:
    """The write end of a pipe whose reader is already gone: every write fails with EPIPE."""
    r, w = os.pipe()
    os.close(r)
    return w


@pytest.mark.parametrize(
    "argv, code, message",
    [
        (["flatten", "a.npy", "--axis", "9", "--json"], 2, "a.npy: Flatten: axis 9 is out of range [-3, 3] for an input of rank 3"),
        (["show", "a.npy"], 141, None),  # quiet, as cat
        (["show", "a.npy", "--json"], 141, None),  # quiet, as cat
        (["flatten", "a.npy", "-o", "-"], 141, None),  # quiet, as cat
        (["flatten", "--help"], 141, None),  # quiet, as cat
    ],
)
def test_a_reader_gone_before_the_first_byte(backend, tree, argv, code, message):
    w = closed_pipe()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "onnxop_cli", *argv], stdout=w, stderr=subprocess.PIPE, text=True,
            cwd=tree, env={**os.environ, "ONNXOP_BACKEND": backend}, timeout=120,
        )
    finally:
        os.close(w)
    assert done.returncode == code
    if message is None:
        assert done.stderr == ""
    else:
        assert one_line(done.stderr) == message


@pytest.mark.parametrize(
    "cmd, code, message",
    [
        ("onnxop show a.npy --json", 1, "stdout: No space left on device"),
        ("onnxop show a.npy", 1, "stdout: No space left on device"),
        ("onnxop flatten a.npy --axis 9 --json", 2, "a.npy: Flatten: axis 9 is out of range [-3, 3] for an input of rank 3"),
        ("onnxop flatten a.npy -o -", 1, "stdout: No space left on device"),
        ("onnxop --json frobnicate", 2, "No such command 'frobnicate'. Did you mean 'concat'? (see 'onnxop --help')"),
    ],
)
def test_a_full_stdout_is_one_line(backend, tree, cmd, code, message):
    done = sh(f"{cmd} > /dev/full", tree, backend)
    assert done.returncode == code
    assert one_line(done.stderr) == message


@pytest.mark.parametrize("stdout", ["> /dev/full", "CLOSED_PIPE"])
def test_lost_wrote_lines_do_not_fail_the_batch(backend, tree, stdout):
    """Only the report of the work failed: every output is written, exit 0,
    one warning naming stdout (none for a reader that stopped reading)."""
    cmd = "onnxop flatten a.npy b.npy -o out"
    if stdout == "CLOSED_PIPE":
        w = closed_pipe()
        try:
            done = sh(cmd, tree, backend, stdout=w)
        finally:
            os.close(w)
        reason = "broken pipe (the reader stopped reading)"
    else:
        done = sh(f"{cmd} {stdout}", tree, backend)
        reason = "No space left on device"
    assert done.returncode == 0
    assert done.stderr == (
        "" if stdout == "CLOSED_PIPE" else
        f"onnxop: warning: stdout: {reason}; the 'wrote' lines were not printed, the outputs were written\n"
    )
    assert sorted(os.listdir(tree / "out")) == ["a.npy", "b.npy"]


def test_a_full_stdout_after_the_file_was_written(backend, tree):
    """The JSON report could not be delivered: exit 1, but the output is complete."""
    done = sh("onnxop flatten a.npy -o out/o.npy --json > /dev/full", tree, backend)
    assert done.returncode == 1 and one_line(done.stderr) == "stdout: No space left on device"
    assert np.load(tree / "out" / "o.npy").tobytes() == np.load(tree / "a.npy").tobytes()
