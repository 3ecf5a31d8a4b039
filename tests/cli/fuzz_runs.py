"""Running one fuzz case of tests/cli/test_fuzz.py and checking the rules its
docstring states: onnxop in-process (in a thread) or, for one case in
PROCESS_SHARE, as a real process killed when it hangs; the output read back
by numpy or onnx, never by onnxop."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import currently_in_test_context, event
from onnx import TensorProto, numpy_helper

from onnxop_cli.cli.main import run
from references import same_bits

TIMEOUT = 60  # seconds for one run: longer is a hang
PROCESS_SHARE = 30  # one case in this many runs as a separate process (a few per test in the default run)
SECRET = b"SECRET!!" * 4  # the file outside the folder; must never show up in an output


@dataclass
class Outcome:
    code: int
    out: str
    err: str


def run_cli(argv: list[str], cwd: Path, stdin: bytes | None = None) -> Outcome:
    """onnxop in-process, in a thread (a hang fails instead of stalling),
    with stdout/stderr captured by hand (capsys is per test, not per example)."""
    import contextlib
    import sys

    from test_pipes import FakeStdin

    result: list = []
    out, err = io.StringIO(), io.StringIO()
    previous, previous_stdin = os.getcwd(), sys.stdin

    def target() -> None:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            result.append(run(argv))

    os.chdir(cwd)
    sys.stdin = FakeStdin(stdin or b"")
    try:
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        thread.join(TIMEOUT)
    finally:
        os.chdir(previous)
        sys.stdin = previous_stdin
    assert not thread.is_alive(), f"onnxop {argv} hung for {TIMEOUT} s"
    return Outcome(result[0] if result else -1, out.getvalue(), err.getvalue())


def run_process(argv: list[str], cwd: Path, stdin: bytes | None = None) -> Outcome:
    """onnxop as a real process, in its own session; killed (SIGKILL, the
    whole group) when it outlives TIMEOUT, which fails the case."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "onnxop_cli", *argv], cwd=cwd, start_new_session=True,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        out, err = proc.communicate(stdin, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"onnxop {argv} hung for {TIMEOUT} s (killed)")
    return Outcome(proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


COMMANDS = [
    (["flatten", "--axis", "0"], "y.npy"),
    (["flatten", "--axis", "0"], "y.pb"),
    (["unsqueeze", "--axes", "0"], "y.npz"),
    (["unsqueeze", "--axes", "0"], None),
    (["show"], None),
]


def expected_shape(command: list[str], shape: tuple[int, ...]) -> tuple[int, ...]:
    if command[0] == "flatten":
        return (1, int(np.prod(shape)))
    if command[0] == "unsqueeze":
        return (1, *shape)
    return shape


def read_output(path: Path) -> dict[str, np.ndarray]:
    """The output, read by numpy or onnx (never onnxop)."""
    if path.suffix == ".npy":
        return {"": np.load(path, allow_pickle=False)}
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    proto = onnx.load_tensor(str(path))
    return {"": onnx_array(proto, path.parent)}


PRECIOUS = b"an existing output, to be replaced only by a complete one"


def check(
    place: Place, inputs: list[str], command: list[str], output: str | None, reference,
    *, stdin: bool = False, existing: bool = False, process: bool | None = None,
) -> None:
    """Run one case and assert the rules in test_fuzz.py's docstring.
    ``reference()`` returns {name: array} or raises if the reference refuses.
    ``stdin``: the input file is piped in as ``-`` instead of named;
    ``existing``: the output file exists before the run (a failure must
    leave it byte for byte); ``process``: run onnxop as its own process
    (None: as ``in_a_process`` chooses)."""
    folder = place.folder
    source = "-" if stdin else inputs[0]
    argv = [command[0], source, *command[1:], *(["-o", output] if output else []), "-b", place.backend]
    if existing and output:
        (folder / output).write_bytes(PRECIOUS)
        inputs = [*inputs, output]
    if process is None:
        process = in_a_process(folder, inputs, argv)
    runner = run_process if process else run_cli
    got = runner(argv, folder, (folder / inputs[0]).read_bytes() if stdin else None)
    if currently_in_test_context():
        event(f"exit {got.code}" + (" (process)" if process else ""))  # --hypothesis-show-statistics: both outcomes must be common
    for text in (got.out, got.err):
        assert "Traceback" not in text and "internal error" not in text, (argv, got)
    names = sorted(p.name for p in folder.iterdir())
    if got.code != 0:
        lines = got.err.splitlines()
        assert got.code == 2, (argv, got)
        assert len(lines) == 1 and lines[0].startswith("onnxop: error: "), (argv, got)
        assert got.out == "", (argv, got)
        assert names == sorted(inputs), (argv, names)
        if existing and output:
            assert (folder / output).read_bytes() == PRECIOUS, argv
        return
    assert got.err == "", (argv, got)
    expected = reference()  # must not raise: onnxop accepted it, so must the reference
    assert SECRET not in got.out.encode("utf-8", "replace"), argv
    if output is None:
        for array in expected.values():
            assert f"shape={expected_shape(command, array.shape)}" in got.out, (argv, got.out)
        return
    assert names == sorted({*inputs, output}), (argv, names)
    assert SECRET not in (folder / output).read_bytes(), argv
    result = read_output(folder / output)
    if inputs[0].endswith(".npz") and output.endswith(".npz"):  # member names are kept
        assert list(result) == list(expected), (argv, list(result), list(expected))
        pairs = [(result[k], expected[k]) for k in expected]
    else:
        assert len(expected) == 1 and len(result) == 1, (argv, list(result), list(expected))
        pairs = [(next(iter(result.values())), next(iter(expected.values())))]
    for got_array, ref in pairs:
        want = np.ascontiguousarray(ref).reshape(expected_shape(command, ref.shape))
        if want.dtype.kind in "OUS":  # ONNX strings are bytes: '<U' and 'S' of the same bytes are equal
            got_array, want = _onnx_strings(got_array), _onnx_strings(want)
        assert same_bits(got_array, want), (argv, got_array, want)


def _onnx_strings(array: np.ndarray) -> np.ndarray:
    out = np.empty(array.shape, dtype=object)
    out.reshape(-1)[:] = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in array.reshape(-1).tolist()]
    return out


@dataclass
class Place:
    folder: Path
    backend: str


def in_a_process(folder: Path, inputs: list[str], argv: list[str]) -> bool:
    """One case in PROCESS_SHARE, chosen by a hash of the input and the
    command: the same case always runs the same way (also when hypothesis
    replays it), and the share does not lean on hypothesis' liking for small
    numbers."""
    import zlib

    return zlib.crc32((folder / inputs[0]).read_bytes() + " ".join(argv).encode()) % PROCESS_SHARE == 0


def onnx_array(proto: TensorProto, folder: Path) -> np.ndarray:
    try:
        return numpy_helper.to_array(proto, base_dir=str(folder))
    except UnicodeDecodeError:
        assert proto.data_type == TensorProto.STRING
        return np.array(list(proto.string_data), dtype=object).reshape(tuple(proto.dims))
