"""OneHot's one-pass kernel (gpu/render/one_hot.py, gpu/word_kernels.py) against
onnx.reference and an independent numpy model, byte for byte on random bits:
every value type the op takes (bool, 8- to 128-bit, NaN payloads, -0.0),
every index type (negative, out of range, big-endian, float NaN, infinities,
fractions and -0.0), every axis, rank 0, zero sizes, depth 1, outputs cut
into many bands by a small binding (runs of lines and stretches of one
line), dispatch grids folded past the per-dimension limit. Each case checks
the kernel ran (``gpu.cache["one-hot-last"]``)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from onnxop_cli import one_hot
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import get_gpu, pieces, word_kernels

from conftest import random_array
from tensor_refs import reference, same

VALUES = [np.float32, np.float64, np.float16, np.bool_, np.complex64, np.complex128, np.int8, np.int16, np.int32,
          np.int64, np.uint8, np.uint16, np.uint32, np.uint64, ml_dtypes.bfloat16]
INDICES = [np.float64, np.float32, np.float16, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
           np.uint64]


def model(indices: np.ndarray, depth: int, values: np.ndarray, axis: int) -> np.ndarray:
    """ONNX's OneHot: indices cast to int64 (floats truncated toward zero; NaN and infinities match
    nothing), a negative one wrapped once, ``values[1]`` where it equals the new axis' index."""
    flat = []
    for v in np.asarray(indices).reshape(-1).tolist():
        j = None if isinstance(v, float) and not math.isfinite(v) else int(v)
        flat.append(-1 if j is None or not -depth <= j < depth else j % depth)
    hot = np.array(flat, np.int64).reshape(indices.shape)[..., None] == np.arange(depth)
    return np.moveaxis(np.where(hot, values[1], values[0]), -1, axis)


def run(indices, depth, values, axis=-1, backend=None):
    gpu = get_gpu(backend)
    gpu.cache.pop(word_kernels.ONE_HOT_LAST, None)
    got = one_hot(indices, depth=np.array(depth, np.int64), values=values, axis=axis, backend=backend)
    stats = gpu.cache.get(word_kernels.ONE_HOT_LAST)
    assert got.size == 0 or (stats is not None and stats["bands"] > 0), "the one-hot kernel ran"
    return got, stats


def test_every_value_type(backend, rng):
    indices = rng.integers(-7, 9, (3, 4)).astype(np.int64)
    for k, vtype in enumerate(VALUES):
        values = random_array(rng, (2,), vtype)
        axis = (-1, 0, 1, -3)[k % 4]
        got, _ = run(indices, 6, values, axis, backend)
        assert same(got, model(indices, 6, values, axis)), (vtype, axis)
    for vtype in (np.int8, np.uint16, np.int64):  # onnx.reference's off + hot * (on - off): exact for integers
        values = (rng.integers(1, 100, 2)).astype(vtype)
        want = reference("OneHot", 11, [indices, np.array(6, np.int64), values], {"axis": 1})[0]
        assert same(run(indices, 6, values, 1, backend)[0], want), vtype


def test_every_index_type(backend, rng):
    depth = 9
    values = np.array([3, -8], np.int32)
    for k, itype in enumerate(INDICES):
        low = 0 if np.dtype(itype).kind == "u" else -depth - 2
        indices = rng.integers(low, depth + 2, (2, 3, 5)).astype(itype)
        axis = (0, 2, -1)[k % 3]
        want = reference("OneHot", 11, [indices, np.array(depth, np.int64), values], {"axis": axis})[0]
        got, _ = run(indices, depth, values, axis, backend)
        assert same(got, want), (itype, axis)
        if np.dtype(itype).itemsize > 1:  # big-endian indices, decoded in the kernel
            swapped = indices.astype(np.dtype(itype).newbyteorder(">"))
            assert same(run(swapped, depth, values, 1, backend)[0], model(indices, depth, values, 1)), itype


def test_edge_indices(backend):
    """Extremes of each type, uint64 past 2**63 (no wrap), float NaN, infinities, fractions both sides of
    zero, -0.0 and values just inside and outside [-depth, depth)."""
    depth = 5
    values = np.array([0x7FC00123, 0x80000000], np.uint32).view(np.float32)  # a NaN payload and -0.0
    cases = [
        np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, -5, -6, 4, 5, -(2**32) + 1, 2**32 + 2], np.int64),
        np.array([2**64 - 1, 2**63, 2**32 + 1, 4, 0], np.uint64),
        np.array([-128, 127, -5, -1, 5, 4], np.int8),
        np.array([np.iinfo(np.int32).min, -5, 2**31 - 1, 3], np.int32),
        np.array([np.nan, np.inf, -np.inf, -0.0, -0.9, 0.9, 4.99, 5.0, -5.0, -5.9, -6.0, 2.0**40, -(2.0**40),
                  2.0**31 + 2, 1e300], np.float64),
        np.array([np.nan, np.inf, -0.0, -4.5, 3.75, 5.0, -5.5, 65504.0], np.float16),
        np.array([np.nan, -np.inf, 1e-40, -1e-40, 4.5, -5.999, 2.0**31, 2.0**32 + 7], np.float32),
    ]
    for indices in cases:
        got, _ = run(indices, depth, values, 0, backend)
        assert same(got, model(indices, depth, values, 0)), indices.dtype
    # a deep axis: float16 infinities and NaNs (an exponent past 2**16 within it) match nothing
    deep = np.array([np.inf, -np.inf, np.nan, 3, -1, 65504, -65504], np.float16)
    got, _ = run(deep, 2**17, np.array([1, 2], np.int8), 0, backend)
    assert same(got, model(deep, 2**17, np.array([1, 2], np.int8), 0))


def test_rank_zero_zero_size_depth_one(backend, rng):
    values = random_array(rng, (2,), np.float64)
    for indices in (np.array(3, np.int64), np.array(-1.0, np.float32)):
        for axis in (0, -1):
            assert same(run(indices, 4, values, axis, backend)[0], model(indices, 4, values, axis))
    empty = np.zeros((0, 3), np.int64)
    assert same(run(empty, 4, values, 1, backend)[0], np.zeros((0, 4, 3), np.float64))
    indices = rng.integers(-2, 2, (4, 3)).astype(np.int32)
    assert same(run(indices, 1, values, 1, backend)[0], model(indices, 1, values, 1))


def test_many_bands(backend, rng, monkeypatch):
    """A binding of 256 bytes: runs of whole lines (short lines; a band starting inside an outer, at a
    depth coordinate other than 0), stretches of one line (an inner of 150 elements, axis 0, or of 40
    int64 indices, more than a window holds twice); Fortran-
    ordered indices (little- and big-endian) go through the kernel as a row-major copy: they kept the
    pieces, one dispatch an index (100,000 indices written with -o: 56 s)."""
    monkeypatch.setattr(pieces, "DEFAULT_BAND", 256)
    for shape, depth, axis, vtype, itype in (((7, 5), 11, 1, np.bool_, np.int8), ((1, 150), 2, 0, np.float16, np.int64),
                                             ((10,), 7, -1, np.float64, np.int32), ((3, 2), 10, 0, np.complex128, np.int64),
                                             ((1, 40), 3, 0, np.bool_, np.int64)):  # a line within a band, not a window
        values = random_array(rng, (2,), vtype)
        indices = rng.integers(-depth, depth, shape).astype(itype)
        got, stats = run(indices, depth, values, axis, backend)
        assert same(got, model(indices, depth, values, axis)), (shape, axis)
        assert stats["bands"] > 1, stats
    for itype in (np.int16, np.dtype(">i4"), np.float32):
        indices = np.asfortranarray(rng.integers(-4, 4, (3, 5, 2)).astype(itype))
        got, stats = run(indices, 4, values, 1, backend)
        assert same(got, model(np.ascontiguousarray(indices), 4, values, 1)), itype


def test_bands_ending_inside_a_word_into_a_graphs_tensor(backend, rng, monkeypatch):
    """A graph's OneHot writes its bands into a device buffer (resident.DeviceSink); bands of 1- and 2-byte
    elements end inside a word (51 lines of 5 bytes: 255 bytes), and the next band's place is not 4-aligned.
    It failed with an AssertionError (traceback) for a OneHot of uint8 over 16 MiB, on every adapter."""
    from onnx import TensorProto, helper

    from onnxop_cli import backend as onnx_backend

    monkeypatch.setattr(pieces, "DEFAULT_BAND", 256)
    for vtype, ttype, itype in ((np.uint8, TensorProto.UINT8, np.int64), (np.float16, TensorProto.FLOAT16, np.int8),
                                (np.bool_, TensorProto.BOOL, np.int32)):
        values = random_array(rng, (2,), vtype)
        indices = rng.integers(-11, 11, (70, 5)).astype(itype)
        expected = model(indices, 11, values, 1)
        node = helper.make_node("OneHot", ["i", "d", "v"], ["y"], axis=1)
        graph = helper.make_graph([node], "g", [
            helper.make_tensor_value_info("i", helper.np_dtype_to_tensor_dtype(indices.dtype), indices.shape),
            helper.make_tensor_value_info("d", TensorProto.INT64, []),
            helper.make_tensor_value_info("v", ttype, [2])], [helper.make_tensor_value_info("y", ttype, expected.shape)])
        made = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
        got, = onnx_backend.OnnxopBackend.prepare(made, backend=backend).run([indices, np.array(11, np.int64), values])
        assert same(got, expected), vtype
        assert get_gpu(backend).cache[word_kernels.ONE_HOT_LAST]["bands"] > 2


class _FirstBand(Exception):
    pass


def test_bands_are_made_as_they_run(backend, rng, monkeypatch):
    """A huge OneHot's bands are made when each runs, not listed before the first (a list of every 16 MiB
    band's bounds grew with the output). At most LOOKED bands size the index window; past them it is the
    window no band passes, and the bytes are still right."""
    monkeypatch.setattr(pieces, "DEFAULT_BAND", 256)
    monkeypatch.setattr(pieces, "LOOKED", 2)
    made = {"bands": 0}
    real = word_kernels._bands

    def counted(*a, **k):
        for b in real(*a, **k):
            made["bands"] += 1
            yield b

    monkeypatch.setattr(word_kernels, "_bands", counted)
    values = random_array(rng, (2,), np.float32)
    indices = rng.integers(-9, 9, (40, 3)).astype(np.int64)
    got, stats = run(indices, 9, values, 1, backend)
    assert same(got, model(indices, 9, values, 1)) and stats["bands"] > 2, stats

    def first_drain(self, sink, nbytes):
        raise _FirstBand(made["bands"])

    monkeypatch.setattr(pieces.Run, "drain", first_drain)
    made["bands"] = 0
    try:
        one_hot(rng.integers(0, 9, (4096, 3)).astype(np.int64), depth=np.array(9, np.int64), values=values, axis=1,
                backend=backend)  # 432 KiB: ~1,700 bands of 256 bytes
    except _FirstBand as stopped:
        assert stopped.args[0] <= 2 + 1 + 1, stopped.args  # LOOKED bands looked at, then the first made again
    else:
        raise AssertionError("the one-hot kernel ran no band")


def test_folded_grid_and_poison(backend, rng):
    """More workgroups than a (shrunk) dispatch dimension allows: the grid folds into y; every word of
    a poisoned dst written."""
    gpu = get_gpu(backend)
    depth, values = 201, np.array([1.5, -2.25], np.float32)
    indices = rng.integers(-depth, depth, (64,)).astype(np.int64)
    chunks: list[bytes] = []
    with gpu.lock:
        n = word_kernels.run_one_hot(gpu, [pieces.Source(MemoryBytes(indices))], lambda c: chunks.append(bytes(c)),
                               depth=depth, inner=1, index_kind="i", index_bits=64,
                               off=values[:1].tobytes(), on=values[1:].tobytes(), count=64 * depth, bits=32,
                               max_groups_per_dim=2, poison=0xA5)
    assert n == 64 * depth * 4
    assert b"".join(chunks) == model(indices, depth, values, -1).tobytes()


def test_by_positions_and_lines(backend, rng, monkeypatch):
    """An invocation's elements at one position (the last axis: its depth coordinates compared with
    one index), in one line (axis 0, long lines: each index compared with one depth coordinate), or
    straddling (element by element), for sub-word and wide elements; bands of a 256-byte binding
    starting inside a position."""
    depth = 70  # more than an invocation's 64 bool elements
    indices = rng.integers(-depth, depth, (6,)).astype(np.int64)
    indices[0] = depth - 1  # the last depth coordinate, then the first
    indices[1] = -depth
    for vtype in (np.bool_, np.float16, np.float32, np.float64, np.complex128):
        values = random_array(rng, (2,), vtype)
        assert same(run(indices, depth, values, -1, backend)[0], model(indices, depth, values, -1)), vtype
        lines = rng.integers(-3, 3, (2, 70)).astype(np.int32)
        assert same(run(lines, 3, values, 0, backend)[0], model(lines, 3, values, 0)), vtype
    values = random_array(rng, (2,), np.float32)
    edge = np.array([5, 0, 0, 30], np.int64)  # depth 31: words 16-31 hold position 0's last 15, position 1's first
    assert same(run(edge, 31, values, -1, backend)[0], model(edge, 31, values, -1))
    monkeypatch.setattr(pieces, "DEFAULT_BAND", 256)
    got, stats = run(indices, depth, values, -1, backend)
    assert same(got, model(indices, depth, values, -1)) and stats["bands"] > 1


def test_the_one_hot_bodies_are_its_variants():
    bodies = {word_kernels.one_hot_variant(b, i) for b in (8, 32) for i in (1, 2)}
    assert set(word_kernels.KERNELS["one_hot"].BODIES) == bodies
