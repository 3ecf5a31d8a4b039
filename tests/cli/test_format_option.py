"""``--format``: a pipe carries every type in .pb, an .npz on stdout keeps
every member, a folder is written in another format, and what --format
refuses (with the way out named for packed types).
"""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from commands import run_commands
from conftest import cli, error_of, random_array
from pb_files import read_pb, save_pb


TYPED = [
    ("bfloat16", ml_dtypes.bfloat16),
    ("float8_e4m3fn", ml_dtypes.float8_e4m3fn),
    ("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz),
    ("int4", ml_dtypes.int4),
    ("uint2", ml_dtypes.uint2),
]


def test_a_pb_pipe_carries_every_type(tmp_path, rng):
    """Each type of TYPED and strings (6 cases): a .pb on stdin through transpose to a .pb on
    stdout, then that stream into show: the 12 commands in two processes, stdin a real pipe
    (tests/commands.py)."""
    cases = TYPED + [("string", object)]
    inputs = []
    for name, np_type in cases:
        if np_type is object:
            x = np.array([[b"a", b"bb", b"\xff"], [b"", b"e", b"ff"]], dtype=object)
        elif "int" in name:  # 2- and 4-bit codes, every one possible
            x = rng.integers(0, 4, (2, 3)).astype(np_type)
        else:  # random bit patterns: NaNs, subnormals and signed zeros included
            x = random_array(rng, (2, 3), f"u{np.dtype(np_type).itemsize}").view(np_type)
        inputs.append(x)
    env = {**os.environ, "ONNXOP_BACKEND": "vulkan"}
    firsts = run_commands([(tmp_path, ["transpose", "-", "-o", "-", "--format", "pb"],
                            numpy_helper.from_array(x, "x").SerializeToString()) for x in inputs], text=False, env=env)
    shown = run_commands([(tmp_path, ["show", "-"], first.stdout) for first in firsts], text=False, env=env)
    for (name, np_type), x, first, show in zip(cases, inputs, firsts, shown, strict=True):
        assert first.returncode == 0, (name, first.stderr)
        got = onnx.TensorProto()
        got.ParseFromString(first.stdout)
        expect = numpy_helper.from_array(np.ascontiguousarray(x.T), "transposed")
        assert list(got.dims) == [3, 2] and got.data_type == expect.data_type, name
        if np_type is object:
            assert list(got.string_data) == list(expect.string_data)
        else:
            assert got.raw_data == expect.raw_data, name  # byte for byte, as onnx packs it
        assert show.returncode == 0 and b"shape=(3, 2)" in show.stdout, (name, show.stderr)


def test_format_npz_on_stdout_keeps_every_member(tmp_path, rng):
    a, b = random_array(rng, (2, 3), "float32"), random_array(rng, (4,), "int16")
    np.savez(tmp_path / "ab.npz", a=a, b=b)
    (done,) = run_commands([(tmp_path, ["transpose", "ab.npz", "-o", "-", "--format", "npz"])], text=False,
                           env={**os.environ, "ONNXOP_BACKEND": "vulkan"})
    assert done.returncode == 0, done.stderr
    (tmp_path / "out.npz").write_bytes(done.stdout)
    got = np.load(tmp_path / "out.npz")
    assert sorted(got) == ["a", "b"]
    assert got["a"].tobytes() == np.ascontiguousarray(a.T).tobytes() and got["b"].tobytes() == b.tobytes()


def test_format_writes_a_folder_in_another_format(cwd, capsys, rng):
    a = random_array(rng, (2, 3), "float32")
    np.save("a.npy", a)
    os.mkdir("out")
    code, _, err = cli(capsys, "transpose", "a.npy", "-o", "out", "--format", "pb")
    assert code == 0, err
    proto = read_pb(cwd / "out" / "a.pb")
    assert numpy_helper.to_array(proto).tobytes() == np.ascontiguousarray(a.T).tobytes()
    assert not (cwd / "out" / "a.npy").exists()


@pytest.mark.parametrize("args,message", [
    (["-o", "x.npy", "--format", "pb"], "--format pb and -o x.npy disagree; the file's suffix says its format, drop --format"),
    (["--format", "pb"], "--format pb says how -o writes; give -o - or -o FOLDER"),
    (["-o", "-", "--format", "onnx"], "--format must be one of npy, npz, pb, got 'onnx'"),
])
def test_format_refusals(cwd, capsys, args, message):
    np.save("a.npy", np.ones((2, 2), np.float32))
    code, _, err = cli(capsys, "transpose", "a.npy", *args)
    assert code == 2 and error_of(err) == message


def test_npy_stdout_names_the_way_out_for_packed_types(cwd, capsys, monkeypatch):
    save_pb(cwd / "q.pb", np.array([1, 2, 3], dtype=ml_dtypes.int4), "q")
    from onnxop_cli.io import stdio

    monkeypatch.setattr(stdio, "check_stdout", lambda isatty=None: None)  # (pytest's capture may say it is a terminal)
    code, _, err = cli(capsys, "transpose", "q.pb", "-o", "-")
    assert code == 2 and error_of(err).endswith("cannot describe int4 (numpy has no such dtype); add --format pb")
