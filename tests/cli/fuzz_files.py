"""The files tests/cli/test_fuzz.py mutates: valid .npy, .npz and .pb seeds
(every dtype the formats hold, external data, compressed members), and the
hypothesis strategies that mutate them (bit flips, byte edits, truncations,
insertions, header and zip-directory edits)."""

from __future__ import annotations

import io
import struct
import zipfile

import numpy as np
from hypothesis import strategies as st
from onnx import TensorProto, numpy_helper


def npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def _rng() -> np.random.Generator:
    return np.random.default_rng(20251129)


def _random(rng, shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    raw = rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8)
    if dtype.kind == "b":
        raw &= 1
    return raw.view(dtype).reshape(shape)


def npy_seeds() -> list[bytes]:
    rng = _rng()
    return [
        npy_bytes(_random(rng, (3, 4, 5), "<f4")),
        npy_bytes(np.asfortranarray(_random(rng, (4, 3), "<f8"))),
        npy_bytes(_random(rng, (6,), ">i4")),
        npy_bytes(_random(rng, (2, 3, 2), "|i1")),
        npy_bytes(_random(rng, (), "<f2")),
        npy_bytes(np.zeros((0, 3), "<u2")),
        npy_bytes(_random(rng, (5,), "|b1")),
        npy_bytes(np.asfortranarray(_random(rng, (2, 3), ">c8"))),
        npy_bytes(np.array([["ab", "c"], ["", "def"]])),
    ]


def zip_bytes(members: dict[str, bytes], compression: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def npz_members() -> list[dict[str, bytes]]:
    rng = _rng()
    return [
        {"a.npy": npy_bytes(_random(rng, (4, 5), "<f4"))},
        {"w.npy": npy_bytes(_random(rng, (2, 3), "<i8")), "b.npy": npy_bytes(_random(rng, (3,), ">f8"))},
        {
            "x.npy": npy_bytes(_random(rng, (2, 2, 2), "|u1")),
            "y.npy": npy_bytes(np.asfortranarray(_random(rng, (3, 2), "<i2"))),
            "z.npy": npy_bytes(_random(rng, (7,), "<f2")),
        },
    ]


def npz_seeds() -> list[tuple[dict[str, bytes], int]]:
    members = npz_members()
    return [(members[0], zipfile.ZIP_STORED), (members[1], zipfile.ZIP_DEFLATED), (members[2], zipfile.ZIP_DEFLATED),
            (members[2], zipfile.ZIP_STORED)]


def pb_seeds() -> list[tuple[TensorProto, bytes | None]]:
    """(proto, external data file or None)."""
    rng = _rng()
    raw = numpy_helper.from_array(_random(rng, (2, 3), "<f4"), "raw")
    typed_f32 = TensorProto(name="typed", data_type=TensorProto.FLOAT, dims=[3, 2],
                            float_data=[float(v) for v in rng.standard_normal(6).astype(np.float32)])
    typed_f16 = TensorProto(name="half", data_type=TensorProto.FLOAT16, dims=[4],
                            int32_data=[int(v) for v in rng.integers(0, 1 << 16, 4)])
    typed_i64 = TensorProto(name="long", data_type=TensorProto.INT64, dims=[2, 2],
                            int64_data=[int(v) for v in rng.integers(-(2**62), 2**62, 4)])
    strings = TensorProto(name="s", data_type=TensorProto.STRING, dims=[3], string_data=[b"ab", b"\xc3\xa9", b""])
    bf16 = TensorProto(name="bf", data_type=TensorProto.BFLOAT16, dims=[2, 2],
                       raw_data=_random(rng, (4,), "<u2").tobytes())
    ext_data = _random(rng, (8,), "<f4").tobytes()
    ext = TensorProto(name="ext", data_type=TensorProto.FLOAT, dims=[2, 2], data_location=TensorProto.EXTERNAL)
    for k, v in (("location", "w.bin"), ("offset", "16"), ("length", "16")):
        ext.external_data.add(key=k, value=v)
    return [(raw, None), (typed_f32, None), (typed_f16, None), (typed_i64, None), (strings, None), (bf16, None),
            (ext, ext_data)]


# ----------------------------------------------------------------- mutations

INTERESTING = [0x00, 0xFF, 0x7F, 0x80, 0x01, ord("("), ord(")"), ord(","), ord("'"), ord("0"), ord("9"), ord("-")]


@st.composite
def byte_edits(draw, data: bytes, hot: int) -> bytes:
    """1-4 byte-level edits; positions favour the first ``hot`` bytes (the
    header, where a flip changes meaning rather than values)."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "set", "truncate", "insert", "delete", "append"]))
        size = len(out)
        if size == 0 and kind != "append":
            kind = "append"
        if kind != "append":
            limit = min(size, hot) if draw(st.booleans()) else size
            pos = draw(st.integers(0, max(0, limit - 1)))
        if kind == "flip":
            out[pos] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set":
            out[pos] = draw(st.one_of(st.sampled_from(INTERESTING), st.integers(0, 255)))
        elif kind == "truncate":
            del out[pos:]
        elif kind == "insert":
            out[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del out[pos : pos + draw(st.integers(1, 8))]
        else:
            out += draw(st.binary(min_size=1, max_size=32))
    return bytes(out)


DESCRS = ["'<f4'", "'>f8'", "'|u1'", "'<i8'", "'|b1'", "'<c8'", "'<U3'", "'|S2'", "'|O'", "'<M8[s]'", "'|V4'",
          "[('a', '<i4')]", "('<i4', (2,))", "'<f16'", "'x'", "'<f2'", "'<U0'", "3", "None"]
DIMS = st.one_of(st.integers(0, 6), st.sampled_from([-1, 2**31, 2**32, 2**62, 2**63, 2**64, 10**30]))


@st.composite
def npy_header_edit(draw, data: bytes) -> bytes:
    """The same data under a header written from drawn fields: dtype, order
    and shape (odd ones included), the length field right or not."""
    import ast

    version = data[6:8]
    start = 10 if version == b"\x01\x00" else 12
    (length,) = struct.unpack("<H" if start == 10 else "<I", data[8:start])
    old = ast.literal_eval(data[start : start + length].decode("latin1"))
    body = data[start + length :]
    descr = repr(old["descr"]) if draw(st.booleans()) else draw(st.sampled_from(DESCRS))
    fortran = draw(st.sampled_from(["True", "False", "False", "1", "'x'"]))
    if draw(st.booleans()):
        shape = repr(tuple(old["shape"]))
    else:
        dims = draw(st.lists(DIMS, max_size=5)) if draw(st.integers(0, 9)) else [1] * draw(st.integers(63, 70))
        shape = repr(tuple(dims))
    text = "{'descr': %s, 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)
    text += " " * draw(st.integers(0, 20)) + "\n"
    raw = text.encode("latin1")
    declared = len(raw) + draw(st.sampled_from([0, 0, 0, -1, 1, 1000]))
    prefix = b"\x93NUMPY" + version + struct.pack("<H" if start == 10 else "<I", max(0, declared) & 0xFFFF)
    return prefix + raw + body


@st.composite
def mutated_npy(draw, seed: bytes) -> bytes:
    data = draw(npy_header_edit(seed)) if draw(st.booleans()) else seed
    if draw(st.integers(0, 3)):
        data = draw(byte_edits(data, hot=140))
    return data


@st.composite
def mutated_npz(draw, seed: tuple[dict[str, bytes], int]) -> bytes:
    members, compression = dict(seed[0]), seed[1]
    how = draw(st.sampled_from(["member", "member", "directory", "bytes", "extra"]))
    if how == "member":
        name = draw(st.sampled_from(sorted(members)))
        members[name] = draw(mutated_npy(members[name]))
        return zip_bytes(members, compression)
    if how == "extra":
        extra = draw(st.sampled_from(["dup", "suffixless", "text", "path"]))
        first = sorted(members)[0]
        buf = io.BytesIO()
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with zipfile.ZipFile(buf, "w", compression=compression) as z:
                for name, data in members.items():
                    z.writestr(name, data)
                if extra == "dup":
                    z.writestr(first, members[first][:-1])
                elif extra == "suffixless":
                    z.writestr(first.removesuffix(".npy"), members[first])
                elif extra == "text":
                    z.writestr("notes.txt", b"hello")
                else:
                    z.writestr("../../up.npy", members[first])
        return buf.getvalue()
    raw = bytearray(zip_bytes(members, compression))
    if how == "directory":
        entries = [i for i in range(len(raw)) if raw[i : i + 4] == b"PK\x01\x02"]
        cd = draw(st.sampled_from(entries))
        field, fmt = draw(st.sampled_from([(8, "<H"), (10, "<H"), (16, "<I"), (20, "<I"), (24, "<I"), (42, "<I")]))
        value = draw(st.one_of(st.integers(0, 0xFFFF if fmt == "<H" else 0xFFFFFFFF),
                               st.sampled_from([0, 1, 8, 12, 99, 0x800, 0xFFFFFFFF])))
        struct.pack_into(fmt, raw, cd + field, value & (0xFFFF if fmt == "<H" else 0xFFFFFFFF))
        return bytes(raw)
    return draw(byte_edits(bytes(raw), hot=len(raw)))


@st.composite
def mutated_pb(draw, seed: tuple[TensorProto, bytes | None]) -> tuple[bytes, bytes | None]:
    proto, ext = TensorProto(), seed[1]
    proto.CopyFrom(seed[0])
    for _ in range(draw(st.integers(0, 2))):
        edit = draw(st.sampled_from(["dims", "type", "raw", "field", "external", "location", "name", "ext-file"]))
        if edit == "dims":
            del proto.dims[:]
            dims = draw(st.lists(DIMS.filter(lambda d: -(2**63) <= d < 2**63), max_size=5))
            proto.dims.extend(dims if draw(st.integers(0, 9)) else [1] * 66)
        elif edit == "type":
            proto.data_type = draw(st.integers(0, 30))
        elif edit == "raw":
            data = proto.raw_data or b"\x01\x02\x03\x04"
            proto.raw_data = draw(st.sampled_from([data[:-1], data + b"\x00", data * 2, b""]))
        elif edit == "field":
            values = draw(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=8))
            field = draw(st.sampled_from(["int32_data", "int64_data", "float_data", "double_data", "uint64_data"]))
            getattr(proto, field).extend([float(v) if "float" in field or "double" in field else abs(v) if
                                          field == "uint64_data" else v for v in values])
        elif edit == "external":
            proto.data_location = draw(st.sampled_from([TensorProto.EXTERNAL, TensorProto.DEFAULT]))
        elif edit == "location":
            del proto.external_data[:]
            proto.data_location = TensorProto.EXTERNAL
            location = draw(st.sampled_from(["w.bin", "../secret.bin", "secret_link.bin", "missing.bin", "sub",
                                             "/etc/hostname", "w.bin\x00x", "", "sub/../w.bin", "./w.bin"]))
            proto.external_data.add(key="location", value=location)
            for key in draw(st.lists(st.sampled_from(["offset", "length", "checksum", "__class__"]), max_size=3)):
                proto.external_data.add(key=key, value=draw(st.sampled_from(["0", "4", "16", "-1", "x", "99999"])))
        elif edit == "name":
            proto.name = draw(st.sampled_from(["", "a\nb", "\x1b[2J", "../n", "é"]))
        elif ext is not None:
            ext = ext[: draw(st.integers(0, len(ext)))]
    data = proto.SerializeToString()
    if draw(st.integers(0, 2)) == 0:
        data = draw(byte_edits(data, hot=len(data)))
    return data, ext
