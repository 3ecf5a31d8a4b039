"""Bad command lines: one line, exit 2 (a traceback only with --debug); a
file name with control characters stays on its line.
"""

from __future__ import annotations

import os

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
