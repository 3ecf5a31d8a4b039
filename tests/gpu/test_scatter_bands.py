"""Scatters into data larger than one binding (gpu/scatter_claims.py's
``scatter_banded``), the binding forced small here: the output a band at a time, byte for byte
against onnx.reference on random bits and the same as the one-pass kernels;
duplicate targets with reduction none refused before any band is written;
a bad index refused first; narrow, big-endian and column-major data; the
banded path asserted, so a silent one-pass run fails these tests."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from conftest import random_array
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.errors import OpError
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.gpu import scatter as sc
from onnxop_cli.gpu import scatter_claims
from onnxop_cli.ops import indexing
from properties import CLS

CAP = 1024  # bytes of a binding, forced: bands of 128-256 elements


def reference(op: str, inputs: list[np.ndarray], **attrs) -> np.ndarray:
    names = [f"x{i}" for i in range(len(inputs))]
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 0, None) for n in names],
                              [helper.make_tensor_value_info("y", 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return ReferenceEvaluator(model).run(None, dict(zip(names, inputs)))[0]


def data_of(a: np.ndarray, fortran: bool = False) -> ix.Data:
    swap = 0 if a.dtype.byteorder != ">" else a.dtype.itemsize
    if fortran:
        strides = tuple(int(np.prod(a.shape[:k])) for k in range(a.ndim))
        return ix.Data(MemoryBytes(np.ascontiguousarray(a.T)), a.shape, a.dtype.itemsize * 8, swap, strides)
    return ix.Data(MemoryBytes(np.ascontiguousarray(a)), a.shape, a.dtype.itemsize * 8, swap)


def index_of(i: np.ndarray) -> ix.Index:
    return ix.Index(MemoryBytes(np.ascontiguousarray(i)), i.shape)


def le(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()


@pytest.fixture
def banded(monkeypatch):
    """The bands each banded scatter made (a list per call)."""
    calls: list[int] = []
    real = sc.scatter_banded

    def counting(gpu, bufs, data, *a, **k):
        calls.append(-(-data.size // scatter_claims.band_elements(data.bits, a[-1])))
        return real(gpu, bufs, data, *a, **k)

    monkeypatch.setattr(sc, "scatter_banded", counting)
    return calls


def run(gpu, data, updates, index, table_check, reduce, fortran=False, **kw) -> bytes:
    table, check = table_check
    out = bytearray()
    n = sc.scatter_indexed(gpu, data_of(data, fortran), data_of(updates), index_of(index), check, table, reduce,
                           out.extend, **kw)
    assert n == len(out)
    return bytes(out)


TYPES = ["<f4", "<f2", "<i8", "u1", "<i2", "?", ">f4", "<f8"]


@pytest.mark.every_dtype  # a reduction's kernel is the type's own
@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_scatter_elements_in_bands(gpu, rng, banded, dtype, reduction):
    """ScatterElements along axis 0 (targets in every band) and 1: the bands'
    result is the reference's and the one-pass kernels' (lines, rounds)."""
    if dtype == "<f8" and reduction == "add":
        pytest.skip("float64 add is refused by the op (no f64 in WGSL)")
    data = random_array(rng, (23, 29), dtype)
    for axis in (0, 1):
        n = data.shape[axis]
        shape = (25, 29) if axis == 0 else (23, 33)
        if reduction == "none":  # distinct targets: a permutation's prefix along the axis per line
            index = np.argsort(rng.random((shape[1], n)) if axis == 0 else rng.random((data.shape[0], n)), axis=1)
            index = (index[:, : shape[0]].T if axis == 0 else index[:, : shape[1] - 7]).astype(np.int64)
            shape = index.shape
            index = np.where(rng.random(shape) < 0.5, index - n, index)
        else:
            index = rng.integers(-n, n, shape).astype(np.int64)
        updates = random_array(rng, shape, dtype)
        want = reference("ScatterElements", [data, index, updates], axis=axis, reduction=reduction)
        table = indexing.scatter_elements("SE", data.shape, index.shape, updates.shape, axis)
        reduce = sc.Reduce(reduction, CLS[np.dtype(dtype).kind], False)
        got = run(gpu, data, updates, index, table, reduce, binding_bytes=CAP)
        assert got == le(want), axis
        assert banded[-1] > 2
        assert run(gpu, data, updates, index, table, reduce) == got  # one pass
        assert len(banded) == 1 + axis


@pytest.mark.parametrize("dtype", ["<f4", "u1", ">f8", "<f2"])
def test_scatter_nd_slices_in_bands(gpu, rng, banded, dtype):
    """ScatterND of whole rows (the slice kernel's case in one pass) and of
    single elements, reduction none and mul, column-major data too."""
    data = random_array(rng, (45, 33), dtype)
    rows = rng.permutation(45)[:17]
    index = np.where(rng.random(17) < 0.5, rows - 45, rows).astype(np.int64)[:, None]
    updates = random_array(rng, (17, 33), dtype)
    want = le(reference("ScatterND", [data, index, updates]))
    table = indexing.scatter_nd("SND", data.shape, index.shape, updates.shape)
    assert run(gpu, data, updates, index, table, sc.Reduce(), binding_bytes=CAP) == want
    assert run(gpu, data, updates, index, table, sc.Reduce(), fortran=True, binding_bytes=CAP) == want
    assert len(banded) == 2 and min(banded) > 2
    pairs = np.stack([rng.integers(-45, 45, 90), rng.integers(-33, 33, 90)], axis=-1).astype(np.int64)
    upd = random_array(rng, (90,), dtype)
    table = indexing.scatter_nd("SND", data.shape, pairs.shape, upd.shape)
    if dtype != ">f8":
        want = reference("ScatterND", [data, pairs, upd], reduction="mul")
        reduce = sc.Reduce("mul", CLS[np.dtype(dtype).kind], True)
        assert run(gpu, data, upd, pairs, table, reduce, binding_bytes=CAP) == le(want)


def test_duplicates_refused_before_any_band(gpu, rng, banded):
    """Two updates of one element in the last band, reduction none: refused,
    and not one band reached the sink."""
    data = random_array(rng, (45, 33), "<f4")
    index = np.array([[0], [44], [7], [-1]], np.int64)  # 44 twice
    updates = random_array(rng, (4, 33), "<f4")
    table, check = indexing.scatter_nd("ScatterND", data.shape, index.shape, updates.shape)
    out = bytearray()
    with pytest.raises(OpError, match="ScatterND: two updates write one element with reduction none"):
        sc.scatter_indexed(gpu, data_of(data), data_of(updates), index_of(index), check, table, sc.Reduce(),
                           out.extend, binding_bytes=CAP)
    assert out == bytearray() and banded == [-(-data.size // 256)]


@pytest.mark.parametrize("bad", [45, -46, 2**32 + 1, -(2**63)])
def test_bad_index_refused_before_any_band(gpu, rng, bad):
    data = random_array(rng, (45, 33), "<f4")
    index = np.array([[3], [bad], [9]], np.int64)
    updates = random_array(rng, (3, 33), "<f4")
    table, check = indexing.scatter_nd("ScatterND", data.shape, index.shape, updates.shape)
    out = bytearray()
    with pytest.raises(ix.BadIndex) as e:
        sc.scatter_indexed(gpu, data_of(data), data_of(updates), index_of(index), check, table, sc.Reduce(),
                           out.extend, binding_bytes=CAP)
    assert out == bytearray() and e.value.position == (1, 0) and e.value.value == bad


def test_no_updates_and_a_short_last_band(gpu, rng, banded):
    """No updates: the data, band by band; an odd size whose last band is short."""
    data = random_array(rng, (7, 77), "u1")
    index = np.zeros((0, 1), np.int64)
    updates = random_array(rng, (0, 77), "u1")
    table = indexing.scatter_nd("SND", data.shape, index.shape, updates.shape)
    assert run(gpu, data, updates, index, table, sc.Reduce(), binding_bytes=CAP) == data.tobytes()
    assert banded == [-(-data.size // 256)]
