"""One batch route for every operator kind (a view operator: Flatten; a tensor operator: Pad; one of
several outputs: Split): both kinds plan their batch through one Job and one set of output rules
(core/batch.py, core/batch_targets.py), so same-named inputs, an output that is another input, -k's
refused inputs, an archive of several inputs, a missing folder, stdin into a folder, lost "wrote" lines
and the progress bar behave alike. Each case is a folder of its own, one command (or two) per kind; the
commands whose output is under test run in one process (tests/commands.py; stdin refused for a folder
is a real pipe there), a terminal and a full stdout keep a process each. The single commands' checks:
test_op_kinds_agree.py."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import numpy as np
import pytest

from commands import terminal_output

ONNXOP = [sys.executable, "-m", "onnxop_cli"]

BATCH_KINDS = {"view": ["flatten"], "tensor": ["pad", "--pads", "0,1,0,0"], "several-outputs": ["split", "--split", "1,1"]}
MISSING = [("view", "nodir/y.npy"), ("tensor", "nodir/y.npy"), ("several-outputs", "nodir/y.npz")]
CANNOT_TAKE = [
    (["concat", "a.npy", "a.npy", "--axis", "0", "-k"], "concat: --keep-going sets aside the refused inputs of a "
     "batch, and Concat makes one node of all its inputs; drop --keep-going"),
    (["pad", "a.npy", "--pads", "0,1,0,0", "--any-type"], "pad: --any-type lets a view operator's index map move a "
     "type its opset excludes; Pad takes only its opset's types; drop --any-type"),
]


def _same_named(tmp_path) -> None:
    for d, value in (("p", 0), ("q", 1)):
        (tmp_path / d).mkdir()
        np.save(tmp_path / d / "a.npy", np.full((2, 3), value, np.float32))
    (tmp_path / "out").mkdir()


@pytest.fixture(scope="module")
def batch(tmp_path_factory, backend) -> dict:
    """The batch-route tests' commands below, each case in a folder of its own, all in one process
    (tests/commands.py): what a batch prints, exits with and writes is under test, not the process.
    (test, case) -> (the folder, its commands' results in order); ``before``: out/a.npy's bytes
    that the output-that-is-an-input case must leave."""
    from commands import run_commands

    lines, made, stdin = {}, {}, {}

    def case(key, prepare, *argvs):
        folder = tmp_path_factory.mktemp("-".join(map(str, key)).replace("/", "_"))
        prepare(folder)
        lines[key] = (folder, [["--backend", backend, *argv] for argv in argvs])
        return folder

    def argv(kind, *files, given=()):
        command, *options = BATCH_KINDS[kind]
        return [command, *files, *options, *given]

    def a_npy(folder):
        np.save(folder / "a.npy", np.ones((2, 3), np.float32))

    def another_input(folder):
        _same_named(folder)
        np.save(folder / "out" / "a.npy", np.full((2, 3), 7, np.float32))
        os.symlink("out/a.npy", folder / "b.npy")
        made["before", folder] = (folder / "out" / "a.npy").read_bytes()

    def a_npy_and_out(folder):
        a_npy(folder)
        (folder / "out").mkdir()

    def bad_and_a(folder):
        a_npy(folder)
        (folder / "bad.npy").write_bytes(b"not a tensor")
        (folder / "out").mkdir()

    def pack(folder):
        _same_named(folder)
        np.save(folder / "b.npy", np.full((2, 3), 2, np.float32))

    for kind in BATCH_KINDS:
        case(("parents", kind), _same_named, argv(kind, "p/a.npy", "q/a.npy", given=["--parents", "-o", "out"]))
        case(("same-named", kind), _same_named, argv(kind, "p/a.npy", "q/a.npy", given=["-o", "out"]))
        if kind != "several-outputs":
            case(("another-input", kind), another_input, argv(kind, "p/a.npy", "b.npy", given=["-o", "out"]))
        # the plain batch in a folder of its own (nothing written), --keep-going then -k --json in another
        case(("plain", kind), bad_and_a, argv(kind, "bad.npy", "a.npy", given=["-o", "out"]))
        case(("keep-going", kind), bad_and_a, argv(kind, "bad.npy", "a.npy", given=["-o", "out", "--keep-going"]),
             argv(kind, "bad.npy", "a.npy", given=["-o", "out", "-k", "--json"]))
        case(("pack", kind), pack, argv(kind, "p/a.npy", "b.npy", given=["-o", "all.npz"]),
             argv(kind, "p/a.npy", "q/a.npy", given=["-o", "two.npz"]))
    for kind, target in MISSING:
        case(("missing", kind, target), a_npy, argv(kind, "a.npy", given=["-o", target]))
    for i, (option_argv, _) in enumerate(CANNOT_TAKE):
        case(("cannot-take", i), a_npy, [*option_argv, "-o", "y.npy"])
    for kind in BATCH_KINDS:  # a.npy's bytes on stdin (a real pipe)
        folder = case(("stdin-into-folder", kind), a_npy_and_out, argv(kind, "-", given=["-o", "out"]))
        stdin["stdin-into-folder", kind] = (folder / "a.npy").read_bytes()
    done = iter(run_commands([(folder, a, stdin.get(key)) for key, (folder, argvs) in lines.items() for a in argvs]))
    found = {key: (folder, [next(done) for _ in argvs]) for key, (folder, argvs) in lines.items()}
    found.update(made)
    return found


@pytest.mark.one_backend
@pytest.mark.parametrize("kind", BATCH_KINDS)
def test_parents_keeps_same_named_inputs_apart(batch, kind):
    tmp_path, (done,) = batch["parents", kind]
    assert (done.returncode, done.stderr) == (0, "")
    names = ["a_0.npy", "a_1.npy"] if kind == "several-outputs" else ["a.npy"]
    for d, value in (("p", 0), ("q", 1)):
        assert sorted(os.listdir(tmp_path / "out" / d)) == names
        assert all(np.load(tmp_path / "out" / d / n).flat[-1] == value for n in names)
    assert done.stdout.splitlines()[-1].endswith(f", wrote out/q/{names[-1]}")


@pytest.mark.one_backend
@pytest.mark.parametrize("kind", BATCH_KINDS)
def test_same_named_inputs_without_parents_are_one_refusal(batch, kind):
    tmp_path, (done,) = batch["same-named", kind]
    target = "out/a_0.npy" if kind == "several-outputs" else "out/a.npy"
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (f"onnxop: error: {target}: the results of p/a.npy and q/a.npy would all be written "
                           "here; give --parents to keep same-named inputs apart\n")
    assert os.listdir(tmp_path / "out") == []


@pytest.mark.one_backend
@pytest.mark.parametrize("kind", ["view", "tensor"])
def test_an_output_that_is_another_input_is_refused(batch, kind):
    """b.npy is a symlink to out/a.npy: the first job's result would replace the second job's input."""
    tmp_path, (done,) = batch["another-input", kind]
    before = batch["before", tmp_path]
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == ("onnxop: error: out/a.npy: the result of p/a.npy would replace b.npy, another input "
                           "of this batch; write to another folder\n")
    assert os.listdir(tmp_path / "out") == ["a.npy"] and (tmp_path / "out" / "a.npy").read_bytes() == before


@pytest.mark.one_backend
@pytest.mark.parametrize("kind", BATCH_KINDS)
def test_keep_going_sets_a_refused_input_aside(batch, kind):
    """Without -k, nothing written; with it, the good input's outputs and their lines (then -k --json,
    over them, in the same folder)."""
    plain_path, (plain,) = batch["plain", kind]
    assert (plain.returncode, os.listdir(plain_path / "out")) == (2, [])
    tmp_path, (done, json_done) = batch["keep-going", kind]
    assert done.returncode == 2
    assert done.stderr == plain.stderr.replace("onnxop: error: ", "onnxop: refused, not run: ")
    written = ["a_0.npy", "a_1.npy"] if kind == "several-outputs" else ["a.npy"]
    assert sorted(os.listdir(tmp_path / "out")) == written
    assert [line.rsplit(", wrote ", 1)[1] for line in done.stdout.splitlines()] == [f"out/{n}" for n in written]
    doc = json.loads(json_done.stdout)
    assert (doc["status"], doc["exit_code"], len(doc["runs"])) == ("failed", 2, 1)
    assert [(r["input"], r["message"]) for r in doc["refused"]] == [("bad.npy", plain.stderr[15:-1])]


OUTPUTS = {"folder": ["-o", "out"], "archive": ["-o", "all.npz"], "parents": ["--parents", "-o", "out"]}


@pytest.fixture(scope="module")
def batches(tmp_path_factory, backend) -> dict:
    """Each BATCH_KINDS x OUTPUTS batch of an unreadable bad.npy and a.npy with -k --json; each kind's
    --help; each kind's archive of two members into one file, and Split's parts into one file: all in
    one process (tests/commands.py). (kind, output) -> (folder, result); kind -> its help;
    ("one file", kind, given) -> (folder, result)."""
    from commands import run_commands

    lines = {}
    for kind, (command, *options) in BATCH_KINDS.items():
        for name, given in OUTPUTS.items():
            folder = tmp_path_factory.mktemp(f"{kind}-{name}")
            np.save(folder / "a.npy", np.ones((2, 3), np.float32))
            (folder / "bad.npy").write_bytes(b"not a tensor")
            (folder / "out").mkdir()
            lines[kind, name] = (folder, ["--backend", backend, command, "bad.npy", "a.npy", *options, *given,
                                          "-k", "--json"])
        lines[kind] = (tmp_path_factory.getbasetemp(), [command, "--help"])
        for given in (["w.npz", "-o", "y.npy"], ["w.npz", "-o", "-"], ["a.npy", "-o", "y.npy"]):
            folder = tmp_path_factory.mktemp(f"{kind}-one-file")
            np.save(folder / "a.npy", np.ones((2, 3), np.float32))
            np.savez(folder / "w.npz", m=np.ones((2, 3), np.float32), n=np.zeros((2, 3), np.float32))
            lines["one file", kind, given[0] + given[-1]] = (folder, ["--backend", backend, command, given[0],
                                                                      *options, *given[1:]])
        for name, given in (("archive", ["w.npz", "-o", "-", "--format", "npz"]),
                            ("two", ["a.npy", "w.npz", "-o", "-"])):
            lines["stdout", kind, name] = (folder, ["--backend", backend, command, *given, *options])
    done = run_commands(list(lines.values()))
    return {key: (line[0], result) for (key, line), result in zip(lines.items(), done)}


@pytest.mark.one_backend
@pytest.mark.parametrize("kind", BATCH_KINDS)
@pytest.mark.parametrize("given", OUTPUTS)
def test_keep_going_names_the_output_a_refused_input_would_have_written(batches, kind, given):
    """--json's refused entry names what was not made: the file, the archive, or Split's folder of parts."""
    folder, done = batches[kind, given]
    doc = json.loads(done.stdout)
    named = {"folder": "out/bad.npy", "archive": "all.npz", "parents": "out/bad.npy"}[given]
    if kind == "several-outputs" and given != "archive":
        named = "out"
    assert (done.returncode, [(r["input"], r["output"]) for r in doc["refused"]]) == (2, [("bad.npy", named)])
    assert [o["path"] for o in doc["runs"][0]["outputs"]] == (
        [f"{named}/a_0.npy", f"{named}/a_1.npy"] if named == "out" else [named.replace("bad", "a")] * (
            2 if kind == "several-outputs" else 1))
    assert not any(p.name.startswith("bad") for p in (folder / "out").iterdir())


@pytest.mark.one_backend
@pytest.mark.parametrize("kind", BATCH_KINDS)
def test_help_offers_only_the_options_a_command_takes(batches, kind):
    """--any-type is a view operator's option: a tensor operator refuses it (below), so its --help does not
    offer it."""
    _, done = batches[kind]
    assert (done.returncode, "--keep-going" in done.stdout) == (0, True)
    assert ("--any-type" in done.stdout) == (kind == "view")


@pytest.mark.one_backend
@pytest.mark.parametrize("kind", BATCH_KINDS)
def test_one_file_takes_one_tensor(batches, kind):
    """-o FILE.npy or -o - (a .npy stream) holds one tensor: an archive of several needs --member, and
    Split's two parts want a folder or an .npz -- one refusal, nothing written, whatever the operator."""
    member = "w.npz holds 2 arrays: 'm', 'n'; choose one with --member NAME (or write a .npz to apply the operator to each)"
    for given, message in (("w.npzy.npy", member), ("w.npz-", member), ("a.npyy.npy", "y.npy: a .npy file takes "
                           "one tensor, this writes 2; use -o FOLDER or an .npz" if kind == "several-outputs" else "")):
        folder, done = batches["one file", kind, given]
        if not message:  # one tensor: written
            assert (done.returncode, done.stderr, (folder / "y.npy").is_file()) == (0, "", True)
            continue
        assert (done.returncode, done.stdout, done.stderr) == (2, "", f"onnxop: error: {message}\n"), given
        assert sorted(p.name for p in folder.iterdir()) == ["a.npy", "w.npz"], given


@pytest.mark.one_backend
@pytest.mark.parametrize("kind", BATCH_KINDS)
def test_stdout_takes_what_its_format_holds(batches, kind):
    """-o - --format npz streams one archive of every result, a member each; two input files to -o - are
    one refusal, whatever the operator."""
    import io

    _, done = batches["stdout", kind, "archive"]
    assert done.returncode == 0, done.stderr
    with np.load(io.BytesIO(done.stdout.encode("utf-8", "surrogateescape"))) as z:
        assert sorted(z) == (["m_0", "m_1", "n_0", "n_1"] if kind == "several-outputs" else ["m", "n"])
    _, done = batches["stdout", kind, "two"]
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", "onnxop: error: -o -: stdout takes one tensor, got 2 inputs; use -o FOLDER\n")


@pytest.mark.one_backend
@pytest.mark.parametrize("argv,message", CANNOT_TAKE)
def test_an_option_a_tensor_operator_cannot_take_is_one_line(batch, argv, message):
    tmp_path, (done,) = batch["cannot-take", CANNOT_TAKE.index((argv, message))]
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"onnxop: error: {message}\n")
    assert os.listdir(tmp_path) == ["a.npy"]


@pytest.mark.one_backend
@pytest.mark.parametrize("kind", BATCH_KINDS)
def test_lost_wrote_lines_are_one_warning(backend, tmp_path, kind):
    """stdout is /dev/full: every output written, exit 0, one warning."""
    _same_named(tmp_path)
    command = shlex.join([*ONNXOP, "--backend", backend, *BATCH_KINDS[kind][:1], "p/a.npy", *BATCH_KINDS[kind][1:], "-o", "out"])
    done = subprocess.run(["bash", "-c", f"{command} > /dev/full"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert (done.returncode, done.stderr) == (0, "onnxop: warning: stdout: No space left on device; the 'wrote' "
                                                 "lines were not printed, the outputs were written\n")
    assert os.listdir(tmp_path / "out")


@pytest.mark.one_backend
@pytest.mark.parametrize("kind", ["view", "tensor"])
def test_a_large_input_draws_a_progress_bar_on_a_terminal(backend, tmp_path, kind):
    """stderr is a terminal and the input is over 64 MiB: a bar, labelled with the operator and the tensor."""
    import pty

    np.save(tmp_path / "a.npy", np.zeros((1 << 13, (1 << 11) + 64), np.float32))  # 66 MiB
    leader, follower = pty.openpty()
    command, *options = BATCH_KINDS[kind]
    proc = subprocess.Popen([*ONNXOP, "--backend", backend, command, "a.npy", *options, "-o", "y.npy"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    err = terminal_output(leader, proc, timeout=300)
    assert proc.wait(timeout=300) == 0
    assert f"{command.capitalize()} a" in err and "MiB" in err, err


@pytest.mark.one_backend
@pytest.mark.parametrize("kind", BATCH_KINDS)
def test_several_inputs_pack_into_one_archive(batch, kind):
    """-o all.npz: a member per result, named after its input; two inputs of one name are one refusal."""
    tmp_path, (done, refused) = batch["pack", kind]
    assert (done.returncode, done.stderr) == (0, "")
    members = ["a_0", "a_1", "b_0", "b_1"] if kind == "several-outputs" else ["a", "b"]
    with np.load(tmp_path / "all.npz") as z:
        assert sorted(z) == members and z[members[-1]].flat[-1] == 2
    assert [line.rsplit(", wrote ", 1)[1] for line in done.stdout.splitlines()] == ["all.npz"] * len(members)
    done = refused
    member = "a_0" if kind == "several-outputs" else "a"
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (f"onnxop: error: two.npz: the results of p/a.npy and q/a.npy would both be member "
                           f"{member!r}; rename one input, or write them to a folder\n")
    assert not (tmp_path / "two.npz").exists()


@pytest.mark.one_backend
@pytest.mark.parametrize("kind,target", MISSING)
def test_an_output_in_a_missing_folder_is_refused(batch, kind, target):
    """Only a folder of parts (-o parts/) is made; -o FILE's folder must exist, whatever the operator."""
    tmp_path, (done,) = batch["missing", kind, target]
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"onnxop: error: {target}: output folder nodir does not exist\n"
    assert os.listdir(tmp_path) == ["a.npy"]


@pytest.mark.one_backend
@pytest.mark.parametrize("kind", BATCH_KINDS)
def test_stdin_into_a_folder_is_refused(batch, kind):
    """A file in -o FOLDER is named after its input, and stdin has no name: no invented one."""
    tmp_path, (done,) = batch["stdin-into-folder", kind]
    instead = "FILE.npz" if kind == "several-outputs" else "FILE"
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"onnxop: error: out: a folder takes each input's name, and stdin has none; give -o {instead}\n"
    assert os.listdir(tmp_path / "out") == []
