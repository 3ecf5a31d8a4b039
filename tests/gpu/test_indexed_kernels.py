"""The indexed kernels (gpu/indexed.py), byte for byte against onnx.reference.

Random bits (NaN payloads, -0.0, subnormals), every element width, packed
4- and 2-bit types with odd sizes, big-endian data and indices, int32 and
int64 indices with negative ones; poisoned output, small forced bands and
dispatch grids; indices out of range (2**32 + 1 among them) refused with
nothing handed to the sink; scatters with every reduction, duplicates
applied in index order and the same on every run.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from conftest import random_array
from onnxop_cli.errors import OpError
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.gpu import scatter as sc
from onnxop_cli.ops import indexing
from onnxop_cli.core.sources import MemoryBytes
from properties import CLS

POISON = 0xA5


def reference(op: str, inputs: list[np.ndarray], opset: int = 18, **attrs) -> np.ndarray:
    names = [f"x{i}" for i in range(len(inputs))]
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 0, None) for n in names],
                              [helper.make_tensor_value_info("y", 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return ReferenceEvaluator(model).run(None, dict(zip(names, inputs)))[0]


def data_of(a: np.ndarray, bits: int | None = None, shape=None) -> ix.Data:
    a = np.ascontiguousarray(a)
    swap = 0 if a.dtype.byteorder != ">" else (a.dtype.itemsize // 2 if a.dtype.kind == "c" else a.dtype.itemsize)
    return ix.Data(MemoryBytes(a), a.shape if shape is None else shape, bits or a.dtype.itemsize * 8, swap)


def index_of(i: np.ndarray) -> ix.Index:
    i = np.ascontiguousarray(i)
    return ix.Index(MemoryBytes(i), i.shape, i.dtype.itemsize == 8, i.dtype.byteorder == ">")


def le(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()


def run_gather(gpu, data, index, table_check, bits=None, shape=None, **kw) -> bytes:
    table, check = table_check
    out = bytearray()
    n = ix.gather_indexed(gpu, data_of(data, bits, shape), index_of(index), check, table, out.extend, poison=POISON, **kw)
    assert n == len(out)
    return bytes(out)


def pack(codes: np.ndarray, bits: int) -> np.ndarray:
    """ONNX packing of 2- or 4-bit codes, low bits first, over the whole tensor."""
    per = 8 // bits
    flat = codes.reshape(-1).astype(np.uint8)
    flat = np.concatenate([flat, np.zeros((-len(flat)) % per, np.uint8)])
    shifts = (np.arange(per, dtype=np.uint8) * bits)
    return (flat.reshape(-1, per) << shifts).sum(axis=1).astype(np.uint8)


DTYPES = ["u1", "<i2", "<f4", "<f8", "<c16", "?", ">f4", ">i8", ">c8", ">f2"]


# ------------------------------------------------------------------ gathers


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idx_dtype", ["<i8", "<i4", ">i8"])
def test_gather_matches_reference(gpu, rng, dtype, idx_dtype):
    data = random_array(rng, (4, 5, 3), dtype)
    for axis in (0, 1, -1):
        d = data.shape[axis]
        index = rng.integers(-d, d, (2, 3)).astype(idx_dtype)
        want = reference("Gather", [data, index], axis=axis)
        got = run_gather(gpu, data, index, indexing.gather("Gather", data.shape, index.shape, axis))
        assert got == le(want)


@pytest.mark.parametrize("bits", [4, 2])
def test_gather_packed_odd_sizes(gpu, rng, bits):
    codes = rng.integers(0, 1 << bits, (3, 7, 5), dtype=np.uint8)
    for axis in (0, 2):
        index = rng.integers(-codes.shape[axis], codes.shape[axis], (3,)).astype(np.int64)
        want = pack(np.take(codes, index, axis=axis), bits)
        table = indexing.gather("Gather", codes.shape, index.shape, axis)
        got = run_gather(gpu, pack(codes, bits), index, table, bits=bits, shape=codes.shape)
        assert got == want.tobytes()


def test_gather_bands_and_grid(gpu, rng):
    """Many bands of a tiny forced binding and a folded dispatch grid."""
    data = random_array(rng, (50, 33), "<u2")
    index = rng.integers(-50, 50, (300,)).astype(np.int64)
    table = indexing.gather("Gather", data.shape, index.shape, 0)
    got = run_gather(gpu, data, index, table, binding_bytes=1024, max_groups_per_dim=2)
    assert got == le(np.take(data, index, axis=0))


@pytest.mark.parametrize("dtype", ["u1", "<f4", "<f8", ">i2"])
def test_gather_elements(gpu, rng, dtype):
    data = random_array(rng, (4, 6, 5), dtype)
    for axis in (0, 1, 2):
        shape = list(data.shape)
        shape[axis] = 3
        d = data.shape[axis]
        index = rng.integers(-d, d, shape).astype(np.int64)
        want = reference("GatherElements", [data, index], axis=axis)
        got = run_gather(gpu, data, index, indexing.gather_elements("GE", data.shape, index.shape, axis))
        assert got == le(want)


@pytest.mark.parametrize("batch_dims,ishape", [(0, (3, 2)), (0, (2, 2, 3)), (1, (4, 2, 1)), (1, (4, 2)), (2, (4, 5, 1))])
def test_gather_nd(gpu, rng, batch_dims, ishape):
    data = random_array(rng, (4, 5, 6), "<f4")
    m = ishape[-1]
    dims = data.shape[batch_dims: batch_dims + m]
    index = np.stack([rng.integers(-d, d, ishape[:-1]) for d in dims], axis=-1).astype(np.int64)
    want = reference("GatherND", [data, index], batch_dims=batch_dims)
    got = run_gather(gpu, data, index, indexing.gather_nd("GatherND", data.shape, index.shape, batch_dims))
    assert got == le(want)


@pytest.mark.parametrize("batch_axis,time_axis", [(0, 1), (1, 0)])
def test_reverse_sequence(gpu, rng, batch_axis, time_axis):
    data = random_array(rng, (5, 6, 3), "<i2")
    lens = rng.integers(0, data.shape[time_axis] + 1, (data.shape[batch_axis],)).astype(np.int64)
    want = reference("ReverseSequence", [data, lens], batch_axis=batch_axis, time_axis=time_axis)
    table = indexing.reverse_sequence("RS", data.shape, lens.shape, batch_axis, time_axis)
    assert run_gather(gpu, data, lens, table) == le(want)


def test_rank_zero_and_eight_and_empty(gpu, rng):
    data = random_array(rng, (5,), "<f4")
    index = np.array(-2, np.int64)
    assert run_gather(gpu, data, index, indexing.gather("G", data.shape, (), 0)) == le(data[-2])
    big = random_array(rng, (2, 1, 3, 1, 2, 2, 1, 3), "<f4")
    index = np.array([[1, -3], [0, 2]], np.int64)
    table = indexing.gather("G", big.shape, index.shape, 2)
    assert run_gather(gpu, big, index, table) == le(np.take(big, index, axis=2))
    empty = random_array(rng, (3, 0, 2), "<f4")
    assert run_gather(gpu, empty, np.array([1], np.int64), indexing.gather("G", empty.shape, (1,), 0)) == b""
    none = np.zeros((0,), np.int64)
    assert run_gather(gpu, data, none, indexing.gather("G", data.shape, (0,), 0)) == b""


# ------------------------------------------------------------------ bad indices


@pytest.mark.parametrize("value,dtype", [(2**32 + 1, "<i8"), (-(2**32) + 1, "<i8"), (5, "<i8"), (-6, "<i8"),
                                         (2**31 - 1, "<i4"), (-(2**31), "<i4"), (5, ">i8"), (2**63 - 1, "<i8")])
def test_out_of_range_index_is_refused_and_nothing_written(gpu, rng, value, dtype):
    data = random_array(rng, (5, 4), "<f4")
    index = rng.integers(-5, 5, (3, 4)).astype(dtype)
    index[2, 1] = value
    index[2, 3] = value  # the first bad position is named
    out = []
    table, check = indexing.gather("Gather", data.shape, index.shape, 0)
    with pytest.raises(ix.BadIndex) as e:
        ix.gather_indexed(gpu, data_of(data), index_of(index), check, table, out.append)
    assert out == []
    assert str(e.value) == f"Gather: indices[2, 1] = {value} is out of range [-5, 4] for axis 0 of size 5"


def test_bad_index_in_a_later_chunk_and_gather_nd_bounds(gpu, rng):
    data = random_array(rng, (4, 3), "<f4")
    index = np.array([[3, 2], [-4, -3], [1, 3]], np.int64)  # 3 is out of range for the second axis only
    table, check = indexing.gather_nd("GatherND", data.shape, index.shape, 0)
    with pytest.raises(ix.BadIndex, match=r"indices\[2, 1\] = 3 is out of range \[-3, 2\] for axis 1 of size 3"):
        ix.gather_indexed(gpu, data_of(data), index_of(index), check, table, lambda _: None)
    lens = np.array([2, 7, 1, 0], np.int64)
    table, check = indexing.reverse_sequence("ReverseSequence", (4, 6), lens.shape, 0, 1)
    with pytest.raises(ix.BadIndex, match=r"sequence_lens\[1\] = 7 is out of range \[0, 6\]"):
        ix.gather_indexed(gpu, data_of(random_array(rng, (4, 6), "u1")), index_of(lens), check, table, print)


# ------------------------------------------------------------------ scatters


def run_scatter(gpu, data, updates, index, table_check, reduce, bits=None, shapes=(None, None), **kw) -> bytes:
    table, check = table_check
    out = bytearray()
    sc.scatter_indexed(gpu, data_of(data, bits, shapes[0]), data_of(updates, bits, shapes[1]), index_of(index), check, table, reduce,
                       out.extend, **kw)
    return bytes(out)


def reduce_of(kind: str, dtype, numpy: bool) -> sc.Reduce:
    return sc.Reduce(kind, CLS[np.dtype(dtype).kind], numpy)


SCATTER_TYPES = ["<f4", "<f2", "<i4", "<i8", "u1", "<u8", "<i2", "?", ">f4", "<f8"]


@pytest.mark.every_dtype  # a reduction's kernel is the type's own
@pytest.mark.parametrize("dtype", SCATTER_TYPES)
@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_scatter_elements_reductions_in_index_order(gpu, rng, dtype, reduction):
    if dtype == "<f8" and reduction in ("add", "mul"):
        pytest.skip("float64 add and mul are refused by the op (no f64 in WGSL)")
    data = random_array(rng, (6, 5), dtype)
    updates = random_array(rng, (9, 5), dtype)
    index = rng.integers(-6, 6, (9, 5)).astype(np.int64)  # many duplicates
    want = reference("ScatterElements", [data, index, updates], axis=0, reduction=reduction)
    table = indexing.scatter_elements("SE", data.shape, index.shape, updates.shape, 0)
    got = run_scatter(gpu, data, updates, index, table, reduce_of(reduction, dtype, numpy=False))
    assert got == le(want)
    assert run_scatter(gpu, data, updates, index, table, reduce_of(reduction, dtype, numpy=False)) == got


@pytest.mark.every_dtype  # a reduction's kernel is the type's own
@pytest.mark.parametrize("dtype", ["<f4", "<i8", "u1", "<f2"])
@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_scatter_nd_reductions(gpu, rng, dtype, reduction):
    data = random_array(rng, (5, 4, 3), dtype)
    index = np.stack([rng.integers(-5, 5, (7,)), rng.integers(-4, 4, (7,))], axis=-1).astype(np.int64)
    updates = random_array(rng, (7, 3), dtype)
    want = reference("ScatterND", [data, index, updates], reduction=reduction)
    table = indexing.scatter_nd("SND", data.shape, index.shape, updates.shape)
    reduce = sc.Reduce(reduction, CLS[np.dtype(dtype).kind], True, inner=3)  # slices of 3, as the reference
    got = run_scatter(gpu, data, updates, index, table, reduce, max_groups_per_dim=1)
    assert got == le(want)


@pytest.mark.every_dtype  # a reduction's kernel is the type's own
@pytest.mark.parametrize("inner", [0, 1, 2, 3, 8])
@pytest.mark.parametrize("reduction", ["add", "mul"])
@pytest.mark.parametrize("dtype", ["<f4", "<f2", "bfloat16"])
def test_two_nans_combine_as_the_reference_combines_them(gpu, rng, dtype, reduction, inner):
    """numpy keeps the first or the second of two NaNs depending on its loop (scalar or SIMD);
    inner 0: whole indices, the reference combines scalars."""
    bits = 32 if dtype == "<f4" else 16
    u = f"<u{bits // 8}"
    nan1, nan2 = (0x7FC00001, 0xFFC00002) if bits == 32 else (0x7E01, 0xFE02)
    if dtype == "bfloat16":
        dtype, nan1, nan2 = ml_dtypes.bfloat16, 0x7FC1, 0xFFC2
    tail = (inner,) if inner else ()
    data = np.full((3,) + tail, nan1, u).view(dtype)
    updates = np.full((2,) + tail, nan2, u).view(dtype)
    updates[1] = random_array(rng, tail, dtype) if inner else np.array(1.5, dtype)
    index = np.array([[1], [1]], np.int64)
    want = reference("ScatterND", [data, index, updates], reduction=reduction)
    table = indexing.scatter_nd("SND", data.shape, index.shape, updates.shape)
    reduce = sc.Reduce(reduction, 4 if dtype is ml_dtypes.bfloat16 else 2, True, inner=inner)
    assert run_scatter(gpu, data, updates, index, table, reduce) == le(want)


@pytest.mark.parametrize("dtype", ["u1", "<f8", "<c16", ">i2", "<f4"])
def test_scatter_none_distinct(gpu, rng, dtype):
    data = random_array(rng, (7, 4), dtype)
    index = np.array([[-1], [2], [0]], np.int64)
    updates = random_array(rng, (3, 4), dtype)
    want = reference("ScatterND", [data, index, updates])
    table = indexing.scatter_nd("SND", data.shape, index.shape, updates.shape)
    assert run_scatter(gpu, data, updates, index, table, sc.Reduce()) == le(want)


def test_scatter_packed_4bit(gpu, rng):
    codes = rng.integers(0, 16, (5, 7), dtype=np.uint8)
    ucodes = rng.integers(0, 16, (3, 7), dtype=np.uint8)
    index = np.array([[1], [4], [-5]], np.int64)
    want = codes.copy()
    want[[1, 4, 0]] = ucodes
    table = indexing.scatter_nd("SND", codes.shape, index.shape, ucodes.shape)
    got = run_scatter(gpu, pack(codes, 4), pack(ucodes, 4), index, table, sc.Reduce(), bits=4,
                      shapes=(codes.shape, ucodes.shape))
    assert got == pack(want, 4).tobytes()


def test_scatter_none_with_duplicates_is_refused(gpu, rng):
    data = random_array(rng, (4, 3), "<f4")
    index = np.array([[1], [3], [-3]], np.int64)  # -3 is 1 again
    updates = random_array(rng, (3, 3), "<f4")
    out = []
    table, check = indexing.scatter_nd("ScatterND", data.shape, index.shape, updates.shape)
    with pytest.raises(OpError, match="ScatterND: two updates write one element with reduction none"):
        sc.scatter_indexed(gpu, data_of(data), data_of(updates), index_of(index), check, table, sc.Reduce(),
                           out.append)
    assert out == []


def test_scatter_bad_index(gpu, rng):
    data = random_array(rng, (4, 3), "<f4")
    index = np.array([[0, 1, 2], [1, 2**32 + 1, 0]], np.int64)
    updates = random_array(rng, (2, 3), "<f4")
    table, check = indexing.scatter_elements("ScatterElements", data.shape, index.shape, updates.shape, 0)
    with pytest.raises(ix.BadIndex, match=r"ScatterElements: indices\[1, 1\] = 4294967297 is out of range \[-4, 3\]"):
        sc.scatter_indexed(gpu, data_of(data), data_of(updates), index_of(index), check, table, sc.Reduce(),
                           print)


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter(gpu, rng, mode):
    past = random_array(rng, (3, 2, 6, 4), "<f4")
    update = random_array(rng, (3, 2, 4, 4), "<f4")
    top = 2 if mode == "linear" else 5
    write = rng.integers(0, top + 1, (3,)).astype(np.int64)
    want = reference("TensorScatter", [past, update, write], opset=24, mode=mode, axis=-2)
    table = indexing.tensor_scatter("TS", past.shape, update.shape, write.shape, -2, mode == "circular")
    assert run_scatter(gpu, past, update, write, table, sc.Reduce()) == le(want)


def test_scatter_heavy_duplicates_is_the_reference_sum(gpu, rng):
    """Every update on one of two elements: 200 rounds, exactly the reference's float order."""
    data = random_array(rng, (2,), "<f4")
    updates = rng.standard_normal(400).astype(np.float32)
    index = rng.integers(0, 2, (400,)).astype(np.int64)
    want = reference("ScatterElements", [data, index, updates], axis=0, reduction="add")
    table = indexing.scatter_elements("SE", data.shape, index.shape, updates.shape, 0)
    assert run_scatter(gpu, data, updates, index, table, sc.Reduce("add", 2, False)) == le(want)


# ------------------------------------------------------------------ Fortran order


def f_strides(shape):
    out, acc = [], 1
    for d in shape:
        out.append(acc)
        acc *= d
    return tuple(out)


def fortran_data(a: np.ndarray) -> ix.Data:
    return ix.Data(MemoryBytes(np.ascontiguousarray(a.T)), a.shape, a.dtype.itemsize * 8, 0, f_strides(a.shape))


def fortran_index(i: np.ndarray) -> ix.Index:
    return ix.Index(MemoryBytes(np.ascontiguousarray(i.T)), i.shape, i.dtype.itemsize == 8, fortran=True)


def test_fortran_gather_nd_and_bad_index_position(gpu, rng):
    data = random_array(rng, (4, 5, 3), "<f4")
    index = np.stack([rng.integers(-4, 4, (6, 2)), rng.integers(-5, 5, (6, 2))], axis=-1).astype(np.int64)
    table, check = indexing.gather_nd("GatherND", data.shape, index.shape, 0, f_strides(data.shape),
                                      f_strides(index.shape))
    out = bytearray()
    ix.gather_indexed(gpu, fortran_data(data), fortran_index(index), check, table, out.extend, poison=POISON)
    assert bytes(out) == le(reference("GatherND", [data, index]))
    index[3, 1, 1] = 5  # out of range for axis 1 only: the bound follows the Fortran layout
    with pytest.raises(ix.BadIndex, match=r"indices\[3, 1, 1\] = 5 is out of range \[-5, 4\] for axis 1"):
        ix.gather_indexed(gpu, fortran_data(data), fortran_index(index), check, table, out.extend)


def test_fortran_scatter_elements(gpu, rng):
    data = random_array(rng, (5, 4), "<i4")
    index = rng.integers(-4, 4, (5, 6)).astype(np.int32)
    updates = random_array(rng, (5, 6), "<i4")
    want = reference("ScatterElements", [data, index, updates], axis=1, reduction="add")
    table, check = indexing.scatter_elements("SE", data.shape, index.shape, updates.shape, 1, f_strides(index.shape))
    out = bytearray()
    sc.scatter_indexed(gpu, fortran_data(data), fortran_data(updates), fortran_index(index), check, table,
                       sc.Reduce("add", 1, False), out.extend)
    assert bytes(out) == le(want)


def test_an_output_larger_than_one_binding(gpu, rng, shrink_binding):
    """An output of a binding and 8 rows from data of half a binding: the output in bands, the data in one
    window. The binding is 64 KiB here (it was the adapter's 128 MiB: 136 MiB of output, 1.9 CPU s on every
    backend); the bands are cut by binding_limit(gpu) whatever its size, and test_indexed_big.py's gathers
    read data past the adapter's own limit."""
    shrink_binding(64 << 10)
    limit = ix.binding_limit(gpu)
    row = limit // 128
    data = rng.integers(0, 256, (64, row), dtype=np.uint8)
    index = rng.integers(-64, 64, (limit // row + 8,)).astype(np.int64)
    table, check = indexing.gather("Gather", data.shape, index.shape, 0)
    out = bytearray()
    ix.gather_indexed(gpu, data_of(data), index_of(index), check, table, out.extend)
    assert len(out) > limit
    assert bytes(out) == np.take(data, index, axis=0).tobytes()
    assert sum(n for k, n in gpu.cache[ix.LAST].items() if k.endswith(" reads")) >= 2, gpu.cache[ix.LAST]  # bands


def test_every_rendered_variant_compiles(gpu):
    """Each indexed gather variant and the index check (gpu/render/indexed.py) compile on this backend, each its
    own pipeline (a variant the tables above do not reach too: circular, the scatters' TensorScatter)."""
    from onnxop_cli.gpu.program import Program
    from onnxop_cli.gpu.render import indexed as rendered

    kernels = [rendered.gather(v) for v in rendered.VARIANTS] + [rendered.Check()]
    compiled = [Program(k.label, k.kinds, code=k.wgsl()).on(gpu).pipeline for k in kernels]
    assert len({id(p) for p in compiled}) == len(kernels) == 13
