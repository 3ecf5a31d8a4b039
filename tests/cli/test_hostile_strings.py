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


def _model_with_names(node: bytes, x: bytes, y: bytes) -> bytes:
    """A one-node model whose node, input and output names are these bytes (not UTF-8 where asked):
    protobuf writes none such, but parses them without a word and hands back ``bytes``."""
    import onnx
    from onnx import helper

    g = helper.make_graph([helper.make_node("Transpose", ["XX"], ["YY"], name="NN", perm=[1, 0])], "g",
                          [helper.make_tensor_value_info("XX", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("YY", TensorProto.FLOAT, [3, 2])])
    raw = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    for old, new in ((b"\x02NN", node), (b"\x02XX", x), (b"\x02YY", y)):
        raw = raw.replace(old, bytes([len(new)]) + new)
    onnx.load_from_string(raw)  # parses
    return raw


@pytest.mark.parametrize("others", [[], ["--others", "onnxruntime", "--verify"]], ids=["gpu", "others"])
@pytest.mark.parametrize("names,message", [
    ((b"n\xff", b"XX", b"YY"), "m.onnx: node 0's name is not UTF-8 text (b'n\\xff'); ONNX's names are UTF-8"),
    ((b"NN", b"x\xff", b"YY"), "m.onnx: a graph input's name is not UTF-8 text (b'x\\xff'); ONNX's names are UTF-8"),
    ((b"NN", b"XX", b"y\xfe"), "m.onnx: a graph output's name is not UTF-8 text (b'y\\xfe'); ONNX's names are UTF-8"),
], ids=["node", "input", "output"])
def test_a_model_whose_names_are_not_utf8_is_refused_by_run_and_shown_by_show(cwd, capsys, names, message, others):
    """protobuf hands back a name that is not UTF-8 as bytes: run printed it as "b'x\\\\xff'" and --json
    stopped with an internal error (bytes are not JSON serializable). run refuses it in one line (text and
    --json); show --graph prints each bad byte as \\xNN and --json keeps it as a file name's byte is (a lone
    surrogate, os.fsencode gives the bytes back), in an ASCII document."""
    import json
    import os

    (cwd / "m.onnx").write_bytes(_model_with_names(*names))
    np.save(cwd / "x.npy", np.zeros((2, 3), np.float32))
    code, out, err = cli(capsys, "run", "m.onnx", "x.npy", *others, "-o", "y.npy")
    assert code == ExitCode.USAGE and error_of(err) == message, err
    assert not (cwd / "y.npy").exists()
    code, out, err = cli(capsys, "--json", "run", "m.onnx", "x.npy", *others)
    assert code == ExitCode.USAGE and json.loads(out)["message"] == message, out
    code, out, err = cli(capsys, "show", "--graph", "m.onnx")
    node, x, y = ("".join(chr(b) if b < 0x80 else f"\\x{b:02x}" for b in n) for n in names)
    assert code == 0 and f"0 '{node}'  Transpose (opset 17)  {x} -> {y}  perm=[1, 0]" in out, out
    code, out, err = cli(capsys, "--json", "show", "--graph", "m.onnx")
    assert code == 0, err
    out.encode("ascii")
    graph = json.loads(out)["files"][0]["graph"]
    got = (graph["nodes"][0]["name"], graph["inputs"][0]["name"], graph["outputs"][0]["name"])
    assert [os.fsencode(n) for n in got] == list(names)
