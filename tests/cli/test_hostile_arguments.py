"""Bad command lines: one line, exit 2 (a traceback only with --debug); a
file name with control characters stays on its line.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from conftest import error_of
from hostile_inputs import cli, files, matches
from onnxop_cli.cli.main import run
from onnxop_cli.errors import ExitCode, InputError


@pytest.mark.parametrize(
    "argv,message",
    [
        (["flatten"], "Missing argument 'FILE'. (see 'onnxop flatten --help')"),
        (["flatten", "a.npy", "--opset", "abc"],
         "Invalid value for '--opset': 'abc' is not a valid int. (see 'onnxop flatten --help')"),
        (["flatten", "a.npy", "--opset", "1.5"],
         "Invalid value for '--opset': '1.5' is not a valid int. (see 'onnxop flatten --help')"),
        (["info", "extra"], "Got unexpected extra argument(s) (extra) (see 'onnxop info --help')"),
        (["flatten", "a.npy", "--axis"], "Option '--axis' requires an argument. (see 'onnxop flatten --help')"),
        (["flatten", "a.npy", "--full=3"], "Option '--full' does not take a value. (see 'onnxop flatten --help')"),
        (["--backend"], "Option '--backend' requires an argument. (see 'onnxop --help')"),
        (["flatten", "a.npy", "--axis", "1.5"], "Flatten: --axis must be an integer, got '1.5' (example: --axis -2)"),
        (["unsqueeze", "a.npy", "--axes", "1,,2"],
         "Unsqueeze: --axes must be comma-separated integers, got '1,,2' (example: --axes 0,2)"),
        (["unsqueeze", "a.npy", "--axes", "0,-6"],
         "a.npy: Unsqueeze: axes 0 and -6 both name output axis 0 (output rank 6); axes must be unique"),
        (["unsqueeze", "a.npy", "--axes", ",".join(map(str, range(61)))],
         "a.npy: Unsqueeze: output shape has rank 65; numpy (and so onnxop) supports at most 64 dimensions"),
        (["flatten", "folder.npy"], "folder.npy: not a regular file"),
        (["flatten", "dev.npy"], "dev.npy: not a regular file"),
    ],
)
def test_argument_errors_are_one_line_exit_2(cwd, capsys, argv, message):
    np.save(cwd / "a.npy", np.zeros((2, 3, 4, 5), np.float32))
    (cwd / "folder.npy").mkdir()
    os.symlink("/dev/zero", cwd / "dev.npy")
    before = files(cwd)
    code, out, err = cli(capsys, *argv)
    assert code == ExitCode.USAGE and out == ""
    assert matches(error_of(err), message), error_of(err)
    assert files(cwd) == before


def test_debug_shows_the_traceback_of_an_input_error(cwd):
    (cwd / "x.npy").write_bytes(b"garbage")
    with pytest.raises(InputError, match="x.npy: not a .npy file"):
        run(["flatten", "x.npy", "--debug"], debug=True)


def test_a_file_name_with_control_characters_stays_one_line(cwd, capsys):
    (cwd / "bad\nname\x1b[2J.npy").write_bytes(b"garbage")
    code, _, err = cli(capsys, "flatten", "bad\nname\x1b[2J.npy")
    assert code == ExitCode.USAGE
    assert error_of(err).startswith("bad\\nname\\x1b[2J.npy: not a .npy file")


INT64 = "[-9223372036854775808, 9223372036854775807]"


@pytest.mark.parametrize(
    "argv,message",
    [  # a number no int64 holds: each option refuses it, where it was an internal OverflowError or, printed
        # without -o, the slice of a start numpy could not even print
        (["slice", "a.npy", "--starts", str(2**63), "--ends", "1"], f"Slice: --starts {2**63} is out of range {INT64} for int64"),
        (["flatten", "a.npy", "--axis", str(-2**63 - 1)], f"Flatten: --axis {-2**63 - 1} is out of range {INT64} for int64"),
        (["eye-like", "m.npy", "--k", str(10**20)], f"EyeLike: --k {10**20} is out of range {INT64} for int64"),
        (["pad", "a.npy", "--pads", f"0,{10**20},0,0,0,0,0,0"], f"Pad: --pads {10**20} is out of range {INT64} for int64"),
        (["trilu", "m.npy", "--k", str(2**63)], f"Trilu: --k {2**63} is out of range {INT64} for int64"),
        (["gather", "a.npy", "--indices", f"0,{10**20}"], f"Gather: --indices {10**20} is out of range {INT64} for int64"),
        (["split", "a.npy", "--split", f"{2**64},1"], f"Split: --split {2**64} is out of range {INT64} for int64"),
        # a uint64 value is a uint64's: -1 was taken as 2**64 - 1, 2**63 and above were internal errors
        (["pad", "u.npy", "--pads", "1,0", "--constant-value", "-1"],
         "Pad: --constant-value -1 is out of range [0, 18446744073709551615] for uint64"),
        (["pad", "u.npy", "--pads", "1,0", "--constant-value", str(2**64)],
         f"Pad: --constant-value {2**64} is out of range [0, 18446744073709551615] for uint64"),
        (["pad", "i.npy", "--pads", "1,0", "--constant-value", str(2**63)],
         f"Pad: --constant-value {2**63} is out of range {INT64} for int64"),
    ],
)
def test_integers_past_their_type_are_refused_in_one_line(cwd, capsys, argv, message):
    np.save(cwd / "a.npy", np.zeros((2, 3, 4, 5), np.float32))
    np.save(cwd / "m.npy", np.zeros((3, 4), np.float32))
    np.save(cwd / "u.npy", np.arange(3, dtype=np.uint64))
    np.save(cwd / "i.npy", np.arange(3, dtype=np.int64))
    before = files(cwd)
    code, out, err = cli(capsys, *argv)
    assert code == ExitCode.USAGE and out == ""
    assert error_of(err) == message
    assert files(cwd) == before


def test_the_ends_of_the_64_bit_types_are_taken_as_given(cwd, capsys):
    np.save(cwd / "u.npy", np.arange(3, dtype=np.uint64))
    np.save(cwd / "i.npy", np.arange(3, dtype=np.int64))
    for name, value in (("u", 2**64 - 1), ("u", 2**63), ("i", -2**63), ("i", 2**63 - 1)):
        code, _, err = cli(capsys, "pad", f"{name}.npy", "--pads", "1,0", "--constant-value", str(value),
                           "-o", f"{name}{value}.npy")
        assert code == 0, err
        got = np.load(cwd / f"{name}{value}.npy")
        assert got.dtype == np.load(cwd / f"{name}.npy").dtype and int(got[0]) == value and list(got[1:]) == [0, 1, 2]
    code, out, err = cli(capsys, "slice", str(cwd / "i.npy"), "--starts", str(2**63 - 1), "--ends", str(-2**63),
                         "--steps", str(-2**63))
    assert code == 0 and "[2]" in out, out + err


def test_a_float_literal_past_its_type_is_its_infinity_without_a_numpy_warning(cwd, capsys):
    """1e300 as a float16 is inf, as a Cast makes it; numpy's 'RuntimeWarning: overflow encountered in cast'
    and its source line were printed on stderr around the command's own lines."""
    np.save(cwd / "h.npy", np.arange(3, dtype=np.float16))
    np.save(cwd / "c.npy", np.array([True, False, True]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (pytest would catch the warning that a user's terminal shows)
        code, out, err = cli(capsys, "pad", "h.npy", "--pads", "1,0", "--constant-value", "-1e300", "-o", "p.npy",
                             "-q")
        assert code == 0 and out == "" and err == "", err
        assert np.load(cwd / "p.npy").tobytes() == np.array([-np.inf, 0, 1, 2], np.float16).tobytes()
        code, out, err = cli(capsys, "where", "c.npy", "--x", "1e300", "--y", "h.npy", "-q", "-o", "w.npy")
        assert err == "" and code == 0 and np.load(cwd / "w.npy").tolist() == [np.inf, 1, np.inf]


@pytest.mark.parametrize("args,message", [
    (["x.npy", "--dump", "/proc/onnxop-x", "-o", "y.npy"],
     "--dump /proc/onnxop-x: cannot make the folder: No such file or directory"),
    (["x.npy", "-o", "/proc/onnxop-x/"], "-o /proc/onnxop-x: cannot make the folder: No such file or directory"),
    (["x.npy", "--verify", "-o", "/proc/onnxop-x/"], "-o /proc/onnxop-x: cannot make the folder: No such file or directory"),
    (["x.npy", "-o", "nowhere/y.npy"], "-o nowhere/y.npy: output folder nowhere does not exist"),
    (["x.npy", "-o", "nowhere/deeper/"], "-o nowhere/deeper: no such folder, and no folder nowhere to make it in"),
    (["x.npy", "--check", "nowhere"], "--check nowhere: no such folder"),
    (["x.npy", "--check", "x.npy"], "--check x.npy: not a folder"),
    (["--input", "x=nope.npy"], "--input x=nope.npy: no such file"),
    (["--input", "x=sub"], "--input x=sub: is a folder, not a tensor file; give the files in it (example: sub/*.pb)"),
])
def test_runs_path_errors_name_their_option(cwd, capsys, args, message):
    """A path an option of run gave that cannot be used names the option: --dump /proc/x said
    '/proc/x: No such file or directory' (the system's words for a folder mkdir cannot make there),
    -o's missing folders and --input's files gave the path alone, and --check of a missing folder
    said 'not a folder'."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), "m.onnx")
    np.save("x.npy", np.ones((2, 3), np.float32))
    os.mkdir("sub")
    code, out, err = cli(capsys, "run", "m.onnx", *args)
    assert (code, error_of(err)) == (ExitCode.USAGE, message), err
    assert sorted(os.listdir()) == ["m.onnx", "sub", "x.npy"]


@pytest.mark.parametrize("target,message", [
    ("x.npy", "'x.npy': exists and is not a folder (cases write makes a new folder)"),
    ("nowhere/edge", "'nowhere/edge': the folder '{cwd}/nowhere' does not exist"),
    ("/proc/onnxop-x", "'/proc/onnxop-x': cannot make a folder in '/proc': No such file or directory"),
])
def test_cases_write_refuses_a_folder_it_cannot_make_in_its_words(cwd, capsys, target, message):
    """cases write's refusals of its folder were exit 1 (a runtime failure), and a folder the system
    will not make there (/proc) named the temporary folder beside it ('/proc/.x.6w5xwt62.onnxop-tmp:
    No such file or directory'): each is a usage error now, exit 2, naming the folder asked for."""
    np.save("x.npy", np.ones(2, np.float32))
    code, out, err = cli(capsys, "cases", "write", target)
    assert (code, error_of(err), out) == (ExitCode.USAGE, message.format(cwd=cwd), ""), err
    assert sorted(os.listdir()) == ["x.npy"]


def test_run_of_a_folder_says_it_is_a_folder(cwd, capsys):
    """run FOLDER said 'not an ONNX model: [Errno 21] Is a directory: 'sub'' (onnx's open())."""
    os.mkdir("sub")
    np.save("x.npy", np.ones(2, np.float32))
    code, out, err = cli(capsys, "run", "sub", "x.npy")
    assert (code, error_of(err), out) == (ExitCode.USAGE, "sub: is a folder, not an ONNX model", "")
