"""Every command that writes a tensor or prints one keeps the same rules on
the standard streams, whichever group it belongs to: a view operator
(transpose, identity), an operator of several tensors (concat, gather,
split) or a whole model (run):

- ``-o -`` refuses a type a .npy cannot describe (bfloat16) in one line,
  writing nothing, and ``--format pb`` streams it; ``--format`` also names
  the format of the files written into ``-o FOLDER``;
- ``-`` reads stdin in any format onnxop reads (.npy, .npz, .pb);
- a reader that leaves (``| head``) ends the run at once, exit 141 and no
  message, when printing (``--full``) as when streaming (``-o -``).

Real processes, real pipes; results exact against numpy. (What a command
writes without a pipe, or from stdin: through onnxop's entry, tests/commands.py.)"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from commands import run_commands
from made_once import made_once

ENV = {**os.environ, "ONNXOP_BACKEND": "vulkan"}
ONNXOP = f"{sys.executable} -m onnxop_cli"

# name -> (the command with {x} for its input, numpy's result for input a)
COMMANDS = {
    "transpose": ("transpose {x}", lambda a: a.T),
    "identity": ("identity {x}", lambda a: a),
    "concat": ("concat {x} --axis 0", lambda a: a),
    "concat-twice": ("concat {x} {x} --axis 1", lambda a: np.concatenate([a, a], axis=1)),
    "gather": ("gather {x} --indices i.npy --axis 1", lambda a: a[:, [2, 0]]),
    "split": ("split {x} --num-outputs 1", lambda a: a),
    "run": ("run model.onnx {x}", lambda a: np.concatenate([a.T, a.T], axis=0)),
}
ONE_INPUT = [c for c in COMMANDS if c != "concat-twice"]  # the commands that can read stdin


def sh(cmd: str, cwd, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, env=ENV, timeout=timeout)


def command(name: str, x: str) -> str:
    return f"{ONNXOP} " + COMMANDS[name][0].format(x=x)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    folder = tmp_path_factory.mktemp("streams")
    a = np.arange(6, dtype=np.float32).reshape(2, 3) / 4 - 0.5
    np.save(folder / "a.npy", a)
    np.savez(folder / "a.npz", a=a)
    (folder / "a.pb").write_bytes(numpy_helper.from_array(a, "a").SerializeToString())
    h = helper.make_tensor("h", TensorProto.BFLOAT16, [2, 3], vals=a.reshape(-1).tolist())
    (folder / "h.pb").write_bytes(h.SerializeToString())
    np.save(folder / "i.npy", np.array([2, 0], dtype=np.int64))
    np.save(folder / "big.npy", np.arange(400 * 400, dtype=np.float32).reshape(400, 400) / 7)  # MBs as text
    # a model of two nodes: through the graph route, whatever becomes of one-node models
    nodes = [helper.make_node("Transpose", ["x"], ["t"]), helper.make_node("Concat", ["t", "t"], ["y"], axis=0)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.UNDEFINED, None)],
                          [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), folder / "model.onnx")
    return folder


@pytest.fixture(scope="module")
def in_one_process(tree, tmp_path_factory) -> dict:
    """The command lines of the tests below (no pipe but stdin's, no redirection), each test's group
    in order, all in one onnxop process (tests/commands.py): what they write is under test, not the
    process. group -> its results; "folders": where "folder"'s commands wrote, a folder each;
    "stdin": each of ONE_INPUT reading a.npz and a.pb on stdin (a real pipe), -o an .npz each:
    (piped, name) -> (the command's result, its output file). Made once in a run."""

    def make() -> dict:
        folders, out = tmp_path_factory.mktemp("folders"), tmp_path_factory.mktemp("from_stdin")
        for name in COMMANDS:
            (folders / name).mkdir()
        lines = {
            "refuses": [COMMANDS[n][0].format(x="h.pb") + " -o -" for n in COMMANDS],
            "alone": [f"--json {COMMANDS[n][0].format(x='a.npy')} -o -" for n in COMMANDS],
            "pb": [COMMANDS[n][0].format(x="h.pb") + " -o - --format pb" for n in COMMANDS],
            "folder": [f"{COMMANDS[n][0].format(x=str(tree / 'a.npy'))} -o {folders / n}/ --format pb"
                       for n in COMMANDS],
        }
        commands = {group: [(tree, shlex.split(c)) for c in group_lines] for group, group_lines in lines.items()}
        cases = [(piped, name) for piped in ("a.npz", "a.pb") for name in ONE_INPUT]
        commands["stdin"] = [(tree, [*shlex.split(COMMANDS[name][0].format(x="-")), "-o", out / f"{name}-{piped}.npz"],
                              (tree / piped).read_bytes())
                             for piped, name in cases]
        done = iter(run_commands([c for group in commands.values() for c in group], text=False, env=ENV))
        found = {group: [next(done) for _ in group_commands] for group, group_commands in commands.items()}
        found["stdin"] = {(piped, name): (d, out / f"{name}-{piped}.npz")
                          for (piped, name), d in zip(cases, found["stdin"], strict=True)}
        found["folders"] = folders
        return found

    return made_once(tmp_path_factory, "stream-writers-in-one-process", make)


def test_stdout_refuses_a_type_numpy_lacks(in_one_process):
    """A .npy stream cannot describe bfloat16: refused before anything is
    written, never a typeless '|V2' array. Each of the 7 COMMANDS."""
    for name, done in zip(COMMANDS, in_one_process["refuses"], strict=True):
        assert done.returncode == 2, (name, done.stderr.decode())
        named = "-o -" if name == "run" else "-"  # run's errors about a path name its option
        assert done.stderr.decode() == (f"onnxop: error: {named}: the .npy format cannot describe bfloat16 "
                                        "(numpy has no such dtype); add --format pb\n"), name
        assert done.stdout == b"", name


def test_stdout_is_the_tensors_alone(in_one_process):
    """-o - and --json would both write to stdout: refused, the stream
    never corrupted by a document after its bytes. Each of the 7 COMMANDS."""
    for name, done in zip(COMMANDS, in_one_process["alone"], strict=True):
        assert done.returncode == 2, name
        assert json.loads(done.stdout)["message"] == ("-o - and --json both write to stdout; write the tensor to a "
                                                      "file, or drop --json")


def test_format_pb_streams_every_type(tree, in_one_process):
    """bfloat16 through each of the 7 COMMANDS as a .pb stream."""
    h = onnx.TensorProto()
    h.ParseFromString((tree / "h.pb").read_bytes())
    for name, done in zip(COMMANDS, in_one_process["pb"], strict=True):
        assert done.returncode == 0, (name, done.stderr.decode())
        proto = onnx.TensorProto()
        proto.ParseFromString(done.stdout)
        assert proto.data_type == TensorProto.BFLOAT16
        want = np.ascontiguousarray(COMMANDS[name][1](numpy_helper.to_array(h)))
        got = numpy_helper.to_array(proto)
        assert got.shape == want.shape and got.tobytes() == want.tobytes(), name


def test_format_names_the_files_written_into_a_folder(tree, in_one_process):
    """--format pb into -o FOLDER/, each of the 7 COMMANDS into its own folder."""
    fmt = "pb"
    for name, done in zip(COMMANDS, in_one_process["folder"], strict=True):
        assert done.returncode == 0, done.stderr.decode()
        out = in_one_process["folders"] / name
        written = sorted(os.listdir(out))
        assert len(written) == 1 and written[0].endswith("." + fmt), written
        got = numpy_helper.to_array(onnx.load_tensor(str(out / written[0])))
        want = np.ascontiguousarray(COMMANDS[name][1](np.load(tree / "a.npy")))
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), name


@pytest.mark.parametrize("name", ONE_INPUT)
@pytest.mark.parametrize("piped", ["a.npz", "a.pb"])
def test_stdin_takes_any_format(tree, in_one_process, name, piped):
    done, written = in_one_process["stdin"][piped, name]
    assert done.returncode == 0, done.stderr.decode()
    with np.load(written) as z:
        got = z[z.files[0]]
    want = np.ascontiguousarray(COMMANDS[name][1](np.load(tree / "a.npy")))
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("mode", ["--full", "-o -"])
def test_a_reader_that_leaves_stops_the_run_at_once(tree, name, mode):
    """``| head -c 100``: exit 141 (cat's status in the same pipe), no
    message, and no time spent making text or bytes nobody reads."""
    started = time.monotonic()
    done = sh(f"set -o pipefail; {command(name, 'big.npy')} {mode} | head -c 100 > /dev/null; "
              "echo \"status=${PIPESTATUS[0]}\" >&2", tree)
    assert done.stderr.decode() == "status=141\n"
    assert time.monotonic() - started < 20  # printing all of it takes longer


@pytest.mark.parametrize("how", ["", "--json"])
def test_a_large_printout_cut_short_says_so(tree, how):
    """One write of a printout larger than the pipe takes (a graph of 3,000
    nodes listed, or its --json document), whose reader leaves part-way:
    the pipe takes part of the write, and the rest is not dropped silently
    with exit 0."""
    nodes = [helper.make_node("Identity", [f"v{i}"], [f"v{i + 1}"]) for i in range(3000)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("v0", TensorProto.FLOAT, None)],
                          [helper.make_tensor_value_info("v3000", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), tree / "long.onnx")
    done = sh(f"{ONNXOP} {how} run long.onnx a.npy | head -c 100 > /dev/null; echo \"status=${{PIPESTATUS[0]}}\" >&2",
              tree)
    assert done.stderr.decode() == "status=141\n"
