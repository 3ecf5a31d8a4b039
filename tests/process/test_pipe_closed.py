"""A reader that stops early (``| head``) ends the run
quietly: no message, exit 141 as cat gets from SIGPIPE (it says stdout did
not take everything); an -o file is still written whole or not at all.
Real processes and real pipes."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import random_array

ENV = {**os.environ, "ONNXOP_BACKEND": "vulkan"}
ONNXOP = f"{sys.executable} -m onnxop_cli"


def sh(cmd: str, cwd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True, env=ENV, timeout=300, **kw)


@pytest.fixture
def tree(tmp_path, rng):
    np.save(tmp_path / "x.npy", random_array(rng, (300, 300), "float32"))
    np.save(tmp_path / "big.npy", random_array(rng, (1500, 1500), "float32"))  # 9 MB: past any pipe buffer
    return tmp_path


@pytest.mark.parametrize(
    "cmd, lines",
    [
        ("transpose x.npy --full | head -1", 1),
        ("show big.npy --full | head -3", 3),
        ("show big.npy --full --hist | head -3", 3),
        ("flatten big.npy x.npy --full | head -2", 2),
        ("transpose big.npy -o - | head -c 100 > /dev/null", 0),
        ("identity big.npy -o - | head -c 100 > /dev/null", 0),
    ],
)
def test_head_ends_the_run_quietly(tree, cmd, lines):
    done = sh(f"set -o pipefail; {ONNXOP} {cmd}; echo \"status=${{PIPESTATUS[0]}}\" >&2", tree)
    assert done.stderr == "status=141\n", done.stderr  # no message, cat's exit status
    if lines:
        assert len(done.stdout.splitlines()) == lines


def test_cat_gets_the_same_status(tree):
    """The status chosen is cat's in the same pipe."""
    done = sh("cat big.npy | head -c 1 >/dev/null; echo ${PIPESTATUS[0]}", tree)
    assert done.stdout == "141\n"


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_an_output_file_is_whole_when_stdout_closes_early(tree, extra):
    """The reader is gone before the first byte: the output file is still
    written completely (the report is what was lost), and the exit is quiet."""
    (tree / "out").mkdir()
    r, w = os.pipe()
    os.close(r)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "onnxop_cli", "transpose", "big.npy", "x.npy", "-o", "out", *extra],
            stdout=w, stderr=subprocess.PIPE, text=True, cwd=tree, env=ENV, timeout=300,
        )
    finally:
        os.close(w)
    assert done.stderr == ""
    # the 'wrote' lines are only a report: exit 0; the --json document is the product: 141
    assert done.returncode == (141 if extra else 0)
    for name in ("big.npy", "x.npy"):
        assert np.load(tree / "out" / name).tobytes() == np.ascontiguousarray(np.load(tree / name).T).tobytes()
    assert sorted(os.listdir(tree / "out")) == ["big.npy", "x.npy"]  # no temporary file left


def test_a_stream_cut_by_head_leaves_no_file(tree):
    """-o - into head: nothing is written to disk, no temporary file either."""
    before = sorted(os.listdir(tree))
    done = sh(f"{ONNXOP} transpose big.npy -o - | head -c 10 > /dev/null", tree)
    assert done.stderr == ""
    assert sorted(os.listdir(tree)) == before
