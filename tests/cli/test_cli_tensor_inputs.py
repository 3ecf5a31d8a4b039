"""The command line of the operators with tensor inputs (cli/tensor_ops.py):
positional FILE... is the first input, other inputs are options (lists or
tensor files), several outputs go to a folder or an .npz, a batch is
planned whole. CLI tests: one backend."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import cli, error_of, random_array


@pytest.fixture
def files(cwd, rng):
    a = random_array(rng, (2, 3), np.float32)
    x = random_array(rng, (5, 2), np.int16)
    np.save("a.npy", a)
    np.save("x.npy", x)
    np.savez("w.npz", q=a[:1], p=np.array([1, 0, 0, 2], np.int64), r=a)
    return {"a": a, "x": x}


def test_concat_npz_members_in_archive_order(capsys, files):
    code, out, err = cli(capsys, "concat", "w.npz", "--member", "r", "w.npz", "--member", "q", "--axis", "0")
    assert code == 2 and "--member" in err  # one --member for every file: given twice is refused
    np.savez("v.npz", z=files["a"][:1], y=files["a"])  # archive order, not alphabetical
    code, out, err = cli(capsys, "concat", "v.npz", "--axis", "0", "-o", "v.npy")
    assert code == 0, err
    assert np.load("v.npy").tobytes() == np.concatenate([files["a"][:1], files["a"]]).tobytes()


def test_concat_the_same_file_many_times(capsys, files):
    code, out, err = cli(capsys, "concat", *["a.npy"] * 33, "--axis", "1", "-o", "o.npy")
    assert code == 0, err
    assert np.load("o.npy").tobytes() == np.concatenate([files["a"]] * 33, axis=1).tobytes()


def test_concat_mismatch_is_one_line_and_writes_nothing(capsys, files):
    np.save("b.npy", np.zeros((5, 2), np.float32))
    code, out, err = cli(capsys, "concat", "a.npy", "b.npy", "--axis", "0", "-o", "o.npy")
    assert code == 2
    assert error_of(err) == "a.npy: Concat: input b has shape (5, 2), which does not match (2, 3) of a outside axis 0"
    code, out, err = cli(capsys, "concat", "a.npy", "x.npy", "--axis", "0", "-o", "o.npy")
    assert code == 2
    assert error_of(err) == "a.npy: Concat: inputs a (float32) and x (int16) must have the same type"
    import os

    assert not os.path.exists("o.npy")


def test_split_to_a_folder_an_npz_and_the_terminal(capsys, files):
    code, out, err = cli(capsys, "split", "x.npy", "--split", "2,3", "-o", "parts")
    assert code == 0, err
    assert np.load("parts/x_0.npy").tobytes() == files["x"][:2].tobytes()
    assert np.load("parts/x_1.npy").tobytes() == files["x"][2:].tobytes()
    code, out, err = cli(capsys, "split", "x.npy", "--num-outputs", "3", "-o", "p.npz")
    assert code == 0, err
    with np.load("p.npz") as z:
        assert list(z) == ["x_0", "x_1", "x_2"]
        assert [z[k].shape for k in z] == [(2, 2), (2, 2), (1, 2)]
    code, out, err = cli(capsys, "split", "x.npy", "--split", "1,4")
    assert code == 0, err
    assert "x_0: shape=(1, 2), dtype=int16" in out and "x_1: shape=(4, 2), dtype=int16" in out


def test_split_into_a_new_folder_named_with_a_slash(capsys, files):
    """`-o parts/` (the help's example) makes the folder; a trailing / on a file is still refused, as cp does."""
    code, out, err = cli(capsys, "split", "x.npy", "--split", "2,3", "-o", "parts/")
    assert code == 0, err
    assert np.load("parts/x_1.npy").tobytes() == files["x"][2:].tobytes()
    code, out, err = cli(capsys, "split", "x.npy", "--split", "2,3", "-o", "a.npy/")
    assert code == 2 and "a.npy/: Not a directory" in error_of(err)
    assert np.load("a.npy").tobytes() == files["a"].tobytes()


def test_split_with_a_tensor_file_and_a_member(capsys, files):
    np.save("s.npy", np.array([4, 1], np.int64))
    code, out, err = cli(capsys, "split", "x.npy", "--split", "s.npy", "-o", "parts")
    assert code == 0, err
    assert np.load("parts/x_1.npy").shape == (1, 2)


def test_pad_secondary_input_from_an_npz_member(capsys, files):
    code, out, err = cli(capsys, "pad", "a.npy", "--pads", "w.npz:p", "-o", "o.npy")
    assert code == 0, err
    assert np.load("o.npy").tobytes() == np.pad(files["a"], [(1, 0), (0, 2)]).tobytes()


def test_batch_refused_whole_when_an_input_does_not_fit_one_job(capsys, files):
    np.save("y.npy", np.zeros((2, 2, 2), np.float32))
    (p := __import__("pathlib").Path("out")).mkdir()
    code, out, err = cli(capsys, "pad", "a.npy", "y.npy", "--pads", "1,0,0,1", "-o", "out")
    assert code == 2
    assert error_of(err) == ("y.npy: Pad: pads [1, 0, 0, 1] has 4 values; it needs 2 x 3 (a begin and an end "
                             "for each of the 3 axes)")
    assert list(p.iterdir()) == []  # a.npy's job, which fits, was not run either


def test_literal_and_option_errors(capsys, files):
    code, _, err = cli(capsys, "pad", "a.npy", "--pads", "1,x,0,0")
    assert code == 2 and "Pad: --pads must be a comma-separated list of int64 values or a tensor file" in error_of(err)
    code, _, err = cli(capsys, "pad", "a.npy", "--pads", "1,0,0,0", "--axes", "0", "--opset", "13")
    assert code == 2 and error_of(err).startswith("Pad-13 (opset 13) has no --axes (it takes --mode, --pads, --constant-value)")
    code, _, err = cli(capsys, "pad", "a.npy", "--pads", "w.npz:p", "--opset", "2")
    assert code == 2 and "keeps pads as an attribute: give a list, not a file" in error_of(err)
    code, _, err = cli(capsys, "where", "a.npy", "--x", "1", "--y", "2")
    assert code == 2 and "give --x as a tensor file" in error_of(err)
    code, _, err = cli(capsys, "pad", "x.npy", "--pads", "1,0,0,0", "--constant-value", "70000")
    assert code == 2 and "--constant-value 70000 is out of range [-32768, 32767] for int16" in error_of(err)
    code, _, err = cli(capsys, "pad", "a.npy", "--pads", "nope.npy")
    assert code == 2 and error_of(err) == "nope.npy: no such file"


def test_where_literal_takes_the_other_inputs_type(capsys, files):
    np.save("c.npy", np.array([[True, False, True], [False, False, True]]))
    code, out, err = cli(capsys, "where", "c.npy", "--x", "a.npy", "--y", "nan", "-o", "w.npy")
    assert code == 0, err
    want = np.where(np.load("c.npy"), files["a"], np.float32(np.nan))
    assert np.load("w.npy").tobytes() == want.tobytes()


def test_json_names_the_kernel_of_each_output(capsys, files):
    code, out, err = cli(capsys, "split", "x.npy", "--split", "2,3", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["op"] == "Split" and doc["status"] == "ok"
    run = doc["runs"][0]
    assert [o["shape"] for o in run["outputs"]] == [[2, 2], [3, 2]]
    assert {o["kernel"] for o in run["outputs"]} == {"pieces"}
    assert [i["name"] for i in run["inputs"]] == ["x", "split"]


def test_help_has_an_example_and_every_input_option(capsys):
    code, out, _ = cli(capsys, "pad", "--help")
    assert code == 0
    for option in ("--pads", "--mode", "--constant-value", "--axes", "Example: onnxop pad"):
        assert option in out
    code, out, _ = cli(capsys, "where", "--help")
    assert "--x" in out and "--y" in out


def test_run_takes_a_tensor_nodes_with_an_initializer(capsys, files):
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("Concat", ["x", "y"], ["z"], axis=1)
    y = helper.make_tensor("y", TensorProto.INT16, [5, 1], [9] * 5)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.INT16, None)],
                              [helper.make_tensor_value_info("z", TensorProto.INT16, None)], initializer=[y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), "m.onnx")
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", "-o", "z.npy")
    assert code == 0, err
    want = np.concatenate([files["x"], np.full((5, 1), 9, np.int16)], axis=1)
    assert np.load("z.npy").tobytes() == want.tobytes()
    node = helper.make_node("Split", ["x"], ["a", "b"], axis=0, num_outputs=2)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.INT16, None)],
                              [helper.make_tensor_value_info(n, TensorProto.INT16, None) for n in "ab"])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), "s.onnx")
    code, out, err = cli(capsys, "run", "s.onnx", "x.npy")
    assert code == 0, err
    assert "a: shape=(3, 2), dtype=int16" in out and "b: shape=(2, 2), dtype=int16" in out
