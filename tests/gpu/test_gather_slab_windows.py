"""Gather by whole vec4 slabs when the data is bound as several windows
(gpu/render/slices.py ``windowed``, gpu/indexed_buffers.py): a slab's part
inside the window copied as vectors, one outside skipped, one across a
window's edge split there -- byte for byte against numpy / onnx.reference
on random bits, every width 8 to 128 bits, resident and streamed windows,
one band (the kernel checks the raw indices) and many (indices.wgsl checks
first; the kernel reads its offsets). Windows, bands and passes are forced
small (``window_bytes``, ``binding_bytes``, ``stream_bytes``); the path each
call took is asserted from ``gpu.cache[ix.LAST]``. Poisoned output buffers
make a vector no window wrote show.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from conftest import random_array
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.gpu.render import slices
from onnxop_cli.ops import indexing

POISON = 0x5A
WIDTHS = ["bool", "u1", "<i2", "<f2", "<f4", "<i4", "<f8", "<i8", "<c16"]  # 8 .. 128 bits


def data_of(a: np.ndarray) -> ix.Data:
    swap = 0 if a.dtype.byteorder != ">" else (a.dtype.itemsize // 2 if a.dtype.kind == "c" else a.dtype.itemsize)
    return ix.Data(MemoryBytes(np.ascontiguousarray(a)), a.shape, a.dtype.itemsize * 8, swap)


def index_of(i: np.ndarray) -> ix.Index:
    return ix.Index(MemoryBytes(np.ascontiguousarray(i)), i.shape, i.dtype.itemsize == 8, i.dtype.byteorder == ">")


def le(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()


def native(a: np.ndarray) -> np.ndarray:
    return a.astype(a.dtype.newbyteorder("="))


def window_elems(item: int, window_bytes: int) -> int:
    """Elements per window, as indexed_buffers.plan_windows cuts them."""
    return max(128, (window_bytes // item) // 128 * 128)


def gather(gpu, x, i, axis=0, nd=False, **kw) -> bytes:
    table, check = (indexing.gather_nd("GND", x.shape, i.shape, 0) if nd
                    else indexing.gather("Gather", x.shape, i.shape, axis))
    out = bytearray()
    n = ix.gather_indexed(gpu, data_of(x), index_of(i), check, table, out.extend, poison=POISON, **kw)
    assert n == len(out)
    return bytes(out)


def took(gpu) -> tuple[int, int]:
    """(slabs kernel taken, its windowed runs) of the last call."""
    c = gpu.cache[ix.LAST]
    return c.get("slabs", 0), c.get("windowed slab runs", 0)


def windows_of(x: np.ndarray, window_bytes: int) -> int:
    return -(-x.size // window_elems(x.dtype.itemsize, window_bytes))


@pytest.mark.parametrize("dtype", WIDTHS)
@pytest.mark.parametrize("band", [None, 1024])
@pytest.mark.parametrize("stream", [None, 2048])
def test_rows_straddle_window_edges(gpu, rng, dtype, band, stream):
    """Rows of 48 bytes (3 vectors) in windows of 128 elements: 128 * item
    bytes is no multiple of 48, so rows straddle window edges; one band or
    several, resident or streamed."""
    item = np.dtype(dtype).itemsize
    wb = 128 * item
    x = random_array(rng, (7 * item + 5, 48 // item), dtype)
    i = rng.integers(-x.shape[0], x.shape[0], (2 * x.shape[0] + 3,)).astype(np.int64)
    got = gather(gpu, x, i, window_bytes=wb, binding_bytes=band, stream_bytes=stream)
    assert got == le(np.take(x, i, axis=0))
    assert windows_of(x, wb) > 2
    assert took(gpu) == (1, windows_of(x, wb) * (1 if band is None else -(-len(got) // max(band, 128 * item))))


@pytest.mark.parametrize("dtype", ["u1", "<f2", "<f4", "<f8", "<c16"])
def test_rows_longer_than_a_window(gpu, rng, dtype):
    """A row spanning three windows, starting anywhere in one: every slab
    split at two or three edges."""
    item = np.dtype(dtype).itemsize
    wb = 128 * item
    x = random_array(rng, (9, 2 * 128 + 3 * 16 // item), dtype)
    i = rng.integers(-9, 9, (23,)).astype(np.int64)
    for band in (None, 2 * wb):
        assert gather(gpu, x, i, window_bytes=wb, binding_bytes=band) == le(np.take(x, i, axis=0))
        assert took(gpu)[1] > 0


@pytest.mark.parametrize("dtype", ["u1", "<i2", "<f4", "<f8", "<c16"])
def test_inner_axis_outer_dims(gpu, rng, dtype):
    """Gather on an inner axis with outer dims > 1 (rank 4), several index
    axes, negative indices: slabs of two vectors, outer blocks across edges."""
    item = np.dtype(dtype).itemsize
    x = random_array(rng, (3, 11, 2, 32 // item), dtype)
    i = rng.integers(-11, 11, (4, 5)).astype(np.int64)
    i[0, 0], i[0, 1] = -11, 10
    want = le(np.take(x, i, axis=1))
    for band, stream in [(None, None), (None, 1024), (256, None), (256, 512)]:
        assert gather(gpu, x, i, axis=1, window_bytes=128 * item, binding_bytes=band, stream_bytes=stream) == want
        assert took(gpu)[1] > 0
    y = random_array(rng, (5, 9, 7, 16 // item), dtype)  # axis 2, one vector a slab
    j = rng.integers(-7, 7, (6,)).astype(np.int64)
    assert gather(gpu, y, j, axis=2, window_bytes=128 * item) == le(np.take(y, j, axis=2))
    assert took(gpu)[1] > 0


def test_many_invocations_chunks_cross_slabs(gpu, rng):
    """More vectors than one invocation's chunk, and chunks holding parts
    of several slabs (rows of 5 vectors), over many windows and bands."""
    x = random_array(rng, (997, 20), "<f4")
    i = rng.integers(-997, 997, (3001,)).astype(np.int64)
    want = le(np.take(x, i, axis=0))
    assert 3001 * 5 > 4 * slices.CHUNK
    for band in (None, 40000):
        assert gather(gpu, x, i, window_bytes=4096, binding_bytes=band) == want
        assert took(gpu)[1] >= windows_of(x, 4096)


@pytest.mark.parametrize("wide", [True, False])
def test_int32_indices_and_fallbacks(gpu, rng, wide):
    """int32 indices: many bands take the slabs (indices.wgsl's offsets);
    one band keeps the element kernel, whose checks read int32. Big-endian
    data and slabs not whole vectors fall back to the element kernel: the
    same bytes either way."""
    x = random_array(rng, (67, 8), "<f4")
    i = rng.integers(-67, 67, (101,)).astype(np.int64 if wide else np.int32)
    want = le(np.take(x, i, axis=0))
    assert gather(gpu, x, i, window_bytes=512, binding_bytes=512) == want
    assert took(gpu)[0] == 1 and took(gpu)[1] > 0
    assert gather(gpu, x, i, window_bytes=512) == want
    assert took(gpu) == ((1, windows_of(x, 512)) if wide else (0, 0))
    assert gather(gpu, x, i, window_bytes=512, slice_copy=False) == want and took(gpu) == (0, 0)
    b = x.astype(">f4")
    assert gather(gpu, b, i, window_bytes=512) == want and took(gpu) == (0, 0)
    z = random_array(rng, (67, 6), "<f4")  # 24-byte rows: words, not vectors
    assert gather(gpu, z, i, window_bytes=512) == le(np.take(z, i, axis=0)) and took(gpu) == (0, 0)


def test_big_endian_indices(gpu, rng):
    x = random_array(rng, (50, 12), "<f4")
    i = rng.integers(-50, 50, (77,)).astype(">i8")
    want = le(np.take(x, native(i), axis=0))
    for band in (None, 512):
        assert gather(gpu, x, i, window_bytes=512, binding_bytes=band) == want
        assert took(gpu)[1] > 0


def test_gather_nd_vec4_slices_in_windows(gpu, rng):
    """GatherND's slices of whole vectors take the windowed slabs too."""
    x = random_array(rng, (6, 5, 12), "<f4")
    t = np.stack([rng.integers(-6, 6, 40), rng.integers(-5, 5, 40)], -1).astype(np.int64)
    model = helper.make_model(helper.make_graph(
        [helper.make_node("GatherND", ["x", "i"], ["y"])], "g",
        [helper.make_tensor_value_info(n, 0, None) for n in "xi"], [helper.make_tensor_value_info("y", 0, None)]),
        opset_imports=[helper.make_opsetid("", 18)])
    want = ReferenceEvaluator(model).run(None, {"x": x, "i": t})[0].tobytes()
    for band in (None, 512):
        assert gather(gpu, x, t, nd=True, window_bytes=512, binding_bytes=band) == want
        assert took(gpu)[1] > 0


@pytest.mark.parametrize("bad", [2**32 + 1, 2**63 - 1, -(2**63), 67, -68])
@pytest.mark.parametrize("band", [None, 512])
def test_bad_index_nothing_written(gpu, rng, bad, band):
    """One band: the kernel checks the raw indices in every window's run,
    the status read before the band goes out; many bands: indices.wgsl
    before any. Either way BadIndex names the first bad position and
    nothing reaches the sink."""
    x = random_array(rng, (67, 8), "<f4")
    i = rng.integers(-67, 67, (101,)).astype(np.int64)
    i[60], i[80] = bad, bad
    table, check = indexing.gather("Gather", x.shape, i.shape, 0)
    for stream in (None, 1024):
        out = bytearray()
        with pytest.raises(ix.BadIndex) as e:
            ix.gather_indexed(gpu, data_of(x), index_of(i), check, table, out.extend, window_bytes=512,
                              binding_bytes=band, stream_bytes=stream)
        assert out == bytearray()
        assert e.value.position == (60,) and e.value.value == bad


def test_zero_sizes(gpu, rng):
    x = random_array(rng, (67, 8), "<f4")
    assert gather(gpu, x, np.zeros((0,), np.int64), window_bytes=512) == b""
    assert gather(gpu, x, np.zeros((3, 0), np.int64), window_bytes=512, binding_bytes=512) == b""
    y = random_array(rng, (4, 0, 8), "<f4")
    assert gather(gpu, y, np.array([1, -1], np.int64), axis=2, window_bytes=512) == b""


@pytest.mark.parametrize("dtype", ["u1", "<f4", "<c16"])
def test_one_window_many_bands(gpu, rng, dtype):
    """The source one buffer, the output in several bands: each band runs
    ``windowed`` over the whole source from its first vector, reading
    indices.wgsl's offsets (int64 and int32)."""
    item = np.dtype(dtype).itemsize
    x = random_array(rng, (37, 64 // item), dtype)
    for idt in (np.int64, np.int32):
        i = rng.integers(-37, 37, (53,)).astype(idt)
        got = gather(gpu, x, i, binding_bytes=128 * item)
        assert got == le(np.take(x, i, axis=0))
        assert took(gpu) == (1, -(-len(got) // (128 * item)))
