"""ReverseSequence on the device (indexed_gather.wgsl's reverse case, its
raw int64 lengths checked as read). Byte for byte against onnx.reference
or an independent numpy reversal on random bits: every element width 2 ..
128 bits, inner blocks of whole words and of part of one, odd sizes, ranks
2 to 8, either axis order, big-endian lengths and data, column-major data,
outputs of several bands; bad lengths (negative, the time axis + 1,
2**32 + 1, int64's extremes) are refused by the first position with
nothing written; zero sizes write nothing. (A whole-word blocks kernel,
reverse_runs.wgsl, ran the row-major cases until its A/B against this one,
benchmarks/variant_kernels.py, found it within the noise on Mesa 25.)
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
    """The reversal on the host, independent of the kernel (time is the other of axes 0, 1)."""
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


def little(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()


def device_reverse(gpu, x: np.ndarray, lens: np.ndarray, batch_axis: int, **kw) -> bytes:
    """``x`` reversed on the device, time the other of axes 0 and 1."""
    return run(gpu, data_of(x, **kw), lens, batch_axis, 1 - batch_axis)


@pytest.mark.parametrize("dtype", WIDTHS)
@pytest.mark.parametrize("batch_axis", [0, 1])
def test_every_width_against_onnx_reference(gpu, rng, dtype, batch_axis):
    shape = (7, 5, 3) if np.dtype(dtype).itemsize >= 4 else (7, 5, 12)  # inner block: whole words
    x = random_array(rng, shape, dtype)
    lens = rng.integers(0, shape[1 - batch_axis] + 1, (shape[batch_axis],)).astype(np.int64)
    lens[0] = shape[1 - batch_axis]  # one whole reversal, one none
    lens[-1] = 0
    native = x.astype(x.dtype.newbyteorder("="))
    assert device_reverse(gpu, x, lens, batch_axis) == little(onnx_reverse(native, lens, batch_axis, 1 - batch_axis))


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
    got = device_reverse(gpu, packed, lens, 0, bits=bits, shape=(d0, d1, inner))
    want = numpy_reverse(codes, lens, 0).reshape(-1)
    unpacked = np.frombuffer(got, np.uint8)
    back = np.stack([(unpacked >> (j * bits)) & ((1 << bits) - 1) for j in range(per)], axis=-1).reshape(-1)
    assert np.array_equal(back, want)


@pytest.mark.parametrize("dtype", ["u1", "<u2", "<f2"])
def test_partial_word_blocks(gpu, rng, dtype):
    """An inner block that is not whole words: one narrow element a (batch, time) step."""
    x = random_array(rng, (6, 11), dtype)
    lens = rng.integers(0, 12, (6,)).astype(np.int64)
    assert device_reverse(gpu, x, lens, 0) == little(numpy_reverse(x, lens, 0))


@pytest.mark.parametrize("rank", range(2, 9))
def test_ranks_and_odd_sizes(gpu, rng, rank):
    shape = tuple(int(v) for v in rng.integers(1, 4, rank))
    shape = (shape[0] + 2, shape[1] + 4) + shape[2:]
    x = random_array(rng, shape, "<f4")
    for batch_axis in (0, 1):
        lens = rng.integers(0, shape[1 - batch_axis] + 1, (shape[batch_axis],)).astype(np.int64)
        assert device_reverse(gpu, x, lens, batch_axis) == numpy_reverse(x, lens, batch_axis).tobytes()


def test_rank_1_refused(gpu):
    with pytest.raises(ix.OpError, match="rank 2 or more"):
        indexing.reverse_sequence("RS", (5,), (5,), 0, 1)


def test_batch_entries_short_long_and_odd(gpu, rng):
    """Blocks of one word: batch entries of odd lengths, shorter than an
    invocation's work (d1 < 16), of one step, and a single long one."""
    for d0, d1 in ((37, 13), (5, 3), (3, 1), (1, 600), (600, 1)):
        x = random_array(rng, (d0, d1), "<f4")
        for batch_axis in (0, 1):
            lens = rng.integers(0, (d1, d0)[batch_axis] + 1, ((d0, d1)[batch_axis],)).astype(np.int64)
            assert device_reverse(gpu, x, lens, batch_axis) == numpy_reverse(x, lens, batch_axis).tobytes(), (d0, d1)


def test_big_endian_lengths_and_data(gpu, rng):
    x = random_array(rng, (6, 9, 2), "<f4")
    lens = rng.integers(0, 10, (6,)).astype(">i8")
    assert device_reverse(gpu, x, lens, 0) == numpy_reverse(x, lens, 0).tobytes()
    for dtype in (">f4", ">i2", ">f8", ">c16"):
        xb = random_array(rng, (6, 9, 2), dtype)
        want = little(numpy_reverse(xb, lens, 0))
        assert device_reverse(gpu, xb, lens, 0) == want, dtype  # byte-swapped on the way


def test_fortran_data(gpu, rng):
    x = random_array(rng, (6, 9, 3), "<f4")
    f = np.asfortranarray(x)
    lens = rng.integers(0, 10, (6,)).astype(np.int64)
    strides = tuple(s // 4 for s in f.strides)
    data = ix.Data(MemoryBytes(f.ravel(order="F")), x.shape, 32, 0, strides)
    got = run(gpu, data, lens, 0, 1)
    assert got == numpy_reverse(x, lens, 0).tobytes()


def test_output_in_bands(gpu, rng):
    x = random_array(rng, (40, 33), "<f4")
    lens = rng.integers(0, 34, (40,)).astype(np.int64)
    got = run(gpu, data_of(x), lens, 0, 1, binding_bytes=512)
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
        assert b"".join(got) == b""
