"""Batches planned before anything is written,
run-time failures that say what was written, stdio closed or broken, options
given twice, and the smaller messages (exact bytes, out of memory, no adapter).

Refusals are checked for their outcome AND for what they left: the folder's
files byte for byte, no output, no temporary file. stdio cases run as real
processes under real shell redirections (``bash -c``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import cli, error_of, random_array
from onnxop_cli.errors import ExitCode

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True

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


# ------------------------------------------------------------ planned batches


def test_three_inputs_with_one_name_are_refused_in_a_real_process(tree):
    before = snapshot(tree)
    done = sh("onnxop flatten p/input_0.npy q/input_0.npy r/input_0.npy -o out", tree)
    assert done.returncode == 2 and done.stdout == ""
    assert one_line(done.stderr) == (
        "out/input_0.npy: the results of p/input_0.npy, q/input_0.npy and r/input_0.npy would all be "
        "written here; give --parents to keep same-named inputs apart"
    )
    assert snapshot(tree) == before


@pytest.mark.parametrize("second", ["a.npy", "./a.npy", "p/../a.npy", "SELF"])
def test_one_file_given_twice_is_refused(tree, capsys, second):
    second = str(tree / "a.npy") if second == "SELF" else second
    message = refused(capsys, tree, "flatten", "a.npy", second, "-o", "out")
    assert message == "out/a.npy: the input a.npy is given 2 times; give it once"


def test_one_file_given_twice_into_its_own_folder_is_refused(tree, capsys):
    assert "given 2 times" in refused(capsys, tree, "flatten", "a.npy", "a.npy", "-o", ".")


def test_an_output_that_is_a_later_input_is_refused(tree, capsys):
    """The issue's case: job 1 would write x/a.npy, job 2's input."""
    (tree / "x").mkdir()
    np.save(tree / "x" / "a.npy", np.arange(4.0))
    message = refused(capsys, tree, "flatten", "a.npy", "x/a.npy", "-o", "x")
    assert message.startswith("x/a.npy: the results of a.npy and x/a.npy would all be written here")


def test_an_output_that_is_another_input_through_a_symlink_is_refused(tree, capsys):
    (tree / "x").mkdir()
    np.save(tree / "x" / "a.npy", np.arange(4.0))
    os.symlink("x/a.npy", tree / "link.npy")
    message = refused(capsys, tree, "flatten", "a.npy", "link.npy", "-o", "x")
    assert message == (
        "x/a.npy: the result of a.npy would replace link.npy, another input of this batch; write to another folder"
    )


def test_an_output_that_is_a_symlink_to_another_input_is_refused(tree, capsys):
    (tree / "x").mkdir()
    os.symlink("../b.npy", tree / "x" / "a.npy")
    message = refused(capsys, tree, "flatten", "a.npy", "b.npy", "-o", "x")
    assert "would replace b.npy, another input of this batch" in message


def test_an_output_that_is_a_hard_link_of_another_input_is_refused(tree, capsys):
    (tree / "x").mkdir()
    os.link(tree / "b.npy", tree / "x" / "a.npy")
    message = refused(capsys, tree, "flatten", "a.npy", "b.npy", "-o", "x")
    assert "would replace b.npy" in message


def test_an_output_folder_spelled_another_way_is_the_same_folder(tree, capsys):
    """alias/../x is x, as the kernel resolves it (alias is a symlink to p/);
    x/b.npy is c.npy's target."""
    os.symlink("p", tree / "alias")
    (tree / "x").mkdir()
    np.save(tree / "x" / "b.npy", np.arange(4.0))
    os.symlink("x/b.npy", tree / "c.npy")
    message = refused(capsys, tree, "flatten", "b.npy", "c.npy", "-o", "alias/../x")
    assert message == (
        "alias/../x/b.npy: the result of b.npy would replace c.npy, another input of this batch; "
        "write to another folder"
    )


def test_an_output_may_replace_its_own_input_through_a_symlink(backend, tree, capsys):
    (tree / "x").mkdir()
    want = random_array(np.random.default_rng(2), (2, 5), "float64")
    np.save(tree / "x" / "c.npy", want)
    os.symlink("x/c.npy", tree / "c.npy")
    code, _, err = cli(capsys, "flatten", "c.npy", "b.npy", "--axis", "0", "-o", "x", "-b", backend)
    assert code == 0, err
    assert np.load(tree / "x" / "c.npy").tobytes() == want.tobytes()


def test_stdin_into_a_folder_is_refused(tree):
    done = sh("onnxop flatten - -o out < a.npy", tree)
    assert done.returncode == 2
    assert one_line(done.stderr) == "out: a folder takes each input's name, and stdin has none; give -o FILE"
    assert os.listdir(tree / "out") == []


def test_outputs_may_replace_their_own_inputs(backend, tree, capsys):
    """-o . in the inputs' folder: each job replaces its own input, atomically."""
    a, b = np.load(tree / "a.npy"), np.load(tree / "b.npy")
    code, out, err = cli(capsys, "flatten", "a.npy", "b.npy", "--axis", "0", "-o", ".", "-b", backend)
    assert code == 0, err
    assert np.load(tree / "a.npy").tobytes() == a.tobytes() and np.load(tree / "a.npy").shape == (1, 24)
    assert np.load(tree / "b.npy").tobytes() == b.tobytes() and np.load(tree / "b.npy").shape == (1, 15)
    assert not [p for p in os.listdir(tree) if p.startswith(".")]


def test_a_later_bad_input_refuses_the_whole_batch(backend, tree, capsys):
    """The shape rule of the last input is checked before the first is written."""
    np.save(tree / "v.npy", np.arange(3, dtype=np.int8))
    message = refused(capsys, tree, "flatten", "a.npy", "b.npy", "v.npy", "--axis", "2", "-o", "out", "-b", backend)
    assert message.startswith("v.npy: Flatten: axis 2 is out of range [-1, 1]")


def test_a_later_bad_format_refuses_the_whole_batch(backend, tree, capsys):
    (tree / "c.txt").write_bytes(b"not a tensor")
    assert "unknown format" in refused(capsys, tree, "flatten", "a.npy", "c.txt", "-o", "out", "-b", backend)


def test_a_later_type_the_opset_refuses_stops_the_batch_up_front(backend, tree):
    """Issue item 9: what the third job cannot do is known before the first is
    written. (The example of the issue, a Fortran tensor over one binding, is
    no refusal any more: the gather kernel tiles it.)"""
    import ml_dtypes
    from onnx import numpy_helper

    values = np.array([[0.5, -1.25, 3.0]], dtype=ml_dtypes.bfloat16)
    (tree / "h.pb").write_bytes(numpy_helper.from_array(values, "h").SerializeToString())
    before = snapshot(tree / "out")
    done = sh("onnxop flatten a.npy b.npy h.pb -o out --json --opset 11", tree, backend)
    assert done.returncode == 2, done.stderr
    message = one_line(done.stderr)
    assert message == (
        "h.pb: Flatten: opset 11 (Flatten-11) does not allow bfloat16; bfloat16 was added in Flatten-13 (opset 13)"
    )
    assert json.loads(done.stdout)["message"] == message
    assert snapshot(tree / "out") == before == {}


# ------------------------------------------------------------ --parents


def test_parents_keeps_same_named_inputs_apart(backend, tree, capsys):
    (tree / "p" / "deep" / "er").mkdir(parents=True)
    np.save(tree / "p" / "deep" / "er" / "input_0.npy", np.arange(6, dtype=np.int32).reshape(3, 2))
    inputs = ["p/input_0.npy", "q/input_0.npy", "./r/input_0.npy", "p/deep/er/input_0.npy"]
    code, out, err = cli(capsys, "flatten", *inputs, "--parents", "-o", "out", "-b", backend)
    assert code == 0, err
    for src in inputs:
        got, want = np.load(tree / "out" / src), np.load(tree / src)
        assert got.shape == want.reshape(want.shape[0], -1).shape and got.tobytes() == want.tobytes()
    assert out.count("wrote out/") == 4 and "wrote out/p/deep/er/input_0.npy" in out


def test_parents_drops_a_leading_slash(backend, tree, capsys):
    src = tree / "a.npy"
    code, out, err = cli(capsys, "unsqueeze", src, "--axes", "0", "--parents", "-o", "out", "-b", backend)
    assert code == 0, err
    written = tree / "out" / src.relative_to("/")
    assert np.load(written).tobytes() == np.load(src).tobytes()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["../x/a.npy"], "../x/a.npy: --parents cannot mirror a path with '..'; run onnxop from a folder above the input"),
        (["p/../a.npy"], "p/../a.npy: --parents cannot mirror a path with '..'; run onnxop from a folder above the input"),
        (["a.npy", "-o", "out/b.npy"], "out/b.npy: with --parents, -o must be an existing folder"),
        (["a.npy", "-o", "-"], "--parents mirrors input paths under a folder; give -o FOLDER"),
    ],
)
def test_parents_refusals_write_nothing(tree, capsys, argv, message):
    argv = argv if "-o" in argv else [*argv, "-o", "out"]
    assert refused(capsys, tree, "flatten", *argv, "--parents") == message


def test_parents_makes_no_folder_when_the_plan_is_refused(backend, tree, capsys):
    np.save(tree / "q" / "v.npy", np.arange(3, dtype=np.int8))
    message = refused(
        capsys, tree, "flatten", "p/input_0.npy", "q/v.npy", "--axis", "3", "--parents", "-o", "out", "-b", backend
    )
    assert message.startswith("q/v.npy: Flatten: axis 3 is out of range")
    assert os.listdir(tree / "out") == []


def test_parents_refuses_a_file_where_a_folder_would_go(tree, capsys):
    (tree / "out" / "p").write_bytes(b"in the way")
    assert "out/p is not a folder" in refused(capsys, tree, "flatten", "p/input_0.npy", "--parents", "-o", "out")


# ------------------------------------------------------------ run-time failures


def test_a_full_disk_mid_batch_lists_what_was_written(backend, tree):
    """ulimit -f: writing the third output fails with EFBIG, a real write error."""
    np.save(tree / "big.npy", np.arange(5000, dtype=np.float32))
    cmd = "ulimit -f 4; onnxop flatten a.npy b.npy big.npy p/input_0.npy --axis 0 -o out"
    done = sh(cmd + " --json", tree, backend)
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert doc["written"] == ["out/a.npy", "out/b.npy"]
    assert doc["failed"] == {"input": "big.npy", "output": "out/big.npy"}
    assert doc["exit_code"] == 1 and doc["status"] == "error"
    assert one_line(done.stderr) == doc["message"] == (
        "out/big.npy: cannot write: File too large (batch stopped at out/big.npy, not written; "
        "written before it: out/a.npy, out/b.npy)"
    )
    assert sorted(os.listdir(tree / "out")) == ["a.npy", "b.npy"]  # no temporary file, nothing after
    assert np.load(tree / "out" / "b.npy").tobytes() == np.load(tree / "b.npy").tobytes()

    for f in ("a.npy", "b.npy"):
        (tree / "out" / f).unlink()
    done = sh(cmd, tree, backend)
    assert done.returncode == 1
    assert done.stdout.count(", wrote out/") == 2 and "written before it: out/a.npy, out/b.npy" in done.stderr


def test_a_signal_between_jobs_stops_the_batch(backend, tree, capsys, monkeypatch):
    """A real SIGTERM arriving as the first output is committed: that output
    is in place, the batch stops before the second job, exit 143."""
    from onnxop_cli.core import signals

    real_commit = signals.commit

    def commit_and_get_killed():
        real_commit()
        os.kill(os.getpid(), signal.SIGTERM)

    old = {s: signal.getsignal(s) for s in signals.TERMINATING}
    signals.install()
    monkeypatch.setattr(signals, "commit", commit_and_get_killed)
    try:
        code, out, err = cli(capsys, "flatten", "a.npy", "b.npy", "-o", "out", "--json", "-b", backend)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        signals.reset()
    assert code == 143
    doc = json.loads(out)
    assert doc["written"] == ["out/a.npy"] and doc["failed"] == {"input": "b.npy", "output": "out/b.npy"}
    assert one_line(err).startswith("interrupted by SIGTERM (batch stopped at out/b.npy")
    assert os.listdir(tree / "out") == ["a.npy"]


def test_out_of_memory_is_named(backend, tree, capsys, monkeypatch):
    from onnxop_cli.core import apply as core

    def no_memory(*a, **kw):
        raise MemoryError("Unable to allocate 78.2 GiB for an array with shape (10,) and data type <U2000000")

    monkeypatch.setattr(core, "apply", no_memory)
    code, out, err = cli(capsys, "flatten", "a.npy", "-o", "out/a.npy", "-b", backend)
    assert code == ExitCode.ERROR
    assert one_line(err) == "out of memory: Unable to allocate 78.2 GiB for an array with shape (10,) and data type <U2000000"
    assert os.listdir(tree / "out") == []


# ------------------------------------------------------------ stdio


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


# ------------------------------------------------------------ options given twice


def test_a_list_option_given_twice_accumulates(backend, tree, capsys):
    code, _, err = cli(capsys, "unsqueeze", "a.npy", "--axes", "0", "--axes", "-1", "-o", "out/one.npy", "-b", backend)
    assert code == 0, err
    code, _, err = cli(capsys, "unsqueeze", "a.npy", "--axes", "0,-1", "-o", "out/two.npy", "-b", backend)
    assert code == 0, err
    one, two = np.load(tree / "out" / "one.npy"), np.load(tree / "out" / "two.npy")
    assert one.shape == two.shape == (1, 2, 3, 4, 1) and one.tobytes() == two.tobytes()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["flatten", "a.npy", "--axis", "1", "--axis", "2"], "--axis given twice, as 1 and 2; give it once"),
        (["flatten", "a.npy", "-a", "1", "--axis", "2"], "--axis given twice, as 1 and 2; give it once"),
        (["flatten", "a.npy", "-o", "out/x.npy", "-o", "out/y.npy"], "--output given twice, as out/x.npy and out/y.npy; give it once"),
        (["flatten", "a.npy", "--opset", "13", "--opset", "11"], "--opset given twice, as 13 and 11; give it once"),
        (["flatten", "a.npy", "-m", "x", "--member", "y"], "--member given twice, as x and y; give it once"),
        (["flatten", "a.npy", "-b", "gl", "-b", "vulkan"], "--backend given twice, as gl and vulkan; give it once"),
        (["--backend", "gl", "flatten", "a.npy", "--backend", "vulkan"], "--backend given twice, as gl and vulkan; give it once"),
        (["--backend", "gl", "--backend", "vulkan", "info"], "--backend given twice, as gl and vulkan; give it once"),
        (["bench", "--repeats", "1", "--repeats", "2"], "--repeats given twice, as 1 and 2; give it once"),
        (["doc-examples", "-n", "a", "--name", "b"], "--name given twice, as a and b; give it once"),
    ],
)
def test_a_single_value_given_twice_differently_is_refused(tree, capsys, argv, message):
    assert refused(capsys, tree, *argv) == message


def test_the_same_value_twice_is_fine(backend, tree, capsys):
    code, _, err = cli(
        capsys, "--backend", backend, "flatten", "a.npy", "--axis", "2", "-a", "2", "-o", "out/o.npy",
        "-o", "out/o.npy", "--backend", backend,
    )
    assert code == 0, err
    assert np.load(tree / "out" / "o.npy").shape == (6, 4)


def test_the_environment_does_not_count_as_a_second_backend(backend, tree, capsys, monkeypatch):
    other = "gl" if backend == "vulkan" else "vulkan"
    monkeypatch.setenv("ONNXOP_BACKEND", other)
    code, out, err = cli(capsys, "flatten", "a.npy", "-o", "out/o.npy", "--backend", backend, "--json")
    assert code == 0, err
    assert json.loads(out)["backend"] == backend


# ------------------------------------------------------------ smaller messages


def test_pb_size_message_gives_the_limit_in_bytes(tmp_path):
    from onnxop_cli import io
    from onnxop_cli.io.tensorproto import PROTOBUF_LIMIT
    from onnxop_cli.core.tensor import DTYPES

    uint8 = next(d for d in DTYPES if d.name == "uint8")
    with pytest.raises(Exception) as e:
        io.check_output(tmp_path / "o.pb", uint8, nbytes=PROTOBUF_LIMIT + 1)
    assert f"{PROTOBUF_LIMIT + 1} bytes do not fit a .pb (at most {PROTOBUF_LIMIT} bytes of data" in str(e.value)


@pytest.mark.skipif(sys.platform == "darwin", reason="Metal exists there")
def test_a_backend_without_adapters_lists_the_other_backends(tree):
    done = sh("onnxop flatten a.npy --backend metal -o out/m.npy", tree)
    assert done.returncode == 1
    message = one_line(done.stderr)
    assert message.startswith("no metal WebGPU adapter found (adapters seen: none; other backends have: ")
    assert "Vulkan" in message
    assert os.listdir(tree / "out") == []
