"""Every command reads its whole input stream and checks
it, as it checks the same file on disk: a truncated stream and bytes after
the data are refused (exit 2, one line, no output kept), and a feeding
process never sees its pipe closed early (a Slice of the front reads the
rest too). Real processes and real pipes; the refusal of each command's
damaged stream to a file in-process (the same reader: a process each cost a
second apiece), every command's refusal when printing through onnxop's entry
reading each stream from a real pipe (tests/commands.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from commands import run_commands
from conftest import cli, random_array
from test_pipes import FakeStdin

ENV = {**os.environ, "ONNXOP_BACKEND": "vulkan"}
ONNXOP = [sys.executable, "-m", "onnxop_cli"]
SHAPE = (8, 16, 32, 32)  # 512 KiB of float32: more than a pipe's buffer

COMMANDS = {
    "flatten": ["--axis", "1"],
    "unsqueeze": ["--axes", "0"],
    "identity": [],
    "reshape": ["--shape", "-1"],
    "squeeze": [],
    "transpose": [],
    "expand": ["--shape", "1"],
    "slice": ["--starts", "0", "--ends", "1", "--axes", "0"],
    "tile": ["--repeats", "1,1,1,1"],
    "depth-to-space": ["--blocksize", "2"],
    "space-to-depth": ["--blocksize", "2"],
}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("stdin")
    a = random_array(np.random.default_rng(14), SHAPE, "float32")
    np.save(folder / "x.npy", a)
    return folder, (folder / "x.npy").read_bytes()


def one_line(stderr: bytes) -> str:
    lines = stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("onnxop: error: "), lines
    return lines[0][len("onnxop: error: "):]


def feed(argv, stdin: bytes, cwd):
    return subprocess.run([*ONNXOP, *argv], input=stdin, capture_output=True, cwd=cwd, env=ENV, timeout=300)


@pytest.mark.parametrize("command", [*COMMANDS, "show", "run"])
@pytest.mark.parametrize("damage", ["truncated", "trailing"])
def test_a_damaged_stream_is_refused(data, tmp_path, command, damage, capsys, monkeypatch):
    def in_process(argv, stream, folder):
        monkeypatch.chdir(folder)
        monkeypatch.setenv("ONNXOP_BACKEND", ENV["ONNXOP_BACKEND"])
        monkeypatch.setattr(sys, "stdin", FakeStdin(stream))
        code, out, err = cli(capsys, *argv)
        assert out == ""
        return subprocess.CompletedProcess(argv, code, out.encode(), err.encode())

    _refused(data, tmp_path, command, damage, to_file=True, run=in_process)


PRINTING = [(command, damage) for damage in ("truncated", "trailing") for command in ("slice", "identity", "run")]


@pytest.fixture(scope="module")
def printed(data, tmp_path_factory) -> tuple[dict, object]:
    """Each PRINTING case's command (no ``-o``: it prints), all in one process (tests/commands.py),
    each damaged stream on a real pipe: what the command prints and exits with is under test."""
    folder = tmp_path_factory.mktemp("printing")
    lines = [_command(data, folder, command, damage, to_file=False) for command, damage in PRINTING]
    done = run_commands([(data[0], argv, stream) for argv, stream in lines], text=False, env=ENV)
    return dict(zip(PRINTING, done)), folder


@pytest.mark.parametrize("command, damage", PRINTING)
def test_a_damaged_stream_is_refused_when_printing(printed, command, damage):
    done, folder = printed
    _check_refused(done[command, damage], folder, damage)


def _command(data, tmp_path, command, damage, *, to_file) -> tuple[list[str], bytes]:
    """The command line reading the damaged stream, and the stream."""
    folder, good = data
    stream = good[: len(good) // 3] if damage == "truncated" else good + b"garbage"
    if command == "run":
        model = _model(tmp_path)
        argv = ["run", str(model), "-"]
    else:
        argv = [command, *COMMANDS.get(command, []), "-"]
    if to_file and command != "show":
        argv += ["-o", str(tmp_path / "out.npy")]
    return argv, stream


def _refused(data, tmp_path, command, damage, *, to_file, run=None):
    argv, stream = _command(data, tmp_path, command, damage, to_file=to_file)
    _check_refused((run or feed)(argv, stream, data[0]), tmp_path, damage)


def _check_refused(done, tmp_path, damage):
    assert done.returncode == 2, done.stderr
    message = one_line(done.stderr)
    if damage == "truncated":
        assert "stream is truncated" in message, message
    else:
        assert "7 bytes follow the .npy data" in message, message
    assert not (tmp_path / "out.npy").exists()  # no output kept from a bad input
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


@pytest.mark.parametrize("command", COMMANDS)
def test_the_feeder_is_never_cut_off(data, tmp_path, command):
    """`cat x.npy | onnxop CMD -`: both exit 0, whatever part of the input
    CMD needs (a reader that closed its stdin early would end cat by
    SIGPIPE, exit 141, as it would an onnxop writing -o -). Slice, which
    needs only the front, is fed by `onnxop identity x.npy -o -`: the
    512 KiB writer into a pipe is onnxop's own once."""
    folder, _ = data
    feeder = f"{' '.join(ONNXOP)} identity x.npy -o - -q" if command == "slice" else "cat x.npy"
    script = (
        f"{feeder} | "
        f"{' '.join(ONNXOP)} {command} {' '.join(COMMANDS[command])} - -o {tmp_path / 'out.npy'} -q; "
        'echo "${PIPESTATUS[*]}"'
    )
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=folder, env=ENV, timeout=300)
    assert done.stdout == "0 0\n", done.stderr
    assert done.stderr == ""
    assert (tmp_path / "out.npy").exists()


def test_slice_of_the_front_is_right_and_reads_everything(data, tmp_path):
    folder, good = data
    done = feed(["slice", "--starts", "0", "--ends", "1", "--axes", "0", "-", "-o", str(tmp_path / "s.npy")], good, folder)
    assert done.returncode == 0, done.stderr
    a = np.load(folder / "x.npy")
    assert np.load(tmp_path / "s.npy").tobytes() == a[:1].tobytes()


def _model(folder):
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("Identity", ["x"], ["y"])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(SHAPE))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(SHAPE))],
    )
    path = folder / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path
