"""Hostile and broken inputs: every one refused in one line on
stderr naming the file and the problem, exit 2, nothing written, nothing
read outside what the user named, nothing executed; and nothing lost when a
run fails part-way (a disk that fills, Ctrl-C, a GPU that runs out of memory
or is lost): no new file, no temporary file, an existing output untouched.

Cases already covered elsewhere are not repeated here: pickled .npy/.npz,
a truncated .npy body, garbage / wrong-size / negative-dims / unknown-type
.pb files, external data outside the folder, missing or short
(test_formats.py); axis and axes errors, unknown suffixes, missing files,
missing output folders, output == input (test_cli.py); stdin (test_pipes.py).
"""

from __future__ import annotations

import errno
import io
import logging
import os
import struct
import threading
import zipfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto

from conftest import error_of, random_array
from onnxop_cli.cli.main import run
from onnxop_cli.errors import ExitCode, GpuError, InputError
from references import load_pb, same_bits, to_array

TIMEOUT = 60  # seconds: a run that takes longer is a hang


def cli(capsys, *argv, timeout: float = TIMEOUT):
    """Run onnxop in-process, in a thread, so that a hang fails the test
    instead of stalling the suite."""
    result: list = []
    thread = threading.Thread(target=lambda: result.append(run([str(x) for x in argv])), daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"onnxop {' '.join(map(str, argv))} hung for {timeout} s"
    out, err = capsys.readouterr()
    return result[0], out, err


@pytest.fixture
def unraisable(monkeypatch) -> list:
    """What Python would print as 'Exception ignored in ...' (a destructor
    failing), collected after a garbage collection at the end of the test."""
    import gc
    import sys

    seen: list = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(f"{u.exc_type.__name__}: {u.exc_value}"))
    yield seen
    gc.collect()
    assert seen == [], seen


def files(folder: Path) -> list[str]:
    """Every file under ``folder`` (temporary files included), relative."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if not p.is_dir())


def matches(message: str, expected: str) -> bool:
    """Exact, or a prefix when ``expected`` ends with '...' (the rest quotes
    a library's own words)."""
    return message.startswith(expected[:-3]) if expected.endswith("...") else message == expected


# ----------------------------------------------------------------- .npy


def npy(header: str, body: bytes = b"", version: tuple[int, int] = (1, 0)) -> bytes:
    """An .npy file with any header text (no padding, no checks)."""
    h = header.encode("utf8" if version == (3, 0) else "latin1")
    length = struct.pack("<H", len(h)) if version == (1, 0) else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes(version) + length + h + body


def header(descr: str = "'<f4'", fortran: str = "False", shape: str = "(2,)") -> str:
    return "{'descr': %s, 'fortran_order': %s, 'shape': %s, }\n" % (descr, fortran, shape)


def good_npy() -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    return buf.getvalue()


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


# ----------------------------------------------------------------- .npz


def zip_with(members: dict[str, bytes], compression=zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def patch_directory(raw: bytes, **fields) -> bytes:
    """Overwrite fields of the (first) central directory entry: flags,
    method, compress_size, file_size; and of the first local header too for
    flags and method (zipfile reads those from both)."""
    out = bytearray(raw)
    cd = out.rfind(b"PK\x01\x02")
    offsets = {"flags": (8, "<H"), "method": (10, "<H"), "compress_size": (20, "<I"), "file_size": (24, "<I")}
    for name, value in fields.items():
        at, fmt = offsets[name]
        struct.pack_into(fmt, out, cd + at, value)
        if name in ("flags", "method"):
            struct.pack_into(fmt, out, at - 2, value)
    return bytes(out)


def duplicate_names() -> bytes:
    buf = io.BytesIO()
    with pytest.warns(UserWarning, match="Duplicate name"), zipfile.ZipFile(buf, "w") as z:
        z.writestr("a.npy", good_npy())
        z.writestr("a.npy", npy(header(descr="'|i1'", shape="(5,)"), bytes(5)))
    return buf.getvalue()


def deflated_zeros() -> bytes:
    """One deflated member: an .npy of 4 MiB of zeros (a ratio near 1000x)."""
    buf = io.BytesIO()
    np.save(buf, np.zeros(4 << 20, np.uint8))
    return zip_with({"a.npy": buf.getvalue()}, zipfile.ZIP_DEFLATED)


def corrupt_deflate() -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.random.default_rng(0).random(1000).astype(np.float32))
    raw = bytearray(zip_with({"a.npy": buf.getvalue()}, zipfile.ZIP_DEFLATED))
    for i in range(300, 320):
        raw[i] ^= 0x55
    return bytes(raw)


def bad_utf8_name() -> bytes:
    raw = bytearray(patch_directory(zip_with({"a.npy": good_npy()}), flags=0x800))
    raw[raw.rfind(b"PK\x01\x02") + 46] = 0xFF
    return bytes(raw)


def empty_member_name() -> bytes:
    """A member whose name is empty (zipfile cannot write one): the one-byte
    name 'a' becomes a byte of the extra field, in both headers."""
    raw = bytearray(zip_with({"a": good_npy()}))
    cd = raw.rfind(b"PK\x01\x02")
    for name_len, extra_len in ((26, 28), (cd + 28, cd + 30)):
        struct.pack_into("<HH", raw, name_len, 0, struct.unpack_from("<H", raw, extra_len)[0] + 1)
    return bytes(raw)


NPZ_CASES = {
    "member-not-npy": (lambda: zip_with({"readme.txt": b"hello world\n"}),
                       "z.npz[readme.txt]: not a .npy file (the magic string is not correct; ..."),
    "duplicate-names": (duplicate_names,
                        "z.npz: the archive holds more than one member named 'a'; refusing an ambiguous archive"),
    "same-name-with-and-without-suffix": (lambda: zip_with({"a.npy": good_npy(), "a": good_npy()}),
                                          "z.npz: the archive holds more than one member named 'a'; "
                                          "refusing an ambiguous archive"),
    "stored-size-lie": (lambda: patch_directory(zip_with({"a.npy": good_npy()}), file_size=1 << 30),
                        "z.npz[a]: stored member declares 1073741824 bytes but holds 224"),
    "zip-bomb-ratio": (lambda: patch_directory(deflated_zeros(), file_size=0xFFFFFFF0),
                       "z.npz[a]: member declares 4294967280 bytes from ..."),
    "compressed-size-beyond-archive": (lambda: patch_directory(zip_with({"a.npy": good_npy()}),
                                                               compress_size=1 << 30, file_size=1 << 30),
                                       "z.npz[a]: member declares 1073741824 compressed bytes; the archive has ..."),
    "header-length-bomb": (lambda: zip_with({"a.npy": b"\x93NUMPY\x02\x00" + struct.pack("<I", 0xFFFFFF00)
                                             + bytes(8 << 20)}, zipfile.ZIP_DEFLATED),
                           "z.npz[a]: .npy header of 4294967040 bytes is longer than numpy's limit of 10000 "
                           "characters; not read"),
    "not-utf8-name": (bad_utf8_name,
                      "z.npz: not an .npz file ('utf-8' codec can't decode byte 0xff in position 0: invalid start byte)"),
    "encrypted": (lambda: patch_directory(zip_with({"a.npy": good_npy()}), flags=1),
                  "z.npz[a]: cannot read the member (File <ZipInfo filename='a.npy' ..."),
    "unknown-method": (lambda: patch_directory(zip_with({"a.npy": good_npy()}), method=99),
                       "z.npz[a]: cannot read the member (That compression method is not supported)"),
    "truncated-zip": (lambda: zip_with({"a.npy": good_npy()})[:-30], "z.npz: not an .npz file (File is not a zip file)"),
    "bytes-before-the-zip": (lambda: b"\x00" + zip_with({"a.npy": good_npy()}),  # found by test_fuzz.py
                             "z.npz: not an .npz file (it does not start with a zip header, PK\\x03\\x04)"),
    "empty-member-name": (empty_member_name,  # found by test_fuzz.py (an IndexError in zipfile)
                          "z.npz: a member has an empty name"),
    "member-named-only-.npy": (lambda: zip_with({".npy": good_npy()}), "z.npz: a member has an empty name"),
    "npy-then-zip-polyglot": (lambda: good_npy() + zip_with({"a.npy": good_npy()}),
                              "z.npz: not an .npz file (it does not start with a zip header, PK\\x03\\x04)"),
}


@pytest.mark.parametrize("make,message", NPZ_CASES.values(), ids=NPZ_CASES.keys())
def test_hostile_npz_is_refused_in_one_line(cwd, capsys, make, message):
    (cwd / "z.npz").write_bytes(make())
    code, out, err = cli(capsys, "flatten", "z.npz", "-o", "y.npz")
    assert code == ExitCode.USAGE and out == ""
    assert matches(error_of(err), message), error_of(err)
    assert files(cwd) == ["z.npz"]


def test_the_zip_bomb_check_lets_real_compressed_zeros_through(cwd):
    """np.savez_compressed of zeros is close to deflate's limit, not over it."""
    from onnxop_cli.io.npz import MAX_RATIO, read_npz

    (cwd / "z.npz").write_bytes(deflated_zeros())
    info = zipfile.ZipFile(cwd / "z.npz").infolist()[0]
    assert info.file_size > 900 * info.compress_size  # really near the limit
    assert info.file_size <= MAX_RATIO * info.compress_size
    (tensor,) = read_npz(cwd / "z.npz")
    assert tensor.shape == (4 << 20,)


def test_a_header_length_bomb_is_not_inflated(cwd, capsys, monkeypatch):
    """The member's .npy header claims 4 GiB; onnxop inflates its 12 bytes
    of magic and length, not the 64 MiB that follow (nor 4 GiB)."""
    (cwd / "z.npz").write_bytes(
        zip_with({"a.npy": b"\x93NUMPY\x02\x00" + struct.pack("<I", 0xFFFFFF00) + bytes(64 << 20)}, zipfile.ZIP_DEFLATED)
    )
    inflated = []
    real_read = zipfile.ZipExtFile.read

    def counting_read(self, n=-1):
        data = real_read(self, n)
        inflated.append(len(data))
        return data

    monkeypatch.setattr(zipfile.ZipExtFile, "read", counting_read)
    code, _, err = cli(capsys, "show", "z.npz")
    assert code == ExitCode.USAGE and "not read" in error_of(err)
    assert sum(inflated) <= 12


def test_corrupt_deflate_data_is_one_line_and_leaves_nothing(backend, cwd, capsys, unraisable):
    """The damage is found while streaming (a CRC or zlib error): the
    partial .npz output goes, and no 'Exception ignored' follows the line."""
    (cwd / "z.npz").write_bytes(corrupt_deflate())
    code, out, err = cli(capsys, "flatten", "z.npz", "-o", "y.npz", "-b", backend)
    assert code == ExitCode.USAGE
    assert error_of(err).startswith("z.npz[a]: cannot read the member (")
    assert files(cwd) == ["z.npz"]


def test_member_shorter_than_its_directory_entry_is_refused_mid_stream(backend, cwd, capsys):
    """A deflated member whose directory entry (and .npy header) claim more
    than it inflates to: found while streaming; the existing output stays."""
    buf = io.BytesIO()
    np.save(buf, np.zeros(1000, np.float32))
    raw = buf.getvalue().replace(b"(1000,)", b"(2000,)")  # the header claims 8000 data bytes
    z = zip_with({"a.npy": raw}, zipfile.ZIP_DEFLATED)
    (cwd / "z.npz").write_bytes(patch_directory(z, file_size=len(raw) + 4000))
    (cwd / "y.npz").write_bytes(b"precious")
    code, _, err = cli(capsys, "flatten", "z.npz", "-o", "y.npz", "-b", backend)
    assert code == ExitCode.USAGE
    assert error_of(err) == "z.npz[a]: member is truncated: expected 8000 data bytes, it ends 4000 bytes early"
    assert (cwd / "y.npz").read_bytes() == b"precious"
    assert files(cwd) == ["y.npz", "z.npz"]


@pytest.mark.parametrize("name", ["../../evil.npy", "/abs/evil.npy", "sub/../../../evil.npy", "C:\\evil.npy"])
def test_member_names_that_look_like_paths_never_become_paths(backend, cwd, capsys, name):
    """onnxop never extracts: a member's name is data, kept as it is in an
    .npz output, and nothing is written anywhere but the output file."""
    (cwd / "in").mkdir()
    (cwd / "in" / "z.npz").write_bytes(zip_with({name: good_npy()}))
    before = files(cwd.parent)
    code, out, err = cli(capsys, "flatten", "in/z.npz", "--axis", "0", "-o", "in/y.npz", "-b", backend)
    assert code == 0, err
    assert files(cwd.parent) == sorted(before + [f"{cwd.name}/in/y.npz"])
    assert not Path("/abs").exists() and not Path("/evil.npy").exists()
    with zipfile.ZipFile(cwd / "in" / "y.npz") as z:
        assert z.namelist() == [name]
    with np.load(cwd / "in" / "y.npz", allow_pickle=False) as y:
        assert y[name.removesuffix(".npy")].tobytes() == np.arange(24, dtype=np.float32).tobytes()


# ----------------------------------------------------------------- .pb


def pb(**fields) -> bytes:
    return TensorProto(**fields).SerializeToString()


PB_CASES = {
    "dims-overflow-int64": (pb(dims=[2**62, 2**62], data_type=1, raw_data=bytes(8)),
                            "x.pb: shape (4611686018427387904, 4611686018427387904) is too large: its non-zero "
                            "dimensions times the 4-byte element size exceed 2**63 - 1 bytes"),
    "zero-dim-with-huge-dims": (pb(dims=[0, 2**62], data_type=1),
                                "x.pb: shape (0, 4611686018427387904) is too large: its non-zero dimensions times the "
                                "4-byte element size exceed 2**63 - 1 bytes"),
    "zero-dim-strings": (pb(dims=[0, 2**61], data_type=8),
                         "x.pb: shape (0, 2305843009213693952) is too large: its non-zero dimensions times the "
                         "8-byte element size exceed 2**63 - 1 bytes"),
    "rank-65": (pb(dims=[1] * 65, data_type=1, raw_data=bytes(4)),
                "x.pb: shape has rank 65; numpy (and so onnxop) supports at most 64 dimensions"),
    "huge-dims-typed": (pb(dims=[2**40], data_type=7, int64_data=[1, 2]),
                        "x.pb: int64_data holds 2 values; dims [1099511627776] of int64 need 1099511627776"),
    "unknown-type-99": (pb(dims=[2], data_type=99, raw_data=bytes(8)),
                        "x.pb: data type 99 (99) is not an ONNX tensor type of opset 25"),
    "truncated": (pb(dims=[4], data_type=1, raw_data=bytes(16))[:-5],
                  "x.pb: not a serialized ONNX TensorProto (Error parsing message with type 'onnx.TensorProto': ..."),
    "string-in-raw-data": (pb(dims=[2], data_type=8, raw_data=b"ab"),
                           "x.pb: a string tensor keeps its values in string_data"),
}


@pytest.mark.parametrize("content,message", PB_CASES.values(), ids=PB_CASES.keys())
def test_hostile_pb_is_refused_in_one_line(cwd, capsys, content, message):
    (cwd / "x.pb").write_bytes(content)
    code, out, err = cli(capsys, "flatten", "x.pb", "-o", "y.pb")
    assert code == ExitCode.USAGE and out == ""
    assert matches(error_of(err), message), error_of(err)
    assert files(cwd) == ["x.pb"]


def test_a_pb_larger_than_protobuf_can_parse_is_not_read(cwd, capsys, monkeypatch):
    """A sparse 3 GiB file: refused from its size, not read into memory."""
    with open(cwd / "x.pb", "wb") as f:
        f.truncate(3 << 30)
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail(f"{self} was read"))
    code, _, err = cli(capsys, "flatten", "x.pb", "-o", "y.pb")
    assert code == ExitCode.USAGE
    assert error_of(err) == (
        "x.pb: 3221225472 bytes is more than a TensorProto can hold (protobuf messages stay under 2 GiB); "
        "a larger tensor keeps its data in an external file"
    )
    assert files(cwd) == ["x.pb"]


def test_external_data_keys_are_never_set_as_attributes(backend, cwd, capsys, rng):
    """Unknown keys (older onnx set every key as an attribute of its
    ExternalDataInfo) are ignored; the known ones are read."""
    x = random_array(rng, (4,), "float32")
    (cwd / "w.bin").write_bytes(x.tobytes())
    proto = TensorProto(name="w", data_type=1, dims=[4], data_location=TensorProto.EXTERNAL)
    for k, v in [("__class__", "str"), ("__dict__", "x"), ("location", "w.bin"), ("length", "16")]:
        proto.external_data.add(key=k, value=v)
    (cwd / "w.pb").write_bytes(proto.SerializeToString())
    code, _, err = cli(capsys, "flatten", "w.pb", "--axis", "0", "-o", "y.npy", "-b", backend)
    assert code == 0, err
    assert np.load(cwd / "y.npy").tobytes() == x.tobytes()


def test_output_may_replace_its_own_pb_input(backend, cwd, capsys, rng):
    x = random_array(rng, (2, 3, 4), "int16")
    from onnx import numpy_helper

    (cwd / "x.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    code, _, err = cli(capsys, "flatten", "x.pb", "-o", "x.pb", "-b", backend)
    assert code == 0, err
    assert same_bits(to_array(load_pb(cwd / "x.pb")), x.reshape(2, 12))
    assert files(cwd) == ["x.pb"]


# ----------------------------------------------------------------- arguments


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


def test_member_names_reach_the_terminal_escaped(backend, cwd, capsys):
    (cwd / "z.npz").write_bytes(zip_with({"\x1b]0;pwned\x07a\nb.npy": good_npy()}))
    code, out, err = cli(capsys, "flatten", "z.npz", "-o", "y.npz", "-b", backend)
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out
    assert out == (
        "Flatten: \\x1b]0;pwned\\x07a\\nb (2, 3, 4) float32 -> \\x1b]0;pwned\\x07a\\nb (2, 12) float32, wrote y.npz\n"
    )
    with zipfile.ZipFile(cwd / "y.npz") as z:  # the name itself is kept, byte for byte
        assert z.namelist() == ["\x1b]0;pwned\x07a\nb.npy"]


# ----------------------------------------------------------------- nothing lost


@pytest.fixture
def streamed(cwd, rng, monkeypatch):
    """A 64 KiB tensor that streams in 16 chunks of 4 KiB, so the writer
    thread and the reader overlap as they do on large files."""
    import onnxop_cli.gpu.copy as copy_mod

    monkeypatch.setattr(copy_mod, "DEFAULT_CHUNK", 4096)
    x = random_array(rng, (16, 1024), "float32")
    np.save(cwd / "x.npy", x)
    (cwd / "y.npy").write_bytes(b"precious")
    return x


@contextmanager
def failing_sink(monkeypatch, at_chunk: int, error: BaseException):
    """The .npy writer's sink raises ``error`` on chunk ``at_chunk``; yields
    the names of the threads it ran in."""
    from onnxop_cli.io import npy as npy_mod

    real = npy_mod.NpyWriter.tensor
    threads: list[str] = []

    @contextmanager
    def tensor(self, name, shape, dtype):
        with real(self, name, shape, dtype) as write:
            calls = 0

            def sink(chunk):
                nonlocal calls
                calls += 1
                threads.append(threading.current_thread().name)
                if calls == at_chunk:
                    raise error
                write(chunk)

            yield sink

    monkeypatch.setattr(npy_mod.NpyWriter, "tensor", tensor)
    yield threads


@pytest.mark.every_backend  # the engine's streaming and its failures, on each engine and adapter
def test_disk_full_in_the_writer_thread_leaves_the_output_untouched(backend, streamed, cwd, capsys, monkeypatch):
    with failing_sink(monkeypatch, 3, OSError(errno.ENOSPC, "No space left on device")) as threads:
        code, _, err = cli(capsys, "flatten", "x.npy", "-o", "y.npy", "-b", backend)
    assert threads[-1] == "onnxop-writer"  # the failure happened where it would on a big file
    assert code == ExitCode.ERROR
    assert error_of(err) == "y.npy: cannot write: No space left on device"
    assert (cwd / "y.npy").read_bytes() == b"precious"
    assert files(cwd) == ["x.npy", "y.npy"]


@pytest.mark.every_backend  # the engine's streaming and its failures, on each engine and adapter
def test_ctrl_c_in_the_writer_thread_leaves_the_output_untouched(backend, streamed, cwd, capsys, monkeypatch):
    with failing_sink(monkeypatch, 5, KeyboardInterrupt()) as threads:
        code, _, err = cli(capsys, "flatten", "x.npy", "-o", "y.npy", "-b", backend)
    assert threads[-1] == "onnxop-writer"
    assert code == ExitCode.INTERRUPTED and error_of(err) == "interrupted"
    assert (cwd / "y.npy").read_bytes() == b"precious"
    assert files(cwd) == ["x.npy", "y.npy"]


@pytest.mark.every_backend  # the engine's streaming and its failures, on each engine and adapter
def test_ctrl_c_while_reading_mid_stream_leaves_the_output_untouched(backend, streamed, cwd, capsys, monkeypatch):
    from onnxop_cli.core.tensor import FileBytes

    real = FileBytes.readinto
    calls = []

    def readinto(self, offset, out):
        calls.append(offset)
        if len(calls) == 4:
            raise KeyboardInterrupt
        real(self, offset, out)

    monkeypatch.setattr(FileBytes, "readinto", readinto)
    code, _, err = cli(capsys, "flatten", "x.npy", "-o", "y.npy", "-b", backend)
    assert code == ExitCode.INTERRUPTED and error_of(err) == "interrupted"
    assert (cwd / "y.npy").read_bytes() == b"precious"
    assert files(cwd) == ["x.npy", "y.npy"]


@pytest.mark.every_backend  # the engine's streaming and its failures, on each engine and adapter
def test_a_failed_run_over_its_own_input_leaves_the_input_untouched(backend, streamed, cwd, capsys, monkeypatch):
    before = (cwd / "x.npy").read_bytes()
    with failing_sink(monkeypatch, 7, OSError(errno.EIO, "Input/output error")):
        code, _, err = cli(capsys, "flatten", "x.npy", "-o", "x.npy", "-b", backend)
    assert code == ExitCode.ERROR and error_of(err) == "x.npy: cannot write: Input/output error"
    assert (cwd / "x.npy").read_bytes() == before
    assert files(cwd) == ["x.npy", "y.npy"]


def test_npz_output_whose_second_member_fails_leaves_the_output_untouched(
    backend, cwd, capsys, rng, monkeypatch, unraisable
):
    import onnxop_cli.gpu as gpu_pkg

    np.savez(cwd / "m.npz", a=random_array(rng, (3, 4), "float32"), b=random_array(rng, (5,), "int32"))
    (cwd / "out.npz").write_bytes(b"precious")
    real = gpu_pkg.copy_through_kernel
    calls = []

    def second_fails(*a, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise GpuError("WebGPU dispatch failed on test adapter: simulated")
        return real(*a, **kw)

    monkeypatch.setattr(gpu_pkg, "copy_through_kernel", second_fails)
    code, out, err = cli(capsys, "flatten", "m.npz", "-o", "out.npz", "-b", backend)
    assert code == ExitCode.ERROR
    assert error_of(err) == "WebGPU dispatch failed on test adapter: simulated"  # and no 'Exception ignored'
    assert (cwd / "out.npz").read_bytes() == b"precious"
    assert files(cwd) == ["m.npz", "out.npz"]


# ------------------------------------------------- a device out of memory or lost


@pytest.fixture
def own_gpu(backend, monkeypatch):
    """A Gpu of its own for this test (its buffers, its device), with wgpu's
    captured messages starting empty: what a test does to it cannot reach
    the shared device the other tests use."""
    from onnxop_cli.gpu import device

    from onnxop_cli.gpu import choose

    monkeypatch.setattr(device._log_capture, "messages", [])
    gpu = device.Gpu.open(*reversed(device.resolve(backend)))
    monkeypatch.setitem(device._gpus, backend, gpu)
    # the copy kernel is chosen now (measured, or read from the cache), so that the readbacks the
    # tests below count or fail are the copy's own whatever ran before (run alone, the first was
    # the calibration's)
    choose.choice(gpu)
    return gpu


def _buffer_class(gpu):
    """The engine's buffer class, whose map_async the tests below replace."""
    if gpu.engine_name == "dawn":
        from onnxop_cli.gpu.engines.dawn.engine import Buffer

        return Buffer
    from wgpu.backends.wgpu_native import GPUBuffer

    return GPUBuffer


class _Device:
    """A device whose buffer allocations fail as an exhausted GPU's do."""

    def __init__(self, real) -> None:
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def create_buffer(self, **kw):
        import wgpu

        raise wgpu.GPUOutOfMemoryError(f"Not enough memory left: allocating {kw.get('size')} bytes")


class _NeverAnswered:
    """A map promise that never resolves (a device gone silent)."""

    def __init__(self) -> None:
        self._thread_event = threading.Event()

    def sync_wait(self):  # pragma: no cover - Gpu.wait gives up first
        self._thread_event.wait()

    def wait(self, timeout):  # as Dawn's promises are waited on
        return self._thread_event.wait(timeout)


@pytest.fixture
def stalled_readback(own_gpu, monkeypatch):
    """From the third readback on, maps are never answered."""
    import wgpu

    GPUBuffer = _buffer_class(own_gpu)
    real = GPUBuffer.map_async
    reads = []

    def map_async(self, mode, offset=0, size=None):
        if int(mode) & int(wgpu.MapMode.READ):
            reads.append(1)
            if len(reads) >= 3:
                return _NeverAnswered()
        return real(self, mode, offset, size)

    monkeypatch.setattr(GPUBuffer, "map_async", map_async)


@pytest.mark.every_backend  # the engine's streaming and its failures, on each engine and adapter
def test_out_of_gpu_memory_is_one_line_exit_1(own_gpu, streamed, cwd, capsys):
    own_gpu.device = _Device(own_gpu.device)
    code, _, err = cli(capsys, "flatten", "x.npy", "-o", "y.npy", "-b", own_gpu.info.our_backend)
    assert code == ExitCode.ERROR
    assert matches(
        error_of(err),
        f"WebGPU allocating copy buffers out of GPU memory on {own_gpu.name}: Not enough memory left: allocating ...",
    ), err
    assert (cwd / "y.npy").read_bytes() == b"precious"
    assert files(cwd) == ["x.npy", "y.npy"]


@pytest.mark.every_backend  # the engine's streaming and its failures, on each engine and adapter
def test_a_device_reported_lost_mid_stream_ends_the_wait(own_gpu, streamed, stalled_readback, cwd, capsys):
    """wgpu-native reports the loss through wgpu's logger; the map it was
    waiting for never comes. onnxop stops waiting when the report comes."""
    timer = threading.Timer(
        0.3, lambda: logging.getLogger("wgpu").error("The WGPU device was lost (Unknown):\nVK_ERROR_DEVICE_LOST")
    )
    timer.start()
    try:
        code, _, err = cli(capsys, "flatten", "x.npy", "-o", "y.npy", "-b", own_gpu.info.our_backend, timeout=20)
    finally:
        timer.cancel()
    assert code == ExitCode.ERROR
    # the writer (waiting for the readback) or the reader (its next upload or dispatch) notices first
    assert error_of(err) in [
        f"WebGPU device lost while {step} on {own_gpu.name}: The WGPU device was lost (Unknown):"
        for step in ("readback", "upload", "dispatch")
    ], err
    assert (cwd / "y.npy").read_bytes() == b"precious"
    assert files(cwd) == ["x.npy", "y.npy"]


@pytest.mark.every_backend  # the engine's streaming and its failures, on each engine and adapter
def test_a_device_that_goes_silent_times_out(own_gpu, streamed, stalled_readback, cwd, capsys, monkeypatch):
    monkeypatch.setenv("ONNXOP_GPU_TIMEOUT", "0.5")
    code, _, err = cli(capsys, "flatten", "x.npy", "-o", "y.npy", "-b", own_gpu.info.our_backend, timeout=20)
    assert code == ExitCode.ERROR
    assert error_of(err) == (
        f"WebGPU readback did not finish within 0.5 s on {own_gpu.name}; the device is hung or lost "
        "($ONNXOP_GPU_TIMEOUT sets the limit)"
    )
    assert (cwd / "y.npy").read_bytes() == b"precious"
    assert files(cwd) == ["x.npy", "y.npy"]


class _Rejected:
    """A map promise that fails, as wgpu-native's do on a lost device."""

    def __init__(self) -> None:
        self._thread_event = threading.Event()
        self._thread_event.set()

    def sync_wait(self):
        raise RuntimeError("Could not map buffer (3 : Device is lost).")

    def wait(self, timeout):
        return True


@pytest.mark.every_backend  # the engine's streaming and its failures, on each engine and adapter
def test_a_map_that_fails_is_one_line_exit_1(own_gpu, streamed, cwd, capsys, monkeypatch):
    import wgpu

    GPUBuffer = _buffer_class(own_gpu)
    real = GPUBuffer.map_async
    reads = []

    def map_async(self, mode, offset=0, size=None):
        promise = real(self, mode, offset, size)
        if int(mode) & int(wgpu.MapMode.READ):
            reads.append(1)
            if len(reads) == 2:  # the real map completes (and is undone); the caller sees a failure
                promise.sync_wait()
                self.unmap()
                return _Rejected()
        return promise

    monkeypatch.setattr(GPUBuffer, "map_async", map_async)
    # Objects left by earlier tests in this worker are collected now, not by a collection
    # that happens to run in the copy's writer thread mid-failure: wgpu-native aborted the
    # whole worker once there (CI, gl), releasing another device's object from that thread.
    import gc

    gc.collect()
    gc.disable()
    try:
        code, _, err = cli(capsys, "flatten", "x.npy", "-o", "y.npy", "-b", own_gpu.info.our_backend, timeout=20)
    finally:
        gc.enable()
    assert code == ExitCode.ERROR
    assert error_of(err) == f"WebGPU readback failed on {own_gpu.name}: Could not map buffer (3 : Device is lost)."
    assert (cwd / "y.npy").read_bytes() == b"precious"
    assert files(cwd) == ["x.npy", "y.npy"]


def test_a_bad_timeout_setting_is_a_usage_error(backend, streamed, cwd, capsys, monkeypatch):
    monkeypatch.setenv("ONNXOP_GPU_TIMEOUT", "soon")
    from onnxop_cli.gpu.device import gpu_timeout
    from onnxop_cli.errors import UsageError

    with pytest.raises(UsageError, match=r"\$ONNXOP_GPU_TIMEOUT must be a positive number of seconds, got 'soon'"):
        gpu_timeout()


# ----------------------------------------------------------------- found by tests/cli/test_fuzz.py


@pytest.mark.parametrize(
    "codes,message",
    [
        ([0x41, 0xD800, 0x42], "x.npy: a string holds U+D800, which is no Unicode character (ONNX strings are UTF-8)"),
        ([0x29450733, 0x41, 0], "x.npy: a string holds U+29450733, which is no Unicode character (ONNX strings are UTF-8)"),
    ],
    ids=["surrogate", "past-U+10FFFF"],
)
@pytest.mark.parametrize("command", [["flatten", "x.npy", "-o", "y.pb"], ["show", "x.npy"]], ids=["flatten", "show"])
def test_text_npy_with_code_units_that_are_no_character_is_refused(cwd, capsys, codes, message, command):
    """numpy's '<U' is UCS-4 and loads any 32-bit value; Python could not
    even hold U+29450733 in a str (it failed with an internal error)."""
    (cwd / "x.npy").write_bytes(npy(header(descr="'<U3'", shape="(1,)"), np.array(codes, "<u4").tobytes()))
    code, out, err = cli(capsys, *command)
    assert code == ExitCode.USAGE and out == "" and error_of(err) == message
    assert files(cwd) == ["x.npy"]


def test_bytes_that_are_not_ascii_are_printed_as_numpy_prints_bytes(backend, cwd, capsys):
    np.save(cwd / "s.npy", np.array([b"\xa5\x01", b"ok"], dtype="S2"))
    code, out, err = cli(capsys, "unsqueeze", "s.npy", "--axes", "0", "-b", backend)
    assert code == 0, err
    assert out.endswith("    [[b'\\xa5\\x01', b'ok']]\n")


@pytest.mark.parametrize(
    "proto,message",
    [
        (b"\x08\x02\x10\x01B\x03\xffawJ\x08" + bytes(8), "x.pb: the tensor name is not UTF-8 text (b'\\xffaw')"),
        (TensorProto(dims=[2], data_type=1, data_location=TensorProto.EXTERNAL).SerializeToString()
         + b"\x6a\x0e" + b"\x0a\x08location" + b"\x12\x02\xff\x01",  # external_data {location: b"\xff\x01"}
         "x.pb: the external data value is not UTF-8 text (b'\\xff\\x01')"),
    ],
    ids=["name", "external-data-value"],
)
def test_pb_text_fields_that_are_not_utf8_are_refused(cwd, capsys, proto, message):
    """protobuf parses a text field without checking it, and hands back bytes
    for one that is not UTF-8 (writing the name back failed: internal error)."""
    (cwd / "x.pb").write_bytes(proto)
    code, out, err = cli(capsys, "flatten", "x.pb", "-o", "y.pb")
    assert code == ExitCode.USAGE and error_of(err) == message
    assert files(cwd) == ["x.pb"]


@pytest.mark.parametrize("suffix", [".npy", ".npz"])
def test_a_string_ending_in_nul_is_refused_by_numpy_formats(backend, cwd, capsys, suffix):
    """numpy drops trailing NULs from text arrays: writing b'ab\\0' to an .npy
    would silently store 'ab'. A .pb keeps it."""
    (cwd / "s.pb").write_bytes(TensorProto(name="s", data_type=8, dims=[2], string_data=[b"ab\0", b"c"])
                               .SerializeToString())
    code, _, err = cli(capsys, "flatten", "s.pb", "-o", f"t{suffix}", "-b", backend)
    assert code == ExitCode.USAGE
    assert error_of(err) == (
        f"t{suffix}{'[s]' if suffix == '.npz' else ''}: a string that ends in a NUL byte cannot be stored in a numpy "
        "array (numpy drops trailing NULs); write a .pb (ONNX TensorProto) file instead"
    )
    assert files(cwd) == ["s.pb"]
    code, _, err = cli(capsys, "flatten", "s.pb", "-o", "t.pb", "-b", backend)
    assert code == 0, err
    assert list(load_pb(cwd / "t.pb").string_data) == [b"ab\0", b"c"]


def test_numpy_header_warnings_do_not_reach_stderr(backend, cwd, capsys):
    """A header written by Python 2 ('2L') is read, as numpy reads it, but
    numpy's UserWarning about it was two extra lines on stderr (and an odd
    escape in a refused header a SyntaxWarning on Python 3.12+)."""
    import warnings

    (cwd / "py2.npy").write_bytes(npy(header(shape="(2L,)"), np.arange(2, dtype="<f4").tobytes()))
    (cwd / "esc.npy").write_bytes(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': '\\ '}\n"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _, err = cli(capsys, "flatten", "py2.npy", "--axis", "0", "-o", "y.npy", "-b", backend)
        assert code == 0 and err == ""
        code, _, err = cli(capsys, "show", "esc.npy")
        assert code == ExitCode.USAGE and error_of(err).startswith("esc.npy: invalid .npy header (")
    assert [str(w.message) for w in caught] == []
    assert np.load(cwd / "y.npy").tobytes() == np.arange(2, dtype="<f4").tobytes()


@pytest.mark.parametrize("descr,body,shown", [("'|S2'", b"\xa5\x01", "b'\\xa5\\x01'"),
                                             ("'<U1'", "é".encode("utf-32-le"), "'é'")], ids=["bytes", "text"])
def test_a_string_tensor_of_63_dimensions_is_printed(backend, cwd, capsys, descr, body, shown):
    """Found by test_fuzz.py: numpy casts object arrays of more than 32
    dimensions not at all; printing such a string tensor was an internal error."""
    (cwd / "s.npy").write_bytes(npy(header(descr=descr, fortran="True", shape="(" + "1, " * 63 + ")"), body))
    code, out, err = cli(capsys, "unsqueeze", "s.npy", "--axes", "0", "-b", backend)
    assert code == 0, err
    assert out.rstrip().endswith("[" * 64 + shown + "]" * 64)


@pytest.mark.every_backend  # the engine's streaming and its failures, on each engine and adapter
def test_a_real_sigint_mid_stream_leaves_the_output_untouched(backend, tmp_path):
    """Ctrl-C as a user sends it: SIGINT to a separate onnxop process while
    it is part-way through writing a file larger than several chunks."""
    import signal
    import subprocess
    import sys
    import time

    x = np.random.default_rng(5).integers(0, 2**32, 64 * 2**20, dtype=np.uint32).view(np.float32)  # 256 MiB
    np.save(tmp_path / "x.npy", x)
    del x
    (tmp_path / "y.npy").write_bytes(b"precious")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "onnxop_cli", "flatten", "x.npy", "-o", "y.npy", "-b", backend],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        written = 0
        while written < 8 * 2**20:  # two 4 MiB chunks in: the stream is running
            assert proc.poll() is None, "onnxop finished before it could be interrupted"
            assert time.monotonic() < deadline, "onnxop never started writing"
            temps = [p for p in tmp_path.iterdir() if p.name.startswith(".onnxop-")]
            written = temps[0].stat().st_size if temps else 0
            time.sleep(0.002)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == ExitCode.INTERRUPTED, err
    assert out == "" and error_of(err) == "interrupted"
    assert (tmp_path / "y.npy").read_bytes() == b"precious"
    assert files(tmp_path) == ["x.npy", "y.npy"]
