""".npy, .npz and .pb as a user meets them: reading every TensorProto field
the way onnx reads it, names kept, .npz members (--member, all members into
an .npz, refusal into a single-array file), external data that stays inside
the tensor's folder, big-endian and text .npy files, and every bad input as
one line with a non-zero exit and no output file."""

from __future__ import annotations

import os
import zipfile

import numpy as np
import onnx
import pytest
from onnx import TensorProto, numpy_helper

from conftest import cli, error_of, random_array
from onnxop_cli.errors import ExitCode
from onnxop_cli.io.tensorproto import read_pb
from onnxop_cli.core.tensor import DTYPES
from references import load_pb, raw_proto, same_bits, to_array, typed_proto

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True


# ----------------------------------------------------------------- .pb reading


@pytest.mark.parametrize("dtype", [d for d in DTYPES if not d.is_string], ids=lambda d: d.name)
@pytest.mark.parametrize("make", [raw_proto, typed_proto], ids=["raw_data", "typed"])
@pytest.mark.parametrize("shape", [(), (0, 3), (3,), (2, 3, 5)])
def test_pb_reader_agrees_with_numpy_helper(tmp_path, rng, dtype, make, shape):
    raw = rng.integers(0, 256, dtype.nbytes(int(np.prod(shape))), dtype=np.uint8)
    if dtype.name == "bool":
        raw &= 1
    proto = make(raw, dtype, shape, "weights")
    (tmp_path / "t.pb").write_bytes(proto.SerializeToString())
    tensor = read_pb(tmp_path / "t.pb")
    assert tensor.name == "weights" and tensor.named
    assert tensor.shape == shape and tensor.dtype is dtype
    assert same_bits(tensor.to_numpy(), to_array(proto))


def test_pb_strings_and_unnamed_tensors(tmp_path):
    proto = numpy_helper.from_array(np.array([["a", "é"], ["", "xyz"]], dtype=object))
    (tmp_path / "s.pb").write_bytes(proto.SerializeToString())
    tensor = read_pb(tmp_path / "s.pb")
    assert tensor.name == "s" and not tensor.named  # no name: the file's stem
    assert tensor.to_numpy().tolist() == [["a", "é"], ["", "xyz"]]


def test_pb_output_is_raw_data_with_name_dims_and_type(backend, cwd, capsys, rng):
    x = random_array(rng, (2, 3, 4), "float16")
    (cwd / "x.pb").write_bytes(numpy_helper.from_array(x, "activations").SerializeToString())
    code, out, err = cli(capsys, "flatten", "x.pb", "--axis", "2", "-o", "y.pb", "-b", backend)
    assert code == 0, err
    assert out == "Flatten: activations (2, 3, 4) float16 -> activations (6, 4) float16, wrote y.pb\n"
    y = load_pb(cwd / "y.pb")
    assert y.name == "activations" and list(y.dims) == [6, 4] and y.data_type == TensorProto.FLOAT16
    assert y.raw_data == x.tobytes() and not y.int32_data
    assert (cwd / "y.pb").read_bytes() == numpy_helper.from_array(x.reshape(6, 4), "activations").SerializeToString()


def test_pb_strings_bytes_that_are_not_utf8_round_trip_exactly(backend, cwd, capsys):
    proto = TensorProto(name="s", data_type=TensorProto.STRING, dims=[3], string_data=[b"\xff\xfe", b"ok", b""])
    (cwd / "s.pb").write_bytes(proto.SerializeToString())
    code, out, err = cli(capsys, "unsqueeze", "s.pb", "--axes", "0", "-o", "t.pb", "-b", backend)
    assert code == 0, err
    assert out.endswith("wrote t.pb (host: string tensors have no GPU form)\n")
    t = load_pb(cwd / "t.pb")
    assert list(t.string_data) == [b"\xff\xfe", b"ok", b""] and list(t.dims) == [1, 3]


def test_printing_a_string_tensor_says_it_stayed_on_the_host(backend, cwd, capsys):
    np.save(cwd / "s.npy", np.array([["ab", "c"]]))
    code, out, err = cli(capsys, "flatten", "s.npy", "--axis", "0", "-b", backend)
    assert code == 0, err
    assert out == (
        "Node:\n  Flatten(s) -> (output)\n\nAttributes:\n  axis = 0\n\n"
        "Inputs:\n  s: shape=(1, 2), dtype=object\n    [['ab', 'c']]\n\n"
        "Outputs:\n  output: shape=(1, 2), dtype=object  (host: string tensors have no GPU form)\n"
        "    [['ab', 'c']]\n"
    )


# ----------------------------------------------------------------- external data


def external_tensor(folder, location: str, data: bytes, offset=None, length=None) -> None:
    proto = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[len(data) // 4])
    proto.data_location = TensorProto.EXTERNAL
    entries = {"location": location}
    if offset is not None:
        entries["offset"] = str(offset)
    if length is not None:
        entries["length"] = str(length)
    for k, v in entries.items():
        proto.external_data.add(key=k, value=v)
    (folder / "w.pb").write_bytes(proto.SerializeToString())


def test_external_data_inside_the_folder_is_read(backend, cwd, capsys, rng):
    x = random_array(rng, (6,), "float32")
    (cwd / "data").mkdir()
    (cwd / "data" / "w.bin").write_bytes(b"HEADER" + x.tobytes() + b"TAIL")
    external_tensor(cwd, "data/w.bin", x.tobytes(), offset=6, length=24)
    code, _, err = cli(capsys, "unsqueeze", "w.pb", "--axes", "1", "-o", "y.npy", "-b", backend)
    assert code == 0, err
    assert np.load(cwd / "y.npy").tobytes() == x.tobytes()


def test_external_data_through_a_symlink_inside_the_folder_is_read(backend, cwd, capsys, rng):
    x = random_array(rng, (4,), "float32")
    (cwd / "real.bin").write_bytes(x.tobytes())
    os.symlink("real.bin", cwd / "link.bin")
    external_tensor(cwd, "link.bin", x.tobytes())
    code, _, err = cli(capsys, "flatten", "w.pb", "-o", "y.npy", "-b", backend)
    assert code == 0, err
    assert np.load(cwd / "y.npy").tobytes() == x.tobytes()


@pytest.mark.parametrize("location", ["../secret.bin", "sub/../../secret.bin", "/tmp/secret.bin", "C:\\secret.bin"])
def test_external_data_outside_the_folder_is_refused(cwd, capsys, location):
    (cwd / "in").mkdir()
    (cwd / "secret.bin").write_bytes(bytes(16))
    external_tensor(cwd / "in", location, bytes(16))
    code, _, err = cli(capsys, "flatten", "in/w.pb", "-o", "y.npy")
    assert code == ExitCode.USAGE
    assert error_of(err) == f"in/w.pb: external data location {location!r} must name a file inside the file's folder (in)"
    assert not (cwd / "y.npy").exists()


def test_a_symlink_leading_out_of_the_folder_is_refused(cwd, capsys):
    (cwd / "in").mkdir()
    (cwd / "secret.bin").write_bytes(bytes(16))
    os.symlink(cwd / "secret.bin", cwd / "in" / "link.bin")
    external_tensor(cwd / "in", "link.bin", bytes(16))
    code, _, err = cli(capsys, "flatten", "in/w.pb", "-o", "y.npy")
    assert code == ExitCode.USAGE
    assert error_of(err) == (
        f"in/w.pb: external data location 'link.bin' must name a file inside the file's folder (in) "
        f"(it resolves to {os.path.realpath(cwd / 'secret.bin')})"
    )


@pytest.mark.parametrize(
    "setup,message",
    [
        (lambda d: external_tensor(d, "gone.bin", bytes(16)), "w.pb: external data file 'gone.bin' not found in the file's folder (.)"),
        (lambda d: ((d / "w.bin").write_bytes(bytes(12)), external_tensor(d, "w.bin", bytes(16))),
         "w.pb: external data 'w.bin' holds 12 bytes; dims [4] of float32 need 16"),
        (lambda d: ((d / "w.bin").write_bytes(bytes(16)), external_tensor(d, "w.bin", bytes(16), offset=8, length=16)),
         "w.pb: external data 'w.bin' is truncated: 16 bytes from offset 8 need a file of 24 bytes, it has 16"),
        (lambda d: ((d / "w.bin").write_bytes(bytes(16)), external_tensor(d, "w.bin", bytes(16), offset=-1)),
         "w.pb: invalid external data: offset -1 is negative"),
        (lambda d: ((d / "w.bin").write_bytes(bytes(16)), external_tensor(d, "w.bin", bytes(16), length=-16)),
         "w.pb: invalid external data: length -16 is negative"),
        (lambda d: ((d / "w.bin").write_bytes(bytes(16)), external_tensor(d, "w.bin", bytes(16), offset="0x10")),
         "w.pb: invalid external data: offset '0x10' is not an integer"),
        (lambda d: external_tensor(d, "w\0.bin", bytes(16)), "w.pb: external data location 'w\\x00.bin' holds a NUL byte"),
        (lambda d: ((d / "sub").mkdir(), external_tensor(d, "sub", bytes(16))),
         "w.pb: external data 'sub' is not a regular file"),
        (lambda d: (os.mkfifo(d / "pipe.bin"), external_tensor(d, "pipe.bin", bytes(16))),
         "w.pb: external data 'pipe.bin' is not a regular file"),
        (lambda d: external_tensor(d, "", bytes(16)), "w.pb: external data has no location"),
    ],
    ids=["missing", "short", "truncated", "negative-offset", "negative-length", "not-integer", "nul",
         "folder", "fifo", "no-location"],
)
def test_bad_external_data_is_one_line(cwd, capsys, setup, message):
    setup(cwd)
    code, _, err = cli(capsys, "flatten", "w.pb", "-o", "y.npy")
    assert code == ExitCode.USAGE and error_of(err) == message
    assert not (cwd / "y.npy").exists()


# ----------------------------------------------------------------- bad .pb


@pytest.mark.parametrize(
    "content,message",
    [
        (b"\xff\xff\xff", "x.pb: not a serialized ONNX TensorProto (Error parsing message with type "
                            "'onnx.TensorProto': Wire format was corrupt)"),
        (TensorProto(dims=[2]).SerializeToString(), "x.pb: data type UNDEFINED (0) is not an ONNX tensor type of opset 25"),
        (TensorProto(dims=[2], data_type=27).SerializeToString(),
         "x.pb: data type FLOAT6E2M3 (27) is not an ONNX tensor type of opset 25"),
        (TensorProto(dims=[3], data_type=1, raw_data=bytes(8)).SerializeToString(),
         "x.pb: raw_data holds 8 bytes; dims [3] of float32 need 12"),
        (TensorProto(dims=[3], data_type=1, float_data=[1.0, 2.0]).SerializeToString(),
         "x.pb: float_data holds 2 values; dims [3] of float32 need 3"),
        (TensorProto(dims=[2], data_type=1, int32_data=[1, 2]).SerializeToString(),
         "x.pb: a float32 tensor keeps its values in float_data, not int32_data"),
        (TensorProto(dims=[-1], data_type=1).SerializeToString(), "x.pb: negative dimension in dims [-1]"),
        (TensorProto(dims=[2], data_type=1, segment=TensorProto.Segment(begin=0, end=1)).SerializeToString(),
         "x.pb: segmented tensors are not supported"),
    ],
    ids=["garbage", "undefined", "float6", "raw-size", "typed-count", "wrong-field", "negative", "segment"],
)
def test_bad_pb_is_one_line(cwd, capsys, content, message):
    (cwd / "x.pb").write_bytes(content)
    code, _, err = cli(capsys, "flatten", "x.pb", "-o", "y.pb")
    assert code == ExitCode.USAGE and error_of(err) == message
    assert not (cwd / "y.pb").exists()


# ----------------------------------------------------------------- .npz


@pytest.fixture
def archive(cwd, rng):
    arrays = {
        "w": random_array(rng, (2, 3, 4), "float32"),
        "b": random_array(rng, (4,), "int64"),
        "f": np.asfortranarray(random_array(rng, (3, 5), "float64")),
        "e": random_array(rng, (2, 2), "int32").astype(">i4"),
    }
    np.savez(cwd / "m.npz", **arrays)
    np.savez_compressed(cwd / "c.npz", **arrays)
    return arrays


@pytest.mark.parametrize("name", ["m.npz", "c.npz"])
def test_npz_to_npz_applies_the_op_to_every_member_keeping_names(backend, archive, cwd, capsys, name):
    code, out, err = cli(capsys, "unsqueeze", name, "--axes", "0", "-o", "out.npz", "-b", backend)
    assert code == 0, err
    assert out.splitlines() == [
        "Unsqueeze: w (2, 3, 4) float32 -> w (1, 2, 3, 4) float32, wrote out.npz",
        "Unsqueeze: b (4,) int64 -> b (1, 4) int64, wrote out.npz",
        "Unsqueeze: f (3, 5) float64 -> f (1, 3, 5) float64, wrote out.npz",
        "Unsqueeze: e (2, 2) int32 -> e (1, 2, 2) int32, wrote out.npz",
    ]
    with np.load(cwd / "out.npz", allow_pickle=False) as got:
        assert got.files == ["w", "b", "f", "e"]
        for key, value in archive.items():
            assert same_bits(got[key], np.expand_dims(value, 0)), key
            assert got[key].dtype.byteorder in "<=|"


def test_member_selects_one_array(backend, archive, cwd, capsys):
    code, out, err = cli(capsys, "flatten", "c.npz", "--member", "f", "--axis", "0", "-o", "f.npy", "-b", backend)
    assert code == 0, err
    assert out == "Flatten: f (3, 5) float64 -> f (1, 15) float64, wrote f.npy\n"
    assert same_bits(np.load(cwd / "f.npy"), archive["f"].reshape(1, 15))


def test_member_into_pb_keeps_the_member_name(backend, archive, cwd, capsys):
    code, _, err = cli(capsys, "flatten", "m.npz", "-m", "e", "-o", "e.pb", "-b", backend)
    assert code == 0, err
    proto = load_pb(cwd / "e.pb")
    assert proto.name == "e" and same_bits(to_array(proto), archive["e"].reshape(2, 2))


def test_printing_an_npz_prints_every_member(backend, archive, cwd, capsys):
    code, out, err = cli(capsys, "flatten", "m.npz", "-b", backend)
    assert code == 0, err
    assert [line for line in out.splitlines() if line.startswith("  Flatten(")] == [
        "  Flatten(w) -> (output)", "  Flatten(b) -> (output)", "  Flatten(f) -> (output)", "  Flatten(e) -> (output)",
    ]


@pytest.mark.parametrize(
    "argv,message",
    [
        (["flatten", "m.npz", "-o", "y.npy"],
         "m.npz holds 4 arrays: 'w', 'b', 'f', 'e'; choose one with --member NAME (or write a .npz to apply the operator to each)"),
        (["flatten", "m.npz", "-o", "y.pb"],
         "m.npz holds 4 arrays: 'w', 'b', 'f', 'e'; choose one with --member NAME (or write a .npz to apply the operator to each)"),
        (["flatten", "m.npz", "--member", "nope", "-o", "y.npy"], "m.npz: no member 'nope'; it holds 4 arrays: 'w', 'b', 'f', 'e'"),
        (["flatten", "x.npy", "--member", "w", "-o", "y.npy"], "x.npy: --member selects an array of an .npz file or an initializer of an .onnx model; this is .npy"),
        (["unsqueeze", "m.npz", "--axes", "3", "-o", "y.npz"],
         "m.npz[b]: Unsqueeze: axis 3 is out of range [-2, 1] for an output of rank 2 (input rank 1 + 1 axes)"),
    ],
)
def test_npz_usage_errors(archive, cwd, capsys, argv, message):
    np.save(cwd / "x.npy", np.zeros(3))
    code, out, err = cli(capsys, *argv)
    assert code == ExitCode.USAGE and error_of(err) == message and out == ""
    assert not any((cwd / f"y{s}").exists() for s in (".npy", ".pb", ".npz"))


def test_pickled_npz_member_is_refused_without_unpickling(cwd, capsys):
    np.savez(cwd / "p.npz", o=np.array([{"a": 1}], dtype=object))
    code, _, err = cli(capsys, "flatten", "p.npz", "-o", "q.npz")
    assert code == ExitCode.USAGE
    assert error_of(err) == "p.npz[o]: dtype object holds Python objects; onnxop never unpickles"


@pytest.mark.parametrize(
    "make,message",
    [
        (lambda p: p.write_bytes(b"not a zip"), "z.npz: not an .npz file (it does not start with a zip header, PK\\x03\\x04)"),
        (lambda p: zipfile.ZipFile(p, "w").close(), "z.npz: the archive holds no arrays"),
        (lambda p: zipfile.ZipFile(p, "w").writestr("a.npy", b"\x93NUMPY\x01\x00\x06\x00{oops\n"),
         "z.npz[a]: invalid .npy header"),
    ],
)
def test_bad_npz_is_one_line(cwd, capsys, make, message):
    make(cwd / "z.npz")
    code, _, err = cli(capsys, "flatten", "z.npz", "-o", "y.npz")
    assert code == ExitCode.USAGE and error_of(err).startswith(message)
    assert not (cwd / "y.npz").exists()


def test_truncated_npz_member_is_refused(cwd, capsys):
    with zipfile.ZipFile(cwd / "z.npz", "w") as z:
        with z.open("a.npy", "w") as f:
            np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": (10,)})
            f.write(bytes(12))
    code, _, err = cli(capsys, "flatten", "z.npz", "-o", "y.npz")
    assert code == ExitCode.USAGE
    assert error_of(err) == "z.npz[a]: member is truncated: shape (10,) of float32 needs 40 data bytes, the member has 12"


# ----------------------------------------------------------------- types a format cannot describe


@pytest.mark.parametrize("suffix", [".npy", ".npz"])
@pytest.mark.parametrize("dtype", [d for d in DTYPES if not d.numpy_native], ids=lambda d: d.name)
def test_writing_a_type_numpy_cannot_describe_names_pb(cwd, capsys, dtype, suffix):
    raw = np.zeros(dtype.nbytes(6), np.uint8)
    (cwd / "x.pb").write_bytes(raw_proto(raw, dtype, (2, 3), "x").SerializeToString())
    code, _, err = cli(capsys, "flatten", "x.pb", "-o", f"y{suffix}")
    assert code == ExitCode.USAGE
    assert error_of(err) == (
        f"y{suffix}: the {suffix} format cannot describe {dtype.name} (numpy has no such dtype); "
        "write a .pb (ONNX TensorProto) file instead"
    )
    assert not (cwd / f"y{suffix}").exists()


# ----------------------------------------------------------------- .npy variants


@pytest.mark.parametrize("dtype", [">f4", ">i8", ">c8", ">c16", ">u2", ">f2"])
def test_big_endian_npy_becomes_little_endian(backend, cwd, capsys, rng, dtype):
    x = random_array(rng, (3, 4), np.dtype(dtype).newbyteorder("<")).astype(dtype)
    np.save(cwd / "x.npy", x)
    code, _, err = cli(capsys, "unsqueeze", "x.npy", "--axes", "-1", "-o", "y.npy", "-b", backend)
    assert code == 0, err
    y = np.load(cwd / "y.npy")
    assert y.dtype.byteorder in "<=" and y.dtype == x.dtype.newbyteorder("<")
    assert y.tobytes() == x.astype(x.dtype.newbyteorder("<")).reshape(3, 4, 1).tobytes()


def test_malformed_npy_header_is_one_line(cwd, capsys):
    (cwd / "bad.npy").write_bytes(b"\x93NUMPY\x01\x00\x06\x00{oops\n")
    code, _, err = cli(capsys, "flatten", "bad.npy")
    assert code == ExitCode.USAGE and error_of(err).startswith("bad.npy: invalid .npy header (")


def test_text_npy_round_trips_through_pb(backend, cwd, capsys):
    s = np.array([["α", "bb"], ["", "ccc"]])
    np.save(cwd / "s.npy", s)
    assert cli(capsys, "flatten", "s.npy", "-o", "s.pb", "-b", backend)[0] == 0
    assert to_array(load_pb(cwd / "s.pb")).tolist() == [["α", "bb"], ["", "ccc"]]
    assert cli(capsys, "unsqueeze", "s.pb", "--axes", "0", "-o", "t.npy", "-b", backend)[0] == 0
    t = np.load(cwd / "t.npy", allow_pickle=False)
    assert t.dtype.kind == "U" and t.tolist() == [[["α", "bb"], ["", "ccc"]]]


def test_output_may_replace_its_own_npz_input(backend, archive, cwd, capsys):
    code, _, err = cli(capsys, "flatten", "m.npz", "--axis", "0", "-o", "m.npz", "-b", backend)
    assert code == 0, err
    with np.load(cwd / "m.npz") as got:
        assert same_bits(got["w"], archive["w"].reshape(1, 24))


def test_onnx_can_load_what_we_write(backend, cwd, capsys, rng):
    x = random_array(rng, (2, 3), "float32")
    (cwd / "x.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    assert cli(capsys, "flatten", "x.pb", "-o", "y.pb", "-b", backend)[0] == 0
    onnx.checker.check_tensor(load_pb(cwd / "y.pb"))
