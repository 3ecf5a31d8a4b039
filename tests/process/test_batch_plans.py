"""Batches planned before anything is written: inputs with one output name,
an output that is another input (by name, symlink or hard link, a folder
spelled another way), stdin into a folder, a later bad input or type
refusing the whole batch up front; and ``--parents`` (same-named inputs
kept apart, a leading slash dropped, refusals that write nothing).

Refusals are checked for their outcome AND for what they left: the folder's
files byte for byte, no output, no temporary file.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from batch_folders import one_line, refused, sh, snapshot
from batch_folders import tree  # noqa: F401 (a fixture)
from conftest import cli, random_array

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True


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
