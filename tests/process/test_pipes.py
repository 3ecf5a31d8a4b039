"""``-`` as input (a .npy stream on stdin) and as output (-o -: .npy on
stdout, every human line on stderr): real pipes between processes, and every
refusal in-process."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from conftest import cli, random_array
from onnxop_cli.cli.main import run
from onnxop_cli.errors import ExitCode, InputError, UsageError
from onnxop_cli.io import stdio

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True

ONNXOP = [sys.executable, "-m", "onnxop_cli"]


def npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def env_for(backend: str) -> dict[str, str]:
    return {**os.environ, "ONNXOP_BACKEND": backend}


# ----------------------------------------------------------------- real pipes


def test_pipe_between_two_processes(backend, tmp_path, rng):
    a = random_array(rng, (2, 3, 4, 5), "float32")
    np.save(tmp_path / "a.npy", a)
    with open(tmp_path / "a.npy", "rb") as stdin:
        first = subprocess.Popen(
            [*ONNXOP, "flatten", "-", "--axis", "1", "-o", "-"],
            stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, env=env_for(backend),
        )
        second = subprocess.run(
            [*ONNXOP, "unsqueeze", "-", "--axes", "0", "-o", "b.npy"],
            stdin=first.stdout, capture_output=True, text=True, cwd=tmp_path, env=env_for(backend),
        )
        first.stdout.close()
        first_err = first.stderr.read().decode()
        assert first.wait() == 0, first_err
    assert second.returncode == 0, second.stderr
    b = np.load(tmp_path / "b.npy")
    assert b.shape == (1, 2, 60) and b.tobytes() == a.tobytes()
    assert first_err == "Flatten: stdin (2, 3, 4, 5) float32 -> output (2, 60) float32, wrote stdout\n"
    assert second.stdout == "Unsqueeze: stdin (2, 60) float32 -> b (1, 2, 60) float32, wrote b.npy\n"
    assert second.stderr == ""


def test_shell_pipeline_prints_in_order(backend, tmp_path, rng):
    """The second process waits for the end of its stdin (one .npy, nothing
    after it), so the first one's stderr line always comes first."""
    np.save(tmp_path / "a.npy", random_array(rng, (2, 3, 4, 5), "int8"))
    py = sys.executable
    line = f"{py} -m onnxop_cli flatten - -o - < a.npy | {py} -m onnxop_cli show -"
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", "{ " + line + "; } 2>&1"], capture_output=True, text=True, cwd=tmp_path,
        env=env_for(backend),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Flatten: stdin (2, 3, 4, 5) int8 -> output (2, 60) int8, wrote stdout"
    assert lines[1] == "stdin:"
    assert lines[2].startswith("  stdin: shape=(2, 60), dtype=int8  (min=")


def test_stdout_carries_exactly_one_npy(backend, tmp_path, rng):
    x = random_array(rng, (3, 4, 5), "float64")
    np.save(tmp_path / "x.npy", x)
    done = subprocess.run(
        [*ONNXOP, "unsqueeze", "x.npy", "--axes", "2,4,5", "-o", "-"],
        capture_output=True, cwd=tmp_path, env=env_for(backend),
    )
    assert done.returncode == 0, done.stderr
    y = np.load(io.BytesIO(done.stdout))
    assert y.shape == (3, 4, 1, 5, 1, 1) and y.tobytes() == x.tobytes()
    assert done.stdout == npy_bytes(np.expand_dims(x, (2, 4, 5)))  # header and data, nothing else
    assert done.stderr.decode() == "Unsqueeze: x (3, 4, 5) float64 -> expanded (3, 4, 1, 5, 1, 1) float64, wrote stdout\n"


def test_quiet_pipe_writes_nothing_but_the_tensor(backend, tmp_path, rng):
    x = random_array(rng, (4, 6), "uint16")
    done = subprocess.run(
        [*ONNXOP, "flatten", "-", "--axis", "0", "-o", "-", "--quiet"],
        input=npy_bytes(x), capture_output=True, cwd=tmp_path, env=env_for(backend),
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""
    assert done.stdout == npy_bytes(x.reshape(1, 24))


# ----------------------------------------------------------------- in-process


class FakeStdin:
    """sys.stdin with a binary buffer, terminal or not."""

    def __init__(self, data: bytes, tty: bool = False) -> None:
        self.buffer = io.BufferedReader(io.BytesIO(data))
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def test_stdin_is_read_by_print_mode(backend, cwd, capsys, monkeypatch):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    monkeypatch.setattr(sys, "stdin", FakeStdin(npy_bytes(x)))
    code, out, err = cli(capsys, "unsqueeze", "-", "--axes", "0,2", "-b", backend)
    assert code == 0, err
    assert out == (
        "Node:\n  Unsqueeze(stdin, axes) -> (expanded)\n\n"
        "Inputs:\n  stdin: shape=(2, 3), dtype=float32\n    [[0., 1., 2.],\n     [3., 4., 5.]]\n"
        "  axes: shape=(2,), dtype=int64\n    [0, 2]\n\n"
        "Outputs:\n  expanded: shape=(1, 2, 1, 3), dtype=float32\n"
        "    [[[[0., 1., 2.]],\n\n      [[3., 4., 5.]]]]\n"
    )


def test_stdin_to_a_file(backend, cwd, capsys, monkeypatch, rng):
    x = random_array(rng, (5, 1, 7), "int32")
    monkeypatch.setattr(sys, "stdin", FakeStdin(npy_bytes(x)))
    code, out, err = cli(capsys, "flatten", "-", "-o", "y.npy", "-b", backend)
    assert code == 0, err
    assert np.load(cwd / "y.npy").tobytes() == x.tobytes()
    assert out == "Flatten: stdin (5, 1, 7) int32 -> y (5, 7) int32, wrote y.npy\n"


@pytest.mark.parametrize(
    "argv,message",
    [
        (["flatten", "-", "a.npy"], "-: stdin must be the only input (got 2 inputs)"),
        (["flatten", "a.npy", "a.npy", "-o", "-"], "-o -: stdout takes one tensor, got 2 inputs; use -o FOLDER"),
        (["flatten", "a.npy", "-o", "-", "--json"], "-o - and --json both write to stdout; write the tensor to a file, or drop --json"),
        (["show", "-", "-"], "-: stdin can be read once; give - only once"),
        (["run", "cat.onnx", "-"], "the model has 2 input(s) (a, b), 1 file(s) were given (stdin holds one tensor; "
                                   "an .npz there gives each input the member of its name)"),
    ],
)
def test_stdio_usage_errors(cwd, capsys, monkeypatch, argv, message):
    np.save(cwd / "a.npy", np.ones((2, 2), np.float32))
    concat = helper.make_node("Concat", ["a", "b"], ["c"], axis=0)
    ins = [helper.make_tensor_value_info(n, onnx.TensorProto.DOUBLE, [3]) for n in "ab"]
    graph = helper.make_graph([concat], "cat", ins, [helper.make_tensor_value_info("c", onnx.TensorProto.DOUBLE, [6])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), cwd / "cat.onnx")
    monkeypatch.setattr(sys, "stdin", FakeStdin(npy_bytes(np.ones(3))))
    code, out, err = cli(capsys, *argv)
    assert code == ExitCode.USAGE
    assert err == f"onnxop: error: {message}\n"
    if "--json" not in argv:
        assert out == ""


@pytest.mark.parametrize("argv", [["-", "-"], ["--input", "b=-", "--input", "a=-"], ["-"], ["-", "-", "-m", "a"],
                                  ["-", "-", "--others", "onnxruntime", "--verify"]])
def test_stdin_feeds_several_graph_inputs_as_a_file_does(cwd, capsys, monkeypatch, argv):
    """stdin is read once, so '-' was refused for a second input ('stdin can be read once; give - for one
    input only'), where the file it stands for works: an .npz gives each input the member of its name, given
    alone for every input or for each; one tensor (or --member's) is given to each input it is given for."""
    concat = helper.make_node("Concat", ["a", "b"], ["c"], axis=0)
    ins = [helper.make_tensor_value_info(n, onnx.TensorProto.DOUBLE, [3]) for n in "ab"]
    graph = helper.make_graph([concat], "cat", ins, [helper.make_tensor_value_info("c", onnx.TensorProto.DOUBLE, [6])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), cwd / "cat.onnx")
    a, b = np.array([1.0, -0.0, 2.0]), np.array([3.0, 4.0, np.nan])
    buffer = io.BytesIO()
    np.savez(buffer, b=b, a=a)
    monkeypatch.setattr(sys, "stdin", FakeStdin(buffer.getvalue()))
    code, out, err = cli(capsys, "run", "cat.onnx", *argv, "-o", "c.npy")
    assert code == 0, err
    want = np.concatenate([a, a] if "-m" in argv else [a, b])
    assert np.load(cwd / "c.npy").tobytes() == want.tobytes()
    if len(argv) == 2:  # one tensor on stdin, for both inputs
        monkeypatch.setattr(sys, "stdin", FakeStdin(npy_bytes(b)))
        code, out, err = cli(capsys, "run", "cat.onnx", *argv, "-o", "d.npy")
        assert code == 0, err
        assert np.load(cwd / "d.npy").tobytes() == np.concatenate([b, b]).tobytes()


def test_stdin_from_a_terminal_is_refused(cwd, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", FakeStdin(b"", tty=True))
    code, _, err = cli(capsys, "flatten", "-")
    assert code == ExitCode.USAGE
    assert err == "onnxop: error: -: stdin is a terminal; pipe a .npy, .npz or .pb (TensorProto) in (example: onnxop flatten - < a.npy)\n"


def test_npy_onto_a_terminal_is_refused(cwd, capsys, monkeypatch):
    np.save(cwd / "a.npy", np.ones((2, 2), np.float32))
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, err = cli(capsys, "flatten", "a.npy", "-o", "-")
    assert code == ExitCode.USAGE
    assert err.startswith("onnxop: error: -o -: stdout is a terminal; redirect it")
    assert out == ""


@pytest.mark.parametrize(
    "make,message",
    [
        (lambda good: b"", "-: stdin is empty; pipe a .npy, .npz or .pb (TensorProto) in (example: onnxop flatten - < a.npy)"),
        (lambda good: b"hello, not a tensor", "-: stdin is not a .npy, .npz or .pb (ONNX TensorProto) stream"),
        (lambda good: good[:-3], "-: stream is truncated: expected 96 data bytes"),
        (lambda good: good + b"\x00" * 5, "-: 5 bytes follow the .npy data; pipe exactly one .npy file"),
        (lambda good: good + good, "-: 224 bytes follow the .npy data; pipe exactly one .npy file"),
    ],
    ids=["empty", "garbage", "truncated", "trailing", "two-files"],
)
def test_bad_stdin_leaves_no_output(backend, cwd, capsys, monkeypatch, make, message):
    good = npy_bytes(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert len(good) == 128 + 96
    monkeypatch.setattr(sys, "stdin", FakeStdin(make(good)))
    code, out, err = cli(capsys, "flatten", "-", "-o", "y.npy", "-b", backend)
    assert code == ExitCode.USAGE
    assert err.startswith(f"onnxop: error: {message}") and err.count("\n") == 1
    assert not (cwd / "y.npy").exists()
    assert [p.name for p in cwd.iterdir()] == []


def test_pickled_stdin_is_refused_without_unpickling(cwd, capsys, monkeypatch):
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    monkeypatch.setattr(sys, "stdin", FakeStdin(buf.getvalue()))
    code, _, err = cli(capsys, "show", "-")
    assert code == ExitCode.USAGE
    assert err == "onnxop: error: -: dtype object holds Python objects; onnxop never unpickles\n"


# ----------------------------------------------------------------- the reader


class ForwardOnly(io.RawIOBase):
    """A pipe: readable front to back, no seek, no tell, counts what was read."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)
        self.consumed = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = self._data.readinto(b)
        self.consumed += n
        return n


def test_stream_reader_parses_the_header_and_leaves_the_data_for_later(rng):
    x = random_array(rng, (64, 33), "float16")
    raw = npy_bytes(x)
    pipe = ForwardOnly(raw)
    tensor = stdio.read_npy_stream(pipe, isatty=False)
    header = len(raw) - x.nbytes
    assert pipe.consumed == header  # nothing of the data was read yet
    assert tensor.shape == (64, 33) and tensor.dtype.name == "float16" and tensor.name == "stdin"
    out = bytearray(x.nbytes)
    view = memoryview(out)
    tensor.data.readinto(0, view[:1000])
    assert pipe.consumed == header + 1000  # read in the chunks asked for
    tensor.data.readinto(1000, view[1000:])
    assert bytes(out) == x.tobytes()
    with pytest.raises(RuntimeError, match="front to back"):
        tensor.data.readinto(0, view[:10])


def test_stream_reader_follows_the_file_reader():
    """Big-endian streams are marked for the GPU byte swap, as files are;
    what files refuse, streams refuse."""
    tensor = stdio.read_npy_stream(ForwardOnly(npy_bytes(np.arange(3, dtype=">i4"))), isatty=False)
    assert tensor.byteswap and tensor.dtype.name == "int32"
    with pytest.raises(InputError, match="onnxop never unpickles"):
        stdio.read_npy_stream(ForwardOnly(npy_bytes(np.array([{}], dtype=object))), isatty=False)


def test_empty_tensor_still_checks_the_end_of_the_stream():
    raw = npy_bytes(np.zeros((0, 3), np.float32))
    assert stdio.read_npy_stream(ForwardOnly(raw), isatty=False).nbytes == 0
    with pytest.raises(InputError, match="1 bytes follow the .npy data"):
        stdio.read_npy_stream(ForwardOnly(raw + b"x"), isatty=False)


def test_stdout_check_and_writer():
    with pytest.raises(UsageError, match="stdout is a terminal"):
        stdio.check_stdout(isatty=True)
    stdio.check_stdout(isatty=False)
    from onnxop_cli.core.tensor import dtype_by_name

    buf = io.BytesIO()
    data = np.arange(6, dtype=np.int16).reshape(2, 3)
    with stdio.stdout_writer(stream=buf) as writer, writer.tensor("y", (2, 3), dtype_by_name("int16")) as sink:
        sink(memoryview(data.tobytes()))
    assert buf.getvalue() == npy_bytes(data)
    assert stdio.is_stdio("-") and stdio.is_stdio(Path("-")) and not stdio.is_stdio("a.npy")
    assert not stdio.is_stdio(None)


def test_a_reader_that_goes_away_ends_the_run_quietly(cwd, capsys, monkeypatch):
    """onnxop show a.npy | head -1: when the reader has gone, writing to stdout
    raises BrokenPipeError; onnxop stops with exit 141 (as cat) and no message
    (tests/process/test_pipe_closed.py does it with real pipes)."""
    np.save(cwd / "a.npy", np.arange(10, dtype=np.int32))

    def gone(text):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys.stdout, "write", gone)
    code = run(["show", "a.npy"])
    monkeypatch.undo()
    _, err = capsys.readouterr()
    assert code == ExitCode.READER_LEFT == 141
    assert err == ""
