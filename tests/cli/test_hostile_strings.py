"""String and text inputs found by tests/cli/test_fuzz.py: code units that
are no character, bytes that are not UTF-8, strings ending in NUL, numpy's
header warnings, a string tensor of 63 dimensions.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from conftest import error_of
from hostile_inputs import cli, files, npy, header
from onnxop_cli.errors import ExitCode
from references import load_pb


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
