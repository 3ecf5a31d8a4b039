"""Every operator command checks, prints and reports the same way whatever
the operator's kind (a view operator: Flatten; a tensor operator: Pad,
Split): --full with -o or --json is one refusal, exit 2, nothing written; a
batch that fails mid-way says what it wrote before (the line and --json);
the --json document follows one schema (docs/json.md): the same fields, the
backend that ran (not "auto"), the copy kernel and the schedules, each
output's plan kernel and each literal input's values. Real processes, one
per document: what a document says about the device is the process's own. What
a batch's commands print, exit with and write is under test, not the process:
those run in one process (tests/commands.py); a full disk, /dev/full, a
terminal and stdin from a file keep a process each. The batch route's
cases (same-named inputs, -k, archives, missing folders): test_op_kinds_batches.py."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import numpy as np
import pytest

ONNXOP = [sys.executable, "-m", "onnxop_cli"]


def _onnxop(backend: str, cwd, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([*ONNXOP, "--backend", backend, *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def _document(backend: str, cwd, *argv: str) -> dict:
    done = _onnxop(backend, cwd, *argv, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _fields(doc: dict) -> dict:
    run = doc["runs"][0]
    return {"top": sorted(doc), "run": sorted(run), "input": sorted(run["inputs"][0]),
            "output": sorted(run["outputs"][0])}


def test_view_and_tensor_operators_write_one_schema(backend, tmp_path):
    np.save(tmp_path / "a.npy", np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    view = _document(backend, tmp_path, "flatten", "a.npy", "--axis", "1", "-o", "f.npy")
    tensor = _document(backend, tmp_path, "pad", "a.npy", "--pads", "0,0,1,0,0,0", "-o", "p.npy")
    assert _fields(view) == _fields(tensor)
    assert view["backend"] == tensor["backend"] == backend
    assert view["adapter"] == tensor["adapter"]
    assert view["kernel"] is not None and view["schedules"] == {}
    assert [o["kernel"] for o in view["runs"][0]["outputs"]] == ["view"]
    assert [o["kernel"] for o in tensor["runs"][0]["outputs"]] == ["pieces"]
    assert [o["path"] for d in (view, tensor) for o in d["runs"][0]["outputs"]] == ["f.npy", "p.npy"]
    assert tensor["runs"][0]["inputs"][1] == {"name": "pads", "path": None, "shape": [6], "dtype": "int64",
                                              "values": [0, 0, 1, 0, 0, 0]}


FULL_KINDS = {"view": ["flatten", "a.npy"], "tensor": ["pad", "a.npy", "--pads", "0,0,1,0,0,0"],
         "several-outputs": ["split", "a.npy", "--split", "1,1"]}
GIVEN = {"output": ["-o", "y"], "json": ["--json"]}


@pytest.fixture(scope="module")
def refused(tmp_path_factory, backend) -> dict:
    """Each FULL_KINDS x GIVEN command with --full, each in a folder holding a.npy, all in one process
    (tests/commands.py): what a refusal prints and leaves is under test, not the process. Each:
    (the folder, the command's result)."""
    from commands import run_commands

    lines = {}
    for (kind, argv), (name, given) in ((k, g) for g in GIVEN.items() for k in FULL_KINDS.items()):
        folder = tmp_path_factory.mktemp(f"{kind}-{name}")
        np.save(folder / "a.npy", np.arange(24, dtype=np.float32).reshape(2, 3, 4))
        if given[0] == "-o":
            given = ["-o", "y/" if argv[0] == "split" else "y.npy"]
        lines[kind, name] = (folder, ["--backend", backend, *argv, *given, "--full"])
    return {key: (line[0], done) for (key, line), done in zip(lines.items(), run_commands(list(lines.values())))}


@pytest.mark.one_backend  # a usage refusal, made before any device is opened
@pytest.mark.parametrize("kind", FULL_KINDS)
@pytest.mark.parametrize("given", GIVEN)
def test_full_is_refused_where_nothing_is_printed(refused, kind, given):
    tmp_path, done = refused[kind, given]
    flag = GIVEN[given][0]
    assert (done.returncode, done.stdout if flag == "-o" else "") == (2, "")
    assert done.stderr == (f"onnxop: error: --full prints every value of the printed node, and with {flag} no "
                           f"node is printed; drop --full or {flag}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy"]


FAILING = {"view": (["flatten"], ["{}.npy"]), "tensor": (["pad", "--pads", "0,1,0,0"], ["{}.npy"]),
           "several-outputs": (["split", "--num-outputs", "2"], ["{}_0.npy", "{}_1.npy"])}


@pytest.mark.one_backend  # the batch's report of a host write error (each engine's streaming into a failing
# write: tests/cli/test_hostile_writes.py, on every backend)
@pytest.mark.parametrize("kind", FAILING)
def test_a_full_disk_mid_batch_lists_what_was_written(backend, tmp_path, kind):
    """ulimit -f: writing the third input's output fails with EFBIG, a real write error; Split's parts
    are named each, its folder is the failed output."""
    argv, names = FAILING[kind]
    for name, shape in (("a", (2, 3)), ("b", (3, 3)), ("big", (5000, 4))):
        np.save(tmp_path / f"{name}.npy", np.ones(shape, np.float32))
    (tmp_path / "out").mkdir()
    command = shlex.join([*ONNXOP, "--backend", backend, argv[0], "a.npy", "b.npy", "big.npy", *argv[1:], "-o", "out"])
    done = subprocess.run(["bash", "-c", f"ulimit -f 4; {command} --json"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    doc = json.loads(done.stdout)
    written = [f"out/{n.format(stem)}" for stem in "ab" for n in names]
    failed = [f"out/{n.format('big')}" for n in names]
    assert (done.returncode, doc["status"], doc["exit_code"]) == (1, "error", 1)
    assert doc["written"] == written
    assert doc["failed"] == {"input": "big.npy", "output": "out" if len(names) > 1 else failed[0]}
    assert done.stderr == f"onnxop: error: {doc['message']}\n"
    assert doc["message"] == (f"{failed[0]}: cannot write: File too large (batch stopped at {', '.join(failed)}, "
                              f"not written; written before it: {', '.join(written)})")
    assert sorted(os.listdir(tmp_path / "out")) == [w[4:] for w in written]  # no temporary file, nothing after
