"""Smaller CLI cases, each from a real process where
the CLI is what is tested (one backend), and through the API for its
parameters."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from commands import run_commands
from conftest import random_array

ENV = {**os.environ, "ONNXOP_BACKEND": "vulkan"}


def onnxop(cwd: Path, *args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "onnxop_cli", *args], cwd=cwd, env=env or ENV,
                          capture_output=True, timeout=300, **kw)


def saved(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def test_stdout_product_complete_with_stderr_on_dev_full(tmp_path, rng):
    x = random_array(rng, (6, 7), np.float32)
    np.save(tmp_path / "x.npy", x)
    with open(tmp_path / "out.npy", "wb") as out, open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "onnxop_cli", "transpose", "x.npy", "-o", "-"], cwd=tmp_path,
                              env=ENV, stdout=out, stderr=full, timeout=300)
    assert done.returncode == 0
    assert (tmp_path / "out.npy").read_bytes() == saved(np.ascontiguousarray(x.T))


@pytest.fixture
def full_tmpdir(tmp_path):
    """A 1 MiB tmpfs as $TMPDIR (root only; fails in CI when it cannot be made)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M", "tmpfs", str(mnt)], capture_output=True)
    if made.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"CI: cannot mount a small tmpfs: {made.stderr!r}")
        pytest.skip(f"cannot mount a small tmpfs: {made.stderr!r}")
    yield mnt
    subprocess.run(["umount", str(mnt)])


def test_full_tmpdir_while_spooling_stdin_names_the_stream_and_the_folder(tmp_path, full_tmpdir):
    np.savez(tmp_path / "w.npz", a=np.random.default_rng(3).integers(0, 255, size=4 << 20, dtype=np.uint8))
    with open(tmp_path / "w.npz", "rb") as stdin:
        done = onnxop(tmp_path, "flatten", "-", "-o", "y.npz", stdin=stdin, env={**ENV, "TMPDIR": str(full_tmpdir)},
                      text=True)
    assert done.returncode == 1
    assert done.stderr == (f"onnxop: error: -: cannot spool the .npz stream on stdin into {full_tmpdir}: "
                           "No space left on device (set TMPDIR to a folder with room)\n")
    assert os.listdir(full_tmpdir) == [] and not (tmp_path / "y.npz").exists()


POISONS = ["garbage", "300", "-1", "0x", "1.5"]


def test_a_poison_that_is_no_byte_is_a_usage_error_and_a_byte_works(tmp_path, rng):
    """Each value no byte is refused by a copy and a gather; a byte poisons and the output is right.
    What the commands print and write is under test: they run in one process, each with its
    $ONNXOP_POISON (tests/commands.py)."""
    x = random_array(rng, (3, 4), np.int16)
    np.save(tmp_path / "x.npy", x)
    commands = (["flatten", "x.npy", "-o", "y.npy"], ["transpose", "x.npy", "-o", "y.npy"])  # a copy, a gather
    cases = [(value, command) for value in POISONS for command in commands]
    done = run_commands([(tmp_path, command, None, {"ONNXOP_POISON": value}) for value, command in cases]
                        + [(tmp_path, ["transpose", "x.npy", "-o", "t.npy"], None, {"ONNXOP_POISON": "0xA5"})], env=ENV)
    assert len(done) == len(cases) + 1
    for (value, command), r in zip(cases, done):
        assert r.returncode == 2, (value, command, r.stderr)
        assert r.stderr == (f"onnxop: error: $ONNXOP_POISON must be a byte value 0..255 (such as 0xAB), "
                            f"got {value!r}\n"), (value, command)
        assert not (tmp_path / "y.npy").exists()
    assert done[-1].returncode == 0, done[-1].stderr
    assert np.load(tmp_path / "t.npy").tobytes() == np.ascontiguousarray(x.T).tobytes()


API_REFUSALS = [
    ("reshape", {"opset": "13"}, TypeError, "opset must be an integer, got '13'"),
    ("reshape", {"opset": 13.9}, TypeError, "opset must be an integer, got 13.9"),
    ("reshape", {"opset": True}, TypeError, "opset must be an integer, got True"),
    ("reshape", {"opset": 99}, ValueError, "opset 99 is out of range [1, 25]"),
    ("reshape", {"backend": 1}, TypeError, "backend must be a string or None, got 1"),
    ("reshape", {"engine": 3}, TypeError, "engine must be a string or None, got 3"),
    ("reshape", {"backend": "cuda"}, ValueError, "unknown backend 'cuda'"),
    ("reshape", {"allowzero": "yes"}, TypeError, "allowzero must be 0 or 1, got 'yes'"),
    ("reshape", {"allowzero": 2}, ValueError, "allowzero must be 0 or 1, got 2"),
    ("transpose", {"opset": "13"}, TypeError, "opset must be an integer, got '13'"),
    ("flatten", {"opset": 13.9}, TypeError, "opset must be an integer, got 13.9"),
    ("unsqueeze", {"backend": 1}, TypeError, "backend must be a string or None, got 1"),
]


@pytest.mark.parametrize("fn, kw, kind, message", API_REFUSALS, ids=lambda v: str(v))
def test_api_parameters_of_the_wrong_type_or_value(fn, kw, kind, message):
    from onnxop_cli import api
    from onnxop_cli.errors import UsageError
    from onnxop_cli.ops import LATEST_OPSET

    message = message.replace("[1, 25]", f"[1, {LATEST_OPSET}]")
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    call = {"reshape": lambda: api.reshape(x, [3, 2], **kw), "transpose": lambda: api.transpose(x, **kw),
            "flatten": lambda: api.flatten(x, **kw), "unsqueeze": lambda: api.unsqueeze(x, [0], **kw)}[fn]
    with pytest.raises(kind) as caught:
        call()
    assert str(caught.value).startswith(message)
    assert isinstance(caught.value, UsageError)  # still the project's error, exit code 2


def test_api_allowzero_takes_0_1_and_bools(backend="vulkan"):
    from onnxop_cli import api

    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    for value in (0, 1, True, False, np.int64(1)):
        assert api.reshape(x, [3, 2], allowzero=value, backend=backend).tobytes() == x.reshape(3, 2).tobytes()


def test_bzip2_and_lzma_members_numpy_reads_are_read(tmp_path, rng):
    """Zeros compress past deflate's 1032x (bzip2 ~20,000x, LZMA ~3,600x on
    1 MiB): such members were refused as zip bombs; numpy reads them. Each
    method's archive in a folder of its own, the two commands in one process
    (tests/commands.py)."""
    a = np.zeros((1024, 256), dtype=np.float32)
    a[3, 5] = -0.0
    b = random_array(rng, (7, 9), np.int16)
    methods = {"bzip2": zipfile.ZIP_BZIP2, "lzma": zipfile.ZIP_LZMA}
    for name, method in methods.items():
        (tmp_path / name).mkdir()
        with zipfile.ZipFile(tmp_path / name / "w.npz", "w", compression=method) as z:
            z.writestr("a.npy", saved(a))
            z.writestr("b.npy", saved(b))
        with np.load(tmp_path / name / "w.npz") as z:
            assert z["a"].tobytes() == a.tobytes(), name
    done = run_commands([(tmp_path / name, ["transpose", "w.npz", "-o", "t.npz"]) for name in methods], env=ENV)
    assert len(done) == len(methods)
    for name, r in zip(methods, done):
        assert r.returncode == 0, (name, r.stderr)
        with np.load(tmp_path / name / "t.npz") as t:
            assert t["a"].tobytes() == np.ascontiguousarray(a.T).tobytes(), name
            assert t["b"].tobytes() == np.ascontiguousarray(b.T).tobytes(), name


def test_a_member_declaring_more_than_its_method_can_expand_is_refused(tmp_path):
    """Still bounded: an LZMA member whose directory declares 20,000x its
    compressed size is refused before anything is inflated."""
    with zipfile.ZipFile(tmp_path / "w.npz", "w", compression=zipfile.ZIP_LZMA) as z:
        z.writestr("a.npy", saved(np.arange(64, dtype=np.int64)))
    raw = bytearray((tmp_path / "w.npz").read_bytes())
    info = zipfile.ZipFile(tmp_path / "w.npz").infolist()[0]
    central = raw.rindex(b"PK\x01\x02")
    lie = info.compress_size * 20_000
    raw[central + 24 : central + 28] = lie.to_bytes(4, "little")  # the central directory's uncompressed size
    (tmp_path / "w.npz").write_bytes(bytes(raw))
    done = onnxop(tmp_path, "show", "w.npz", text=True)
    assert done.returncode == 2
    assert done.stderr.endswith("more than 16000x (LZMA's limit); refusing a likely zip bomb\n"), done.stderr
