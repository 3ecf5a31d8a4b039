"""The tools of the output-promise tests (test_output_*.py): onnxop started as
a process, a temporary output file waited for, the folder's files and an
old output checked after a run, and the inputs (a big and a small tensor).

Every test checks the outcome and the absence of leftovers: after any run,
either the new output is in place (exit 0) or the old one is byte for byte as
it was (non-zero exit), and no temporary file is left. Where the file or the
filesystem is tested, not the process, a test's commands run in one process
(tests/commands.py).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import random_array
from made_once import made_once


TIMEOUT = 120  # seconds: a run that takes longer is a hang


OLD = b"precious: the output before this run"


def start(folder: Path, *argv, **kw) -> subprocess.Popen:
    kw = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, **kw}
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "onnxop_cli", *map(str, argv)], cwd=folder, env=env, **kw)


def onnxop(folder: Path, *argv, **kw) -> tuple[int, str, str]:
    proc = start(folder, *argv, **kw)
    out, err = proc.communicate(timeout=TIMEOUT)
    return proc.returncode, out, err


def temps(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.startswith(".onnxop-")]


def saved(array: np.ndarray) -> bytes:
    """What numpy.save writes for ``array``: the reference for a .npy output."""
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> tuple[Path, bytes]:
    """A 16 MiB input: long enough to aim at, short enough to run many times (made once in a run)."""

    def make() -> tuple[Path, bytes]:
        folder = tmp_path_factory.mktemp("small")
        x = random_array(np.random.default_rng(12), (4, 2**20), np.float32)
        np.save(folder / "x.npy", x)
        return folder / "x.npy", saved(x.reshape(4, -1))

    return made_once(tmp_path_factory, "output-processes-small", make)
