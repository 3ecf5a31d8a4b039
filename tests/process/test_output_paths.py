"""Paths that Path() would silently turn into others.

``Path("")`` is ``.`` and ``Path("new.npy/")`` is ``new.npy``: an unset
``-o "$OUT"`` rewrote the input, and a trailing slash wrote a regular file
where cp says "Not a directory". Each is refused (exit 2, one line) in a
single run, a batch, ``run`` and ``show``, and nothing is written. Real
processes, one backend: this is the CLI's behaviour, not a kernel's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import random_array


def onnxop(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "onnxop_cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "ONNXOP_BACKEND": "vulkan"})


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def folder(tmp_path, rng):
    np.save(tmp_path / "a.npy", random_array(rng, (3, 4), np.float32))
    np.save(tmp_path / "b.npy", random_array(rng, (2, 5), np.int16))
    np.savez(tmp_path / "w.npz", a=random_array(rng, (2, 3), np.uint8))
    return tmp_path


def _model(folder: Path) -> str:
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("Transpose", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), folder / "m.onnx")
    return "m.onnx"


EMPTY_OUTPUT = [
    ["transpose", "a.npy", "-o", ""],
    ["transpose", "a.npy", "b.npy", "-o", ""],  # a batch
    ["unsqueeze", "w.npz", "-m", "a", "--axes", "0", "-o", ""],
    ["run", "MODEL", "a.npy", "-o", ""],
]


@pytest.mark.parametrize("argv", EMPTY_OUTPUT, ids=lambda a: " ".join(a))
def test_empty_output_is_refused_and_nothing_changes(folder, argv):
    argv = [_model(folder) if a == "MODEL" else a for a in argv]
    before = snapshot(folder)
    done = onnxop(*argv, cwd=folder)
    assert done.returncode == 2, done.stderr
    assert done.stderr == "onnxop: error: -o: the output path is empty (an unset variable?); give a file or folder name\n"
    assert snapshot(folder) == before


@pytest.mark.parametrize("target", ["new.npy/", "a.npy/", "missing/new.npy/", "a.npy/."])
def test_trailing_slash_on_no_folder_is_not_a_directory(folder, target):
    """As cp: 'cannot create regular file 'new.npy/': Not a directory'."""
    before = snapshot(folder)
    for argv in (["transpose", "a.npy", "-o", target], ["transpose", "a.npy", "b.npy", "-o", target]):
        done = onnxop(*argv, cwd=folder)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"onnxop: error: {target}: Not a directory") and done.stderr.count("\n") == 1
    assert snapshot(folder) == before
    assert not (folder / "new.npy").exists()


def test_trailing_slash_on_a_folder_writes_into_it(folder):
    (folder / "out").mkdir()
    done = onnxop("transpose", "a.npy", "b.npy", "-o", "out/", cwd=folder)
    assert done.returncode == 0, done.stderr
    got = np.load(folder / "out" / "a.npy")
    assert got.tobytes() == np.ascontiguousarray(np.load(folder / "a.npy").T).tobytes()


@pytest.mark.parametrize("argv", [["transpose", ""], ["show", ""], ["run", "", "a.npy"], ["run", "MODEL", ""],
                                  ["transpose", "a.npy/"], ["show", "a.npy/"]])
def test_empty_or_slashed_input_is_refused(folder, argv):
    argv = [_model(folder) if a == "MODEL" else a for a in argv]
    done = onnxop(*argv, cwd=folder)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1
    assert ("input path is empty" in done.stderr) or ("a.npy/: Not a directory" in done.stderr)


def test_symlink_loop_in_output_folder_is_a_usage_error(folder):
    """Item 13: a loop the user can fix is exit 2, one line, in every spelling."""
    os.symlink("loop", folder / "loop")
    for target in ("loop/x.npy", "loop/", "loop"):
        done = onnxop("transpose", "a.npy", "-o", target, cwd=folder)
        assert done.returncode == 2, (target, done.stderr)
        assert done.stderr.count("\n") == 1 and "loop" in done.stderr, done.stderr
