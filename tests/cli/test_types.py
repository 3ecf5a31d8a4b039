"""Every ONNX tensor type of opset 25 through every format that can hold it,
as a user runs it (the CLI, files in and out), on random bit patterns,
compared with numpy (reshape / expand_dims) and with onnxruntime wherever it
has a kernel for the type.

Inputs are written and outputs read back by numpy and onnx's own code
(np.save/np.savez/np.load, numpy_helper.from_array/to_array, TensorProtos built
from onnx.proto's field rules), never by onnxop's readers. .npy/.npz inputs are
drawn C- or Fortran-ordered and little- or big-endian; .pb inputs keep their
values in raw_data or in the typed field.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import numpy_helper

from onnxop_cli import io as onnxop_io
from onnxop_cli.cli.main import run
from onnxop_cli.core.tensor import DTYPES, DType
from references import load_pb, ort_run, ort_supports, raw_proto, same_bits, to_array, typed_proto

FORMATS = (".npy", ".npz", ".pb")


def holds(fmt: str, dtype: DType) -> bool:
    return fmt == ".pb" or dtype.numpy_native


CASES = [
    pytest.param(d, i, o, id=f"{d.name}-{i[1:]}-{o[1:]}")
    for d, i, o in itertools.product(DTYPES, FORMATS, FORMATS)
    if holds(i, d) and holds(o, d)
]
SETTINGS = settings(
    max_examples=3, deadline=None, database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)
texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=5)


def random_raw(rng: np.random.Generator, dtype: DType, count: int) -> np.ndarray:
    """Random little-endian bytes for ``count`` elements (packed for 2/4-bit types)."""
    raw = rng.integers(0, 256, dtype.nbytes(count), dtype=np.uint8)
    if dtype.name == "bool":
        raw &= 1
    return raw


def draw_op(data, rank: int):
    """A random valid Flatten or Unsqueeze: (argv, numpy reference, ORT kwargs)."""
    if data.draw(st.booleans(), label="flatten"):
        axis = data.draw(st.integers(-rank, rank), label="axis")
        norm = axis + rank if axis < 0 else axis
        shape_of = lambda s: (int(np.prod(s[:norm])), int(np.prod(s[norm:])))  # noqa: E731
        return ["flatten", "--axis", str(axis)], lambda x: x.reshape(shape_of(x.shape)), ("Flatten", {"axis": axis})
    k = data.draw(st.integers(1, 3), label="k")
    r_out = rank + k
    targets = data.draw(st.lists(st.integers(0, r_out - 1), min_size=k, max_size=k, unique=True), label="axes")
    axes = [t - r_out if data.draw(st.booleans()) else t for t in targets]
    return (["unsqueeze", "--axes", ",".join(map(str, axes))], lambda x: np.expand_dims(x, tuple(axes)),
            ("Unsqueeze", {"axes": axes}))


def write_input(path, fmt: str, dtype: DType, shape, data, rng) -> np.ndarray:
    """Write a random input; returns its values as numpy/onnx read them."""
    count = int(np.prod(shape))
    if dtype.is_string:
        values = np.array(data.draw(st.lists(texts, min_size=count, max_size=count)) or [], dtype=object)
        values = values.reshape(shape)
        if fmt == ".pb":
            path.write_bytes(numpy_helper.from_array(values, "x").SerializeToString())
        else:
            text = np.array(values.tolist(), dtype=str).reshape(shape)
            np.save(path, text) if fmt == ".npy" else np.savez(path, x=text)
        return values
    raw = random_raw(rng, dtype, count)
    if fmt == ".pb":
        make = typed_proto if data.draw(st.booleans(), label="typed field") else raw_proto
        proto = make(raw, dtype, shape, "x")
        path.write_bytes(proto.SerializeToString())
        return to_array(proto)
    values = raw.view(dtype.numpy).reshape(shape)
    if dtype.bits > 8 and data.draw(st.booleans(), label="big-endian"):
        values = values.astype(values.dtype.newbyteorder(">"))
    if len(shape) > 1 and data.draw(st.booleans(), label="fortran"):
        values = np.asfortranarray(values)
    if fmt == ".npy":
        np.save(path, values)
    else:
        np.savez(path, x=values)
    return values


def read_output(path, fmt: str) -> np.ndarray:
    if fmt == ".pb":
        return to_array(load_pb(path))
    if fmt == ".npy":
        return np.load(path, allow_pickle=False)
    with np.load(path, allow_pickle=False) as archive:
        (name,) = archive.files
        return archive[name]


@pytest.mark.parametrize("dtype,in_fmt,out_fmt", CASES)
@SETTINGS
@given(shape=shapes, data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_every_type_through_every_format(backend, tmp_path, monkeypatch, capsys, dtype, in_fmt, out_fmt, shape, data, seed):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ONNXOP_POISON", "0xA5")
    src, dst = tmp_path / f"x{in_fmt}", tmp_path / f"y{out_fmt}"
    x = write_input(src, in_fmt, dtype, shape, data, np.random.default_rng(seed))
    argv, reference, (op_type, kwargs) = draw_op(data, len(shape))

    code = run([argv[0], src.name, *argv[1:], "-o", dst.name, "-b", backend])
    out, err = capsys.readouterr()
    assert code == 0, err
    y = read_output(dst, out_fmt)
    expected = reference(x)
    if dtype.is_string:
        assert "(host: string tensors have no GPU form)" in out
        y = y.astype(object)
    assert same_bits(y, expected), (x, y, expected)
    assert y.dtype.byteorder in "<=|"  # ONNX's little-endian layout, whatever came in

    if ort_supports(op_type, dtype):
        feed = x.astype(x.dtype.newbyteorder("="), order="C") if not dtype.is_string else x
        by_ort = ort_run(op_type, dtype, feed, out_shape=expected.shape, **kwargs)
        assert same_bits(y, by_ort), (kwargs, x, y, by_ort)


def test_the_cases_cover_every_type_and_format():
    seen = {(c.values[0].name, c.values[1], c.values[2]) for c in CASES}
    for dtype in DTYPES:
        for i, o in itertools.product(FORMATS, FORMATS):
            assert ((dtype.name, i, o) in seen) == (holds(i, dtype) and holds(o, dtype))
            if holds(o, dtype):
                assert onnxop_io._module(o).can_hold(dtype)
    assert len(DTYPES) == 26


def test_onnxruntime_kernels_are_used_where_they_exist():
    """The ORT comparison is not silently empty: these types have CPU kernels."""
    names = {d.name for d in DTYPES if ort_supports("Flatten", d) and ort_supports("Unsqueeze", d)}
    assert {"float32", "float64", "float16", "bfloat16", "int8", "int64", "uint64", "bool", "object"} <= names


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d.is_packed], ids=lambda d: d.name)
@pytest.mark.parametrize("count", [1, 2, 3, 5, 7, 9])
def test_packed_types_keep_elements_and_zero_the_pad_bits(backend, tmp_path, monkeypatch, capsys, rng, dtype, count):
    """Odd element counts: the values pass bit for bit; the unused high bits of
    the last byte are zero on output as ONNX's packers write them, even when the
    input's padding is all ones."""
    monkeypatch.chdir(tmp_path)
    raw = rng.integers(0, 256, dtype.nbytes(count), dtype=np.uint8)
    used = count * dtype.bits % 8
    if used:
        raw[-1] |= 0xFF & ~((1 << used) - 1)  # set every pad bit
    (tmp_path / "x.pb").write_bytes(raw_proto(raw, dtype, (count,), "x").SerializeToString())
    assert run(["unsqueeze", "x.pb", "--axes", "0", "-o", "y.pb", "-b", backend]) == 0, capsys.readouterr().err
    out = load_pb(tmp_path / "y.pb")
    expected = to_array(raw_proto(raw, dtype, (count,), "x")).reshape(1, count)
    assert same_bits(to_array(out), expected)
    assert out.raw_data == numpy_helper.from_array(expected, "x").raw_data  # canonical: pad bits zero
    assert out.raw_data[:-1] == raw.tobytes()[:-1]
