"""ReverseSequence by whole-word blocks
(shaders/reverse_runs.wgsl, gpu/reverse_runs.py). Every test asserts which
kernel ran (``gpu.cache[ix.LAST]["runs"]``: a silent fallback to the element
kernel fails it, and so does the blocks kernel taken where it must not be)
and compares byte for byte with onnx.reference or an independent numpy
reversal on random bits, and with the element kernel (``slice_copy=False``):
every element width 2 .. 128 bits, odd sizes, ranks 2 to 8, either axis
order, big-endian lengths; big-endian and column-major data keep the
element kernel; bad lengths (negative, the time axis + 1, 2**32 + 1, int64's
extremes) are refused with nothing written; zero sizes write nothing.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from conftest import random_array
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.ops import indexing

WIDTHS = ["bool", "u1", "<i2", "<f2", "<f4", "<i4", "<f8", "<i8", "<c16"]


def onnx_reverse(x: np.ndarray, lens: np.ndarray, batch_axis: int, time_axis: int) -> np.ndarray:
    node = helper.make_node("ReverseSequence", ["x", "l"], ["y"], batch_axis=batch_axis, time_axis=time_axis)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 0, None) for n in ("x", "l")],
                              [helper.make_tensor_value_info("y", 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with np.errstate(all="ignore"):
        return ReferenceEvaluator(model).run(None, {"x": x, "l": lens})[0]


def numpy_reverse(x: np.ndarray, lens, batch_axis: int) -> np.ndarray:
    """The reversal on the host, independent of both kernels (time is the other of axes 0, 1)."""
    y = x.copy()
    for b, n in enumerate(int(v) for v in lens):
        if batch_axis == 0:
            y[b, :n] = x[b, :n][::-1]
        else:
            y[:n, b] = x[:n, b][::-1]
    return y


def run(gpu, data: ix.Data, lens: np.ndarray, batch_axis: int, time_axis: int, **kw) -> bytes:
    table, check = indexing.reverse_sequence("RS", data.shape, lens.shape, batch_axis, time_axis, data.strides)
    out = bytearray()
    index = ix.Index(MemoryBytes(np.ascontiguousarray(lens)), lens.shape, True, lens.dtype.byteorder == ">")
    n = ix.gather_indexed(gpu, data, index, check, table, out.extend, poison=0xA5, **kw)
    assert n == len(out)
    return bytes(out)


def data_of(a: np.ndarray, bits: int | None = None, shape=None, strides=None) -> ix.Data:
    bits = bits or (8 if a.dtype == np.bool_ else a.dtype.itemsize * 8)
    swap = a.dtype.itemsize if a.dtype.byteorder == ">" and a.dtype.itemsize > 1 else 0
    if swap and a.dtype.kind == "c":
        swap = a.dtype.itemsize // 2
    return ix.Data(MemoryBytes(np.ascontiguousarray(a)), shape or a.shape, bits, swap, strides)


def took(gpu, blocks: bool) -> None:
    assert bool(gpu.cache[ix.LAST].get("runs")) == blocks, gpu.cache[ix.LAST]


def little(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()


def both(gpu, x: np.ndarray, lens: np.ndarray, batch_axis: int, blocks: bool = True, **kw) -> bytes:
    """The blocks kernel's bytes (asserting it ran, or not), equal to the element kernel's."""
    data = data_of(x, **kw)
    got = run(gpu, data, lens, batch_axis, 1 - batch_axis)
    took(gpu, blocks)
    assert run(gpu, data, lens, batch_axis, 1 - batch_axis, slice_copy=False) == got
    took(gpu, False)
    return got


@pytest.mark.parametrize("dtype", WIDTHS)
@pytest.mark.parametrize("batch_axis", [0, 1])
def test_every_width_against_onnx_reference(gpu, rng, dtype, batch_axis):
    shape = (7, 5, 3) if np.dtype(dtype).itemsize >= 4 else (7, 5, 12)  # inner block: whole words
    x = random_array(rng, shape, dtype)
    lens = rng.integers(0, shape[1 - batch_axis] + 1, (shape[batch_axis],)).astype(np.int64)
    lens[0] = shape[1 - batch_axis]  # one whole reversal, one none
    lens[-1] = 0
    native = x.astype(x.dtype.newbyteorder("="))
    assert both(gpu, x, lens, batch_axis) == little(onnx_reverse(native, lens, batch_axis, 1 - batch_axis))


@pytest.mark.parametrize("bits", [2, 4])
def test_packed_2_and_4_bit(gpu, rng, bits):
    per = 8 // bits
    d0, d1, inner = 5, 9, 32 // bits  # one word per block
    codes = rng.integers(0, 1 << bits, (d0, d1, inner)).astype(np.uint8)
    packed = np.zeros(codes.size // per, np.uint8)
    flat = codes.reshape(-1)
    for j in range(per):
        packed |= flat[j::per] << (j * bits)
    lens = rng.integers(0, d1 + 1, (d0,)).astype(np.int64)
    got = both(gpu, packed, lens, 0, bits=bits, shape=(d0, d1, inner))
    want = numpy_reverse(codes, lens, 0).reshape(-1)
    unpacked = np.frombuffer(got, np.uint8)
    back = np.stack([(unpacked >> (j * bits)) & ((1 << bits) - 1) for j in range(per)], axis=-1).reshape(-1)
    assert np.array_equal(back, want)


@pytest.mark.parametrize("dtype", ["u1", "<u2", "<f2"])
def test_partial_word_blocks_keep_the_element_kernel(gpu, rng, dtype):
    """An inner block that is not whole words (one narrow element) is not the blocks kernel's."""
    x = random_array(rng, (6, 11), dtype)
    lens = rng.integers(0, 12, (6,)).astype(np.int64)
    assert both(gpu, x, lens, 0, blocks=False) == little(numpy_reverse(x, lens, 0))


@pytest.mark.parametrize("rank", range(2, 9))
def test_ranks_and_odd_sizes(gpu, rng, rank):
    shape = tuple(int(v) for v in rng.integers(1, 4, rank))
    shape = (shape[0] + 2, shape[1] + 4) + shape[2:]
    x = random_array(rng, shape, "<f4")
    for batch_axis in (0, 1):
        lens = rng.integers(0, shape[1 - batch_axis] + 1, (shape[batch_axis],)).astype(np.int64)
        assert both(gpu, x, lens, batch_axis) == numpy_reverse(x, lens, batch_axis).tobytes()


def test_rank_1_refused(gpu):
    with pytest.raises(ix.OpError, match="rank 2 or more"):
        indexing.reverse_sequence("RS", (5,), (5,), 0, 1)


def test_one_length_per_invocation_boundary(gpu, rng):
    """Blocks of one word, 16 words an invocation: batch entries start mid-invocation
    (odd d1) and an invocation spans several entries (d1 < 16)."""
    for d0, d1 in ((37, 13), (5, 3), (3, 1), (1, 600), (600, 1)):
        x = random_array(rng, (d0, d1), "<f4")
        for batch_axis in (0, 1):
            lens = rng.integers(0, (d1, d0)[batch_axis] + 1, ((d0, d1)[batch_axis],)).astype(np.int64)
            assert both(gpu, x, lens, batch_axis) == numpy_reverse(x, lens, batch_axis).tobytes(), (d0, d1)


def test_big_endian_lengths_and_data(gpu, rng):
    x = random_array(rng, (6, 9, 2), "<f4")
    lens = rng.integers(0, 10, (6,)).astype(">i8")
    assert both(gpu, x, lens, 0) == numpy_reverse(x, lens, 0).tobytes()
    for dtype in (">f4", ">i2", ">f8", ">c16"):
        xb = random_array(rng, (6, 9, 2), dtype)
        want = little(numpy_reverse(xb, lens, 0))
        assert both(gpu, xb, lens, 0, blocks=False) == want, dtype  # byte swaps: the element kernel


def test_fortran_data_keeps_the_element_kernel(gpu, rng):
    x = random_array(rng, (6, 9, 3), "<f4")
    f = np.asfortranarray(x)
    lens = rng.integers(0, 10, (6,)).astype(np.int64)
    strides = tuple(s // 4 for s in f.strides)
    data = ix.Data(MemoryBytes(f.ravel(order="F")), x.shape, 32, 0, strides)
    got = run(gpu, data, lens, 0, 1)
    took(gpu, False)
    assert got == numpy_reverse(x, lens, 0).tobytes()


def test_bands_keep_the_element_kernel(gpu, rng):
    x = random_array(rng, (40, 33), "<f4")
    lens = rng.integers(0, 34, (40,)).astype(np.int64)
    got = run(gpu, data_of(x), lens, 0, 1, binding_bytes=512)
    took(gpu, False)
    assert got == numpy_reverse(x, lens, 0).tobytes()


@pytest.mark.parametrize("bad", [-1, "d+1", 2**32 + 1, 2**32, 2**63 - 1, -(2**63)])
@pytest.mark.parametrize("batch_axis", [0, 1])
def test_bad_lengths_refused_nothing_written(gpu, rng, bad, batch_axis):
    x = random_array(rng, (30, 40) if batch_axis == 0 else (40, 30), "<f4")
    d = 40
    value = d + 1 if bad == "d+1" else bad
    for big in (False, True):
        lens = rng.integers(0, d + 1, (30,)).astype(">i8" if big else "<i8")
        lens[23] = value
        lens[27] = value  # the smallest position is named
        got = []
        table, check = indexing.reverse_sequence("RS", x.shape, lens.shape, batch_axis, 1 - batch_axis)
        with pytest.raises(ix.BadIndex) as e:
            ix.gather_indexed(gpu, data_of(x), ix.Index(MemoryBytes(lens), lens.shape, True, big), check, table,
                              got.append)
        took(gpu, True)
        assert f"sequence_lens[23] = {value} is out of range [0, 40]" in str(e.value) and e.value.value == value
        assert got == []


def test_zero_sizes(gpu, rng):
    for shape, batch_axis in (((0, 5, 2), 0), ((4, 0, 2), 0), ((4, 5, 0), 0), ((0, 3), 1)):
        x = random_array(rng, shape, "<f4")
        lens = np.zeros((shape[batch_axis],), np.int64)
        got = []
        table, check = indexing.reverse_sequence("RS", x.shape, lens.shape, batch_axis, 1 - batch_axis)
        assert ix.gather_indexed(gpu, data_of(x), ix.Index(MemoryBytes(lens), lens.shape), check, table,
                                 got.append) == 0
        took(gpu, False)
        assert b"".join(got) == b""


# ------------------------------------------------------------------ GatherElements by runs (gather_elements_rows.wgsl)

ROWS_WIDTHS = ("<f4", "<i4", "<f8", "<i8")  # 32 and 64 bits: the runs kernel's


def onnx_gather_elements(x: np.ndarray, i: np.ndarray, axis: int) -> np.ndarray:
    node = helper.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 0, None) for n in ("x", "i")],
                              [helper.make_tensor_value_info("y", 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with np.errstate(all="ignore"):
        return ReferenceEvaluator(model).run(None, {"x": x, "i": i})[0]


def numpy_gather_elements(x: np.ndarray, i: np.ndarray, axis: int) -> np.ndarray:
    d = x.shape[axis]
    part = x[tuple(slice(0, n) if k != axis else slice(None) for k, n in enumerate(i.shape))]
    return np.take_along_axis(part, np.where(i < 0, i + d, i).astype(np.int64), axis)


def gather_elements(gpu, data: ix.Data, i: np.ndarray, axis: int, fortran: bool = False, **kw) -> bytes:
    istrides = tuple(s // i.itemsize for s in i.strides) if fortran else None
    table, check = indexing.gather_elements("GE", data.shape, i.shape, axis, data.strides, istrides)
    raw = i.ravel(order="F") if fortran else np.ascontiguousarray(i)
    index = ix.Index(MemoryBytes(raw), i.shape, True, i.dtype.byteorder == ">", fortran)
    out = bytearray()
    assert ix.gather_indexed(gpu, data, index, check, table, out.extend, poison=0xA5, **kw) == len(out)
    return bytes(out)


def took_rows(gpu, rows: bool) -> None:
    assert bool(gpu.cache[ix.LAST].get("rows")) == rows, gpu.cache[ix.LAST]


def both_ge(gpu, x: np.ndarray, i: np.ndarray, axis: int, rows: bool = True, **kw) -> bytes:
    """The runs kernel's bytes (asserting it ran, or not), equal to the element kernel's."""
    data = data_of(x)
    got = gather_elements(gpu, data, i, axis, **kw)
    took_rows(gpu, rows)
    assert gather_elements(gpu, data, i, axis, slice_copy=False, **kw) == got
    took_rows(gpu, False)
    return got


@pytest.mark.parametrize("dtype", WIDTHS)
@pytest.mark.parametrize("axis", [0, 1])
def test_gather_elements_every_width_against_onnx_reference(gpu, rng, dtype, axis):
    x = random_array(rng, (21, 37), dtype)
    d = x.shape[axis]
    i = rng.integers(-d, d, (19, 37) if axis == 0 else (21, 35)).astype(np.int64)  # odd sizes
    i[0, 0], i[-1, -1] = -d, d - 1
    native = x.astype(x.dtype.newbyteorder("="))
    want = little(onnx_gather_elements(native, i, axis))
    assert both_ge(gpu, x, i, axis, rows=dtype in ROWS_WIDTHS) == want


@pytest.mark.parametrize("rank", range(1, 9))
def test_gather_elements_ranks(gpu, rng, rank):
    for dtype in ("<f4", "<f8"):
        shape = tuple(int(v) for v in rng.integers(2, 5, rank - 1)) + (int(rng.integers(1, 40)),)
        x = random_array(rng, shape, dtype)
        for axis in {0, rank - 1, int(rng.integers(0, rank))}:
            ishape = tuple(int(rng.integers(1, s + 1)) if k != axis else int(rng.integers(1, 30))
                           for k, s in enumerate(shape))
            i = rng.integers(-shape[axis], shape[axis], ishape).astype(np.int64)
            assert both_ge(gpu, x, i, axis) == numpy_gather_elements(x, i, axis).tobytes(), (shape, ishape, axis)


def test_gather_elements_rows_long_and_short(gpu, rng):
    """Rows of 16 and more (the adds-only run), shorter, and counts not whole runs or vectors."""
    for shape, ishape in (((3, 64), (3, 64)), ((5, 16), (5, 16)), ((2, 33), (2, 47)), ((7, 3), (7, 5)),
                          ((1, 1), (1, 1)), ((300,), (4097,))):
        for dtype in ("<f4", "<f8"):
            x = random_array(rng, shape, dtype)
            axis = len(shape) - 1
            i = rng.integers(-shape[axis], shape[axis], ishape).astype(np.int64)
            assert both_ge(gpu, x, i, axis) == numpy_gather_elements(x, i, axis).tobytes(), (shape, ishape)


def test_gather_elements_big_endian_and_fortran(gpu, rng):
    x = random_array(rng, (9, 23), "<f4")
    i = rng.integers(-23, 23, (9, 20)).astype(">i8")
    assert both_ge(gpu, x, i, 1) == numpy_gather_elements(x, i.astype("<i8"), 1).tobytes()
    f = np.asfortranarray(random_array(rng, (9, 23), "<f8"))  # column-major data: the table's strides
    data = ix.Data(MemoryBytes(f.ravel(order="F")), f.shape, 64, 0, tuple(s // 8 for s in f.strides))
    j = rng.integers(-23, 23, (9, 20)).astype(np.int64)
    assert gather_elements(gpu, data, j, 1) == numpy_gather_elements(f, j, 1).tobytes()
    took_rows(gpu, True)
    jf = np.asfortranarray(j)  # column-major indices: the element kernel
    assert gather_elements(gpu, data_of(np.ascontiguousarray(f)), jf, 1, fortran=True) == \
        numpy_gather_elements(f, j, 1).tobytes()
    took_rows(gpu, False)
    for dtype in (">f4", ">f8"):  # byte-swapped data: the element kernel
        xb = random_array(rng, (9, 23), dtype)
        assert both_ge(gpu, xb, j, 1, rows=False) == little(numpy_gather_elements(xb, j, 1)), dtype
    assert gather_elements(gpu, data_of(x), j, 1, binding_bytes=256) == numpy_gather_elements(x, j, 1).tobytes()
    took_rows(gpu, False)  # bands: the element kernel


@pytest.mark.parametrize("bad", [2**32 + 1, 2**32, 2**63 - 1, -(2**63), "d", "-d-1"])
@pytest.mark.parametrize("where", [(1, 10), (2, 23), (3, 2)])
def test_gather_elements_bad_refused_nothing_written(gpu, rng, bad, where):
    """Bad in an adds-only run (rows 40 wide, runs of 16), at such a run's end, in a run across two rows."""
    for dtype in ("<f4", "<f8"):
        x = random_array(rng, (4, 40), dtype)
        value = {"d": 40, "-d-1": -41}.get(bad, bad)
        for big in (False, True):
            i = rng.integers(-40, 40, (4, 40)).astype(">i8" if big else "<i8")
            i[where] = value
            i[3, 39] = value  # the smallest position is named
            table, check = indexing.gather_elements("GE", x.shape, i.shape, 1)
            got = []
            with pytest.raises(ix.BadIndex) as e:
                ix.gather_indexed(gpu, data_of(x), ix.Index(MemoryBytes(i), i.shape, True, big), check, table,
                                  got.append)
            took_rows(gpu, True)
            assert f"indices[{where[0]}, {where[1]}] = {value} is out of range [-40, 39]" in str(e.value)
            assert e.value.value == value and got == []


def test_gather_elements_zero_sizes(gpu, rng):
    for shape, ishape, axis in (((4, 5), (0, 5), 1), ((4, 5), (4, 0), 1), ((0, 5), (0, 3), 1), ((4, 5), (0, 5), 0)):
        x = random_array(rng, shape, "<f4")
        i = np.zeros(ishape, np.int64)
        got = []
        table, check = indexing.gather_elements("GE", shape, ishape, axis)
        assert ix.gather_indexed(gpu, data_of(x), ix.Index(MemoryBytes(i), ishape), check, table, got.append) == 0
        took_rows(gpu, False)
        assert b"".join(got) == b""
