"""Hostile and broken .npy files and stdin: every one refused in one line on
stderr naming the file and the problem, exit 2, nothing written, nothing
read outside what the user named, nothing executed (no code in onnxop can
unpickle or evaluate).

Cases already covered elsewhere are not repeated here: pickled .npy/.npz,
a truncated .npy body, garbage / wrong-size / negative-dims / unknown-type
.pb files, external data outside the folder, missing or short
(test_formats.py); axis and axes errors, unknown suffixes, missing files,
missing output folders, output == input (test_cli.py); stdin (test_pipes.py).
"""

from __future__ import annotations

import io
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from conftest import error_of
from hostile_inputs import cli, files, matches, npy, header, good_npy
from onnxop_cli.errors import ExitCode, InputError


NPY_CASES = {
    "bad-magic": (b"\x93NUMPZ" + good_npy()[6:],
                  "x.npy: not a .npy file (the magic string is not correct; expected b'\\x93NUMPY', got b'\\x93NUMPZ')"),
    "empty": (b"", "x.npy: not a .npy file (EOF: reading magic string, expected 8 bytes got 0)"),
    "text": (b"hello world, not numpy\n", "x.npy: not a .npy file (the magic string is not correct; expected ..."),
    "truncated-in-length": (good_npy()[:9], "x.npy: .npy header is truncated (it ends inside the header length)"),
    "truncated-header": (good_npy()[:40], "x.npy: .npy header is truncated: it declares 118 bytes, 30 follow"),
    "header-not-a-dict": (npy("[1, 2, 3]\n"), "x.npy: invalid .npy header (Header is not a dictionary: [1, 2, 3])"),
    "header-syntax": (npy("{'descr': '<f4', 'shape': (2,\n"), "x.npy: invalid .npy header (..."),
    "header-extra-key": (npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}\n", bytes(8)),
                         "x.npy: invalid .npy header (Header does not contain the correct keys: "
                         "['descr', 'fortran_order', 'shape', 'x'])"),
    "header-code": (npy(header(descr="__import__('os').system('touch pwned')"), bytes(8)),
                    "x.npy: invalid .npy header (malformed node or string ..."),
    "header-lambda": (npy(header(shape="(lambda: 2)()"), bytes(8)), "x.npy: invalid .npy header (malformed node ..."),
    "fortran-not-bool": (npy(header(fortran="'yes'"), bytes(8)),
                         "x.npy: invalid .npy header (fortran_order is not a valid bool: 'yes')"),
    "shape-not-ints": (npy(header(shape="(2.0,)"), bytes(8)), "x.npy: invalid .npy header (shape is not valid: (2.0,))"),
    "bad-descr": (npy(header(descr="'<x9'"), bytes(8)),
                  "x.npy: invalid .npy header (descr is not a valid dtype descriptor: '<x9')"),
    "v1-header-over-limit": (npy("{" + " " * 20000 + "}\n"),
                             "x.npy: .npy header of 20003 bytes is longer than numpy's limit of 10000 characters; not read"),
    "v2-header-of-4-GiB": (b"\x93NUMPY\x02\x00" + struct.pack("<I", 0xFFFFFFF0) + b"{" + bytes(100),
                           "x.npy: .npy header of 4294967280 bytes is longer than numpy's limit of 10000 characters; not read"),
    "version-9": (npy(header(), bytes(8), version=(9, 0)), "x.npy: unsupported .npy format version 9.0"),
    "huge-shape-tiny-body": (npy(header(shape="(1099511627776,)"), bytes(16)),
                             "x.npy: file is truncated: shape (1099511627776,) of float32 needs 4398046511104 "
                             "data bytes, the file has 16"),
    "shape-overflows-int64": (npy(header(shape="(4294967296, 4294967296)"), bytes(16)),
                              "x.npy: shape (4294967296, 4294967296) is too large: its non-zero dimensions times "
                              "the 4-byte element size exceed 2**63 - 1 bytes"),
    "shape-of-40-digits": (npy(header(shape="(%d,)" % 10**40), bytes(16)),
                           "x.npy: shape (%d,) is too large: its non-zero dimensions times the 4-byte element "
                           "size exceed 2**63 - 1 bytes" % 10**40),
    "zero-dim-with-huge-dims": (npy(header(shape="(0, 4611686018427387904)")),
                                "x.npy: shape (0, 4611686018427387904) is too large: its non-zero dimensions times "
                                "the 4-byte element size exceed 2**63 - 1 bytes"),
    "rank-65": (npy(header(shape="(" + "1, " * 65 + ")"), bytes(4)),
                "x.npy: shape has rank 65; numpy (and so onnxop) supports at most 64 dimensions"),
    "negative-dim": (npy(header(shape="(-2, 3)"), bytes(24)), "x.npy: negative dimension in shape (-2, 3)"),
    "object-field": (npy(header(descr="[('a', '|O')]"), bytes(16)),
                     "x.npy: dtype [('a', 'O')] holds Python objects; onnxop never unpickles"),
    "datetime": (npy(header(descr="'<M8[s]'"), bytes(16)), "x.npy: dtype datetime64[s] has no ONNX tensor type"),
    "timedelta": (npy(header(descr="'<m8[D]'"), bytes(16)), "x.npy: dtype timedelta64[D] has no ONNX tensor type"),
    "structured": (npy(header(descr="[('a', '<i4'), ('b', '<f4')]"), bytes(16)),
                   "x.npy: structured dtype [('a', '<i4'), ('b', '<f4')] has no ONNX tensor type"),
    "subarray": (npy(header(descr="('<i4', (2,))"), bytes(16)),
                 "x.npy: structured dtype ('<i4', (2,)) has no ONNX tensor type"),
    "void": (npy(header(descr="'|V8'"), bytes(16)), "x.npy: dtype |V8 has no ONNX tensor type"),
    "ml_dtypes-saved-by-numpy": (
        npy(header(descr="'|V2'"), bytes(16)),
        "x.npy: dtype |V2 has no ONNX tensor type (numpy saves ml_dtypes' bfloat16, float8 and 4-bit arrays "
        "as bare bytes like these, losing the type: keep those in .pb files)",
    ),
    "longdouble": (npy(header(descr="'<f16'"), bytes(32)), "x.npy: dtype float128 has no ONNX tensor type"),
    "zero-width-text": (npy(header(descr="'<U0'", shape="(1000000000000,)")),
                        "x.npy: text dtype <U0 has zero-width elements; onnxop refuses it"),
    "zero-width-bytes": (npy(header(descr="'|S0'")), "x.npy: text dtype |S0 has zero-width elements; onnxop refuses it"),
}


@pytest.mark.parametrize("content,message", NPY_CASES.values(), ids=NPY_CASES.keys())
@pytest.mark.parametrize("command", [["flatten", "x.npy", "-o", "y.npy"], ["show", "x.npy"]], ids=["flatten", "show"])
def test_hostile_npy_is_refused_in_one_line(cwd, capsys, content, message, command):
    (cwd / "x.npy").write_bytes(content)
    code, out, err = cli(capsys, *command)
    assert code == ExitCode.USAGE and out == ""
    assert matches(error_of(err), message), error_of(err)
    assert files(cwd) == ["x.npy"]  # no output, no temporary file, nothing the header asked for


def test_a_header_longer_than_the_limit_is_not_read():
    """numpy would read the 4 GiB a version 2 header declares before refusing
    it; onnxop reads the 12 bytes of magic and length."""
    from onnxop_cli.io.npy import read_header

    f = _Counting(io.BytesIO(b"\x93NUMPY\x02\x00" + struct.pack("<I", 0xFFFFFFF0) + bytes(1 << 20)))
    with pytest.raises(InputError, match="not read"):
        read_header(f, "x.npy")
    assert f.consumed == 12


class _Counting(io.RawIOBase):
    """A stream that counts the bytes read from it."""

    def __init__(self, inner) -> None:
        self._inner = inner
        self.consumed = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = self._inner.readinto(b)
        self.consumed += n
        return n


def test_version_3_header_is_read(backend, cwd, capsys):
    (cwd / "x.npy").write_bytes(npy(header(shape="(2, 3)"), np.arange(6, dtype="<f4").tobytes(), version=(3, 0)))
    code, _, err = cli(capsys, "flatten", "x.npy", "--axis", "0", "-o", "y.npy", "-b", backend)
    assert code == 0, err
    assert np.load(cwd / "y.npy").tobytes() == np.arange(6, dtype="<f4").tobytes()


def test_zero_size_tensor_with_trailing_garbage_is_read_as_numpy_reads_it(backend, cwd, capsys):
    """(0, 7) float32 declares no data; what follows is ignored, as np.load does."""
    (cwd / "x.npy").write_bytes(npy(header(shape="(0, 7)"), os.urandom(100)))
    code, _, err = cli(capsys, "unsqueeze", "x.npy", "--axes", "0", "-o", "y.npy", "-b", backend)
    assert code == 0, err
    assert np.load(cwd / "x.npy").shape == (0, 7)
    assert np.load(cwd / "y.npy").shape == (1, 0, 7)


@pytest.mark.parametrize(
    "content,message",
    [
        (b"\x93NUMPY\x02\x00" + struct.pack("<I", 0xFFFFFFF0) + bytes(64),
         "-: .npy header of 4294967280 bytes is longer than numpy's limit of 10000 characters; not read"),
        (npy(header(shape="(0, 4611686018427387904)")),
         "-: shape (0, 4611686018427387904) is too large: its non-zero dimensions times the 4-byte element size "
         "exceed 2**63 - 1 bytes"),
        (npy(header(shape="(" + "1, " * 65 + ")"), bytes(4)),
         "-: shape has rank 65; numpy (and so onnxop) supports at most 64 dimensions"),
    ],
    ids=["header-length", "shape-too-large", "rank"],
)
def test_hostile_stdin_is_refused(cwd, capsys, monkeypatch, content, message):
    from test_pipes import FakeStdin

    monkeypatch.setattr("sys.stdin", FakeStdin(content))
    code, _, err = cli(capsys, "flatten", "-", "-o", "y.npy")
    assert code == ExitCode.USAGE and error_of(err) == message
    assert files(cwd) == []


def test_stdin_claiming_a_terabyte_is_not_allocated(cwd, capsys, monkeypatch):
    """Printing needs stdin in memory: it grows with what arrives, so a header
    claiming 1 TiB over 16 bytes fails as truncated, with no 1 TiB allocation."""
    from test_pipes import FakeStdin

    monkeypatch.setattr("sys.stdin", FakeStdin(npy(header(descr="'|u1'", shape="(1099511627776,)"), bytes(16))))
    code, _, err = cli(capsys, "show", "-")
    assert code == ExitCode.USAGE
    assert error_of(err) == "-: stream is truncated: expected 1099511627776 data bytes, the stream has 16"


def test_no_code_in_onnxop_can_unpickle_or_evaluate():
    """The readers above never unpickle because nothing in onnxop can: no
    np.load, no pickle, no eval (numpy's header parser is ast.literal_eval)."""
    import re

    import onnxop_cli

    banned = re.compile(r"\b(np|numpy)\.load\(|\bimport (c?pickle|marshal|shelve)\b|\b(eval|exec|__import__)\(|"
                        r"allow_pickle=True|\bread_array\(")
    found = [
        f"{path.name}:{n}: {line.strip()}"
        for path in Path(onnxop_cli.__file__).parent.rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if banned.search(line)
    ]
    assert found == []
