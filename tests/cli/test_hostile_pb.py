"""Hostile and broken .pb tensors: refused in one line, a file larger than
protobuf can parse never read, external-data keys never set as attributes;
an output may replace its own .pb input.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto

from conftest import error_of, random_array
from hostile_inputs import cli, files, matches
from onnxop_cli.errors import ExitCode
from references import load_pb, same_bits, to_array


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
