"""Hostile and broken .npz archives (zip bombs, duplicate or path-like member
names, corrupt deflate data, a member shorter than its directory entry):
refused in one line naming the archive and the problem, nothing written,
no member name ever a path, and member names escaped on the terminal.
"""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from conftest import error_of
from hostile_inputs import cli, files, matches, npy, header, good_npy
from onnxop_cli.errors import ExitCode


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


def test_member_names_listed_in_a_refusal_are_quoted_one_by_one(backend, cwd, capsys):
    """A member named ``a, b`` is one name, and one with a newline cannot forge a line: each is quoted."""
    (cwd / "z.npz").write_bytes(zip_with({"a, b.npy": good_npy(), "c\nonnxop: all fine.npy": good_npy()}))
    code, out, err = cli(capsys, "flatten", "z.npz", "-o", "y.npy", "-b", backend)
    assert code == ExitCode.USAGE and out == ""
    assert err == ("onnxop: error: z.npz holds 2 arrays: 'a, b', 'c\\nonnxop: all fine'; choose one with --member "
                   "NAME (or write a .npz to apply the operator to each)\n")
    assert not (cwd / "y.npy").exists()
