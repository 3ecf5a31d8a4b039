"""The tools of the batch and stdio tests: onnxop under a real shell
redirection (``bash -c``), a folder's files byte for byte before and after a
run, and a refusal checked for what it left."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import cli, error_of, random_array
from onnxop_cli.errors import ExitCode

ONNXOP = f"{sys.executable} -m onnxop_cli"


def sh(command: str, cwd: Path, backend: str = "vulkan", stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    """``command`` in bash, ``onnxop`` standing for this checkout's CLI."""
    env = {**os.environ, "ONNXOP_BACKEND": backend}
    return subprocess.run(
        ["bash", "-c", f"onnxop() {{ {ONNXOP} \"$@\"; }}; {command}"],
        cwd=cwd, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120,
    )


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones, symlinks' targets) by relative path."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            path = Path(root, name)
            rel = str(path.relative_to(folder))
            out[rel] = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
    return out


def folders(folder: Path) -> set[str]:
    return {str(Path(r).relative_to(folder)) for r, _, _ in os.walk(folder)}


def one_line(err: str) -> str:
    return error_of(err)


@pytest.fixture
def tree(cwd, rng):
    """a.npy, b.npy, and the layout of an ONNX test-data folder: p/ q/ r/
    each with an input_0.npy; an empty out/ folder."""
    np.save(cwd / "a.npy", random_array(rng, (2, 3, 4), "float32"))
    np.save(cwd / "b.npy", random_array(rng, (3, 5), "int16"))
    for d in "pqr":
        (cwd / d).mkdir()
        np.save(cwd / d / "input_0.npy", random_array(rng, (2, 2, 3), "uint8"))
    (cwd / "out").mkdir()
    return cwd


def refused(capsys, folder: Path, *argv) -> str:
    """Run onnxop in-process; it must refuse with exit 2 and leave ``folder``
    (files, bytes, subfolders) exactly as it was. Returns the message."""
    before, dirs = snapshot(folder), folders(folder)
    code, out, err = cli(capsys, *argv)
    assert code == ExitCode.USAGE, err
    assert snapshot(folder) == before and folders(folder) == dirs
    return one_line(err)
