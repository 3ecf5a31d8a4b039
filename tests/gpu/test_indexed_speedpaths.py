"""The indexed gather kernel's fast paths (shaders/indexed_gather.wgsl),
byte for byte against onnx.reference on random bits:

- one entry point per case of table (flat, one lookup, several, reverse),
  each with the indices checked by indices.wgsl first (``fuse=False``) or
  read raw and checked in the kernel itself (int32, int64, big-endian);
- the row shortcut: along a last axis on which no index moves, the source
  advances by its stride without reading the index again (invocations that
  start mid-row, rows shorter and longer than an invocation's words, 8- to
  128-bit elements);
- data bound in windows (forced small here; tests/test_indexed_big.py runs
  one past the real binding): every element written by the one window
  holding its source, 2- to 16-bit words read-modify-written;
- the checks stay whole: 2**32 + 1 is out of range on every path, the first
  bad position is named, nothing reaches the sink.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from conftest import random_array
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.ops import indexing

POISON = 0x5A


def reference(op: str, inputs: list[np.ndarray], **attrs) -> np.ndarray:
    names = [f"x{i}" for i in range(len(inputs))]
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 0, None) for n in names],
                              [helper.make_tensor_value_info("y", 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return ReferenceEvaluator(model).run(None, dict(zip(names, inputs)))[0]


def data_of(a: np.ndarray) -> ix.Data:
    a = np.ascontiguousarray(a)
    swap = 0 if a.dtype.byteorder != ">" else (a.dtype.itemsize // 2 if a.dtype.kind == "c" else a.dtype.itemsize)
    return ix.Data(MemoryBytes(a), a.shape, a.dtype.itemsize * 8, swap)


def index_of(i: np.ndarray) -> ix.Index:
    i = np.ascontiguousarray(i)
    return ix.Index(MemoryBytes(i), i.shape, i.dtype.itemsize == 8, i.dtype.byteorder == ">")


def le(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()


def native(a: np.ndarray) -> np.ndarray:
    return a.astype(a.dtype.newbyteorder("="))


@pytest.fixture
def path(request, monkeypatch):
    """``fused``: the kernel checks the indices (indices.wgsl must not run);
    ``separate``: indices.wgsl checks them first."""
    fused = request.param == "fused"
    if fused:
        def no_pass(*a, **k):
            raise AssertionError("indices.wgsl ran where the gather kernel checks the indices")
        monkeypatch.setattr(ix, "check_indices", no_pass)
    return fused


def gather(gpu, data, index, table_check, fuse, **kw) -> bytes:
    table, check = table_check
    out = bytearray()
    n = ix.gather_indexed(gpu, data_of(data), index_of(index), check, table, out.extend, poison=POISON,
                          fuse=fuse, **kw)
    assert n == len(out)
    return bytes(out)


def cases(rng, dtype, idx_dtype):
    """(name, entry point, data, index, table and check, expected) per case of table."""
    x = random_array(rng, (5, 7, 9), dtype)
    ref = native(x)
    out = []
    i = rng.integers(-7, 7, (3, 4)).astype(idx_dtype)
    out.append(("Gather axis 1", "one", x, i, indexing.gather("Gather", x.shape, i.shape, 1),
                reference("Gather", [ref, native(i)], axis=1)))
    i = rng.integers(-9, 9, (5, 7, 6)).astype(idx_dtype)  # the index moves along the last axis
    out.append(("GatherElements axis 2", "one", x, i, indexing.gather_elements("GE", x.shape, i.shape, 2),
                reference("GatherElements", [ref, native(i)], axis=2)))
    i = np.stack([rng.integers(-5, 5, (4, 3)), rng.integers(-7, 7, (4, 3))], axis=-1).astype(idx_dtype)
    out.append(("GatherND pairs", "lookups", x, i, indexing.gather_nd("GND", x.shape, i.shape, 0),
                reference("GatherND", [ref, native(i)])))
    i = np.stack([rng.integers(-5, 5, 11), rng.integers(-7, 7, 11), rng.integers(-9, 9, 11)],
                 axis=-1).astype(idx_dtype)
    out.append(("GatherND triples", "lookups", x, i, indexing.gather_nd("GND", x.shape, i.shape, 0),
                reference("GatherND", [ref, native(i)])))
    lens = rng.integers(0, 8, 5).astype(idx_dtype)  # time axis 1, not the last: the row shortcut
    out.append(("ReverseSequence time 1", "reverse", x, lens,
                indexing.reverse_sequence("RS", x.shape, lens.shape, 0, 1),
                reference("ReverseSequence", [ref, native(lens).astype(np.int64)], batch_axis=0, time_axis=1)))
    y = random_array(rng, (6, 10), dtype)
    lens = rng.integers(0, 11, 6).astype(idx_dtype)  # time axis last: no shortcut
    out.append(("ReverseSequence time last", "reverse", y, lens,
                indexing.reverse_sequence("RS", y.shape, lens.shape, 0, 1),
                reference("ReverseSequence", [native(y), native(lens).astype(np.int64)], batch_axis=0, time_axis=1)))
    return out


TYPE_PAIRS = [(d, i) for d in ["<f4", "u1", "<f2", "<f8", "<c16", ">f4"] for i in ["<i8", ">i8"]] + [
    (d, i) for d in ["<f4", "u1"] for i in ["<i4", ">i4"]]


@pytest.mark.parametrize("path", ["fused", "separate"], indirect=True)
@pytest.mark.parametrize("dtype,idx_dtype", TYPE_PAIRS)
def test_every_case_on_both_check_paths(gpu, rng, path, dtype, idx_dtype):
    for name, entry, x, i, (table, check), want in cases(rng, dtype, idx_dtype):
        assert ix.variant(table, index_of(i) if path else None) == (
            entry + ("_i64" if i.dtype.itemsize == 8 else "_i32") if path else entry), name
        got = gather(gpu, x, i, (table, check), path)
        assert got == le(want), name


@pytest.mark.parametrize("path", ["fused", "separate"], indirect=True)
@pytest.mark.parametrize("bits_dtype", ["u1", "<f4", "<f8", "<c16"])
@pytest.mark.parametrize("row", [1, 3, 16, 17, 40])
def test_row_shortcut(gpu, rng, path, bits_dtype, row):
    """Gather on axis 0 of (n, row): the index stays put along each row, so the
    kernel reads it once per row or per invocation; rows shorter than, equal
    to and longer than an invocation's 16 words, and starting mid-invocation."""
    x = random_array(rng, (9, row), bits_dtype)
    i = rng.integers(-9, 9, (37,)).astype(np.int64)
    got = gather(gpu, x, i, indexing.gather("Gather", x.shape, i.shape, 0), path)
    assert got == le(np.take(native(x), i, axis=0))
    # and an inner axis: rank 3, the index fixed along the last axis
    y = random_array(rng, (3, 9, row), bits_dtype)
    got = gather(gpu, y, i, indexing.gather("Gather", y.shape, i.shape, 1), path)
    assert got == le(np.take(native(y), i, axis=1))


@pytest.mark.parametrize("path", ["fused", "separate"], indirect=True)
@pytest.mark.parametrize("value,dtype", [(2**32 + 1, "<i8"), (-(2**32) + 1, "<i8"), (2**63 - 1, "<i8"),
                                         (-(2**63), "<i8"), (9, ">i8"), (7, "<i4"), (-(2**31), "<i4"), (-8, ">i4")])
def test_bad_indices_on_both_paths(gpu, rng, path, value, dtype):
    x = random_array(rng, (5, 7), "<f4")
    out = []
    i = rng.integers(-7, 7, (3, 4)).astype(dtype)
    i[1, 2] = i[2, 0] = value  # the first bad position is named
    table, check = indexing.gather("Gather", x.shape, i.shape, 1)
    with pytest.raises(ix.BadIndex) as e:
        ix.gather_indexed(gpu, data_of(x), index_of(i), check, table, out.append, fuse=path)
    assert str(e.value) == f"Gather: indices[1, 2] = {value} is out of range [-7, 6] for axis 1 of size 7"
    assert out == []
    # GatherElements: one bad index among many, at the end
    i = rng.integers(-7, 7, (5, 7)).astype(dtype)
    i[4, 6] = value
    table, check = indexing.gather_elements("GE", x.shape, i.shape, 1)
    with pytest.raises(ix.BadIndex, match=rf"GE: indices\[4, 6\] = {value} is out of range \[-7, 6\]"):
        ix.gather_indexed(gpu, data_of(x), index_of(i), check, table, out.append, fuse=path)
    # GatherND: the second component has its own bound; an earlier pair's first is bad too
    i = np.array([[0, 6], [4, 7], [5, 0]]).astype(dtype)
    table, check = indexing.gather_nd("GND", x.shape, i.shape, 0)
    with pytest.raises(ix.BadIndex, match=r"GND: indices\[1, 1\] = 7 is out of range \[-7, 6\] for axis 1"):
        ix.gather_indexed(gpu, data_of(x), index_of(i), check, table, out.append, fuse=path)
    # ReverseSequence: lengths run 0 .. time, negative ones are bad
    lens = np.array([7, 0, 8, -1, 3]).astype(dtype)
    table, check = indexing.reverse_sequence("RS", x.shape, lens.shape, 0, 1)
    with pytest.raises(ix.BadIndex, match=r"RS: sequence_lens\[2\] = 8 is out of range \[0, 7\]"):
        ix.gather_indexed(gpu, data_of(x), index_of(lens), check, table, out.append, fuse=path)
    assert out == []


@pytest.mark.parametrize("path", ["fused", "separate"], indirect=True)
def test_no_negative_mode(gpu, rng, path):
    """The check mode without negative indices (0 .. d-1) in the kernel too."""
    x = random_array(rng, (5, 7), "<f4")
    table, check = indexing.gather("Gather", x.shape, (4,), 1)
    check = replace(check, mode=ix.NONNEG)
    ok = np.array([0, 6, 3, 6], np.int64)
    assert gather(gpu, x, ok, (table, check), path) == le(np.take(x, ok, axis=1))
    for bad, at in [([0, 7, 1, -1], 1), ([2, 3, -1, 7], 2)]:
        with pytest.raises(ix.BadIndex, match=rf"indices\[{at}\] = {bad[at]} is out of range \[0, 6\]"):
            gather(gpu, x, np.array(bad, np.int64), (table, check), path)


def test_many_bands_use_the_separate_check(gpu, rng, monkeypatch):
    """Past one band a bad index in a later band must not let an earlier band
    out: the kernel does not check then, indices.wgsl does, first."""
    x = random_array(rng, (6, 64), "<f4")
    i = rng.integers(-6, 6, (40,)).astype(np.int64)
    i[39] = 2**32 + 1
    table, check = indexing.gather("Gather", x.shape, i.shape, 0)
    out = []
    with pytest.raises(ix.BadIndex, match=r"indices\[39\] = 4294967297"):
        ix.gather_indexed(gpu, data_of(x), index_of(i), check, table, out.append, binding_bytes=1024)
    assert out == []


# ------------------------------------------------------------------ data windows


WINDOW_TYPES = ["u1", "<i2", "<f4", "<f8", "<c16", ">f4", ">f2", "?"]


@pytest.mark.parametrize("path", ["fused", "separate"], indirect=True)
@pytest.mark.parametrize("dtype", WINDOW_TYPES)
def test_data_in_windows(gpu, rng, path, dtype):
    """Windows of 128 elements (the least), bands of 1 KiB: every element comes
    from the one window holding its source, whatever the band."""
    for name, entry, x, i, table_check, want in cases(rng, dtype, "<i8"):
        if x.size <= 128:
            continue
        assert gather(gpu, x, i, table_check, path, window_bytes=16) == le(want), name
        if not path:  # the kernel checks only an output of one band
            assert gather(gpu, x, i, table_check, path, window_bytes=16, binding_bytes=256) == le(want), name


@pytest.mark.parametrize("bits", [2, 4])
def test_packed_data_in_windows(gpu, rng, bits):
    """2- and 4-bit elements, odd sizes: words assembled from several windows."""
    per = 8 // bits
    codes = rng.integers(0, 1 << bits, (23, 37), dtype=np.uint8)
    flat = np.concatenate([codes.reshape(-1), np.zeros((-codes.size) % per, np.uint8)])
    packed = (flat.reshape(-1, per) << (np.arange(per, dtype=np.uint8) * bits)).sum(axis=1).astype(np.uint8)
    i = rng.integers(-37, 37, (23, 29)).astype(np.int64)
    table, check = indexing.gather_elements("GE", codes.shape, i.shape, 1)
    want = np.take_along_axis(codes, np.where(i < 0, i + 37, i), axis=1)
    wflat = np.concatenate([want.reshape(-1), np.zeros((-want.size) % per, np.uint8)])
    wpacked = (wflat.reshape(-1, per) << (np.arange(per, dtype=np.uint8) * bits)).sum(axis=1).astype(np.uint8)
    for window, band in [(16, None), (64, 64)]:
        out = bytearray()
        ix.gather_indexed(gpu, ix.Data(MemoryBytes(packed), codes.shape, bits), index_of(i), check, table,
                          out.extend, poison=POISON, window_bytes=window, binding_bytes=band)
        assert bytes(out) == wpacked.tobytes(), (window, band)


@pytest.mark.parametrize("path", ["fused", "separate"], indirect=True)
@pytest.mark.parametrize("dtype", ["<f4", "<f8", "<c16", ">f4"])
def test_long_rows_in_windows(gpu, rng, path, dtype):
    """Rows longer than an invocation's words, windows ending mid-row: an
    invocation whose whole run lies outside a window skips it, one that
    straddles a window's edge writes its part."""
    x = random_array(rng, (30, 77), dtype)
    i = rng.integers(-30, 30, (41,)).astype(np.int64)
    want = le(np.take(native(x), i, axis=0))
    for window in (16, 600, 2000):
        assert gather(gpu, x, i, indexing.gather("Gather", x.shape, i.shape, 0), path, window_bytes=window) == want
    y = random_array(rng, (3, 30, 77), dtype)  # an inner axis: rows of one index, outer blocks of many
    want = le(np.take(native(y), i, axis=1))
    assert gather(gpu, y, i, indexing.gather("Gather", y.shape, i.shape, 1), path, window_bytes=3000) == want
