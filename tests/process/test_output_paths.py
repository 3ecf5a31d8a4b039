"""Paths that Path() would silently turn into others.

``Path("")`` is ``.`` and ``Path("new.npy/")`` is ``new.npy``: an unset
``-o "$OUT"`` rewrote the input, and a trailing slash wrote a regular file
where cp says "Not a directory". Each is refused (exit 2, one line) in a
single run, a batch, ``run`` and ``show``, and nothing is written. Real
commands on real files, one backend: this is the CLI's behaviour, not a
kernel's nor the process's, so each test's commands run in one process
(tests/commands.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from commands import run_commands
from conftest import random_array


def onnxop(folder: Path, *argvs: list[str]) -> list:
    """Each argv's CompletedProcess, all run in one process in ``folder``."""
    done = run_commands([(folder, argv) for argv in argvs], env={**os.environ, "ONNXOP_BACKEND": "vulkan"})
    assert len(done) == len(argvs)
    return done


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


def test_empty_output_is_refused_and_nothing_changes(folder):
    model = _model(folder)
    before = snapshot(folder)
    argvs = [[model if a == "MODEL" else a for a in argv] for argv in EMPTY_OUTPUT]
    for argv, done in zip(argvs, onnxop(folder, *argvs)):
        assert done.returncode == 2, (argv, done.stderr)
        assert done.stderr == ("onnxop: error: -o: the output path is empty (an unset variable?); give a file or "
                               "folder name\n"), argv
    assert snapshot(folder) == before  # no command of the four wrote or changed a file


TRAILING = ["new.npy/", "a.npy/", "missing/new.npy/", "a.npy/."]


def test_trailing_slash_on_no_folder_is_not_a_directory(folder):
    """As cp: 'cannot create regular file 'new.npy/': Not a directory'; a single run and a batch, each target."""
    before = snapshot(folder)
    cases = [(target, argv) for target in TRAILING
             for argv in (["transpose", "a.npy", "-o", target], ["transpose", "a.npy", "b.npy", "-o", target])]
    for (target, argv), done in zip(cases, onnxop(folder, *(argv for _, argv in cases))):
        assert done.returncode == 2, (argv, done.stderr)
        assert done.stderr.startswith(f"onnxop: error: {target}: Not a directory") and done.stderr.count("\n") == 1, (
            argv, done.stderr)
        # a batch's -o can only be a folder: the advice names that too (dropping the / alone was refused next)
        assert done.stderr.rstrip().endswith("drop the / to write a file, or make the folder to write into it"), (
            argv, done.stderr)
    assert snapshot(folder) == before
    assert not (folder / "new.npy").exists()


def test_trailing_slash_on_a_folder_writes_into_it(folder):
    (folder / "out").mkdir()
    [done] = onnxop(folder, ["transpose", "a.npy", "b.npy", "-o", "out/"])
    assert done.returncode == 0, done.stderr
    got = np.load(folder / "out" / "a.npy")
    assert got.tobytes() == np.ascontiguousarray(np.load(folder / "a.npy").T).tobytes()


EMPTY_OR_SLASHED = [["transpose", ""], ["show", ""], ["run", "", "a.npy"], ["run", "MODEL", ""],
                    ["transpose", "a.npy/"], ["show", "a.npy/"]]


def test_empty_or_slashed_input_is_refused(folder):
    model = _model(folder)
    argvs = [[model if a == "MODEL" else a for a in argv] for argv in EMPTY_OR_SLASHED]
    for argv, done in zip(argvs, onnxop(folder, *argvs)):
        assert done.returncode == 2, (argv, done.stderr)
        assert done.stderr.count("\n") == 1, (argv, done.stderr)
        assert ("input path is empty" in done.stderr) or ("a.npy/: Not a directory" in done.stderr), (argv, done.stderr)


def test_symlink_loop_in_output_folder_is_a_usage_error(folder):
    """Item 13: a loop the user can fix is exit 2, one line, in every spelling."""
    os.symlink("loop", folder / "loop")
    targets = ("loop/x.npy", "loop/", "loop")
    for target, done in zip(targets, onnxop(folder, *(["transpose", "a.npy", "-o", t] for t in targets))):
        assert done.returncode == 2, (target, done.stderr)
        assert done.stderr.count("\n") == 1 and "loop" in done.stderr, done.stderr
