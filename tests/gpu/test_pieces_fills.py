"""Fills and triangles by runs (shaders/pieces_runs.wgsl modes 1-3 through
gpu/runs.py): ConstantOfShape, EyeLike's zeros, Pad's and
CenterCropPad's constant borders as vec4 stores of the fill's word pattern,
Trilu's rows as their kept columns copied and the rest filled.

Against onnx.reference (or numpy) on random bits, byte for byte: every width
(bool, 8, 16, 32, 64, 128 bits, int4 through the API), NaN-payload and -0.0
fill values, ranks 0-8, zero sizes, Trilu's
k positive, negative, beyond the matrix and past 2**31, batched, upper and
lower, cut across small bands; Expand's and Tile's repeats of whole rows
(gpu/repeats.py) against numpy, the views it leaves to the gather kernel
on it. Each test asserts which kernel ran, so a
silent fallback to shaders/pieces.wgsl fails it. The kernel directly (fills at
every alignment sharing edge words, 2- and 4-bit packed): tests/gpu/test_pieces.py."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from conftest import random_array
from properties import pieces_kernels
from onnx import numpy_helper
from tensor_refs import reference, same

from onnxop_cli import (
    center_crop_pad,
    constant_of_shape,
    expand,
    eye_like,
    one_hot,
    pad,
    tile,
    transpose,
    trilu,
)
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import get_gpu, pieces, repeats, runs

WIDTHS = [np.bool_, np.int8, np.uint8, np.float16, ml_dtypes.bfloat16, np.float32, np.int32, np.float64,
          np.int64]
_NAN = {2: 0x7C01, 4: 0x7F800123, 8: 0xFFF0000000000ABC}


@pytest.fixture
def taken(monkeypatch):
    """Parts each kernel ran in this test: {"runs": n, "general": n} (properties.pieces_kernels)."""
    return pieces_kernels(monkeypatch)


def _values(rng, dtype) -> list[np.ndarray]:
    """One-element fill values: random bits, and for floats a NaN with a payload and -0.0."""
    dtype = np.dtype(dtype)
    out = [random_array(rng, (1,), dtype)]
    if dtype.kind == "f" or dtype == ml_dtypes.bfloat16:
        size = dtype.itemsize
        nan = _NAN[size] if dtype != ml_dtypes.bfloat16 else 0xFF81
        out += [np.array([nan], f"u{size}").view(dtype), np.array([-0.0], dtype)]
    return out


# ------------------------------------------------------------ the kernel directly


def test_fill_words():
    """The pattern: the element repeated, band word w = words[w % 4]."""
    assert runs.fill_words(bytes([0xA]), 4) == (0xAAAAAAAA,) * 4
    assert runs.fill_words(bytes([0x12, 0x34]), 16) == (0x34123412,) * 4
    assert runs.fill_words(bytes(range(1, 9)), 64) == (0x04030201, 0x08070605) * 2
    assert runs.fill_words(bytes(range(16)), 128) == (0x03020100, 0x07060504, 0x0B0A0908, 0x0F0E0D0C)


# ------------------------------------------------------------ the operators


@pytest.mark.parametrize("dtype", WIDTHS + [ml_dtypes.int4, ml_dtypes.uint4])
def test_constant_of_shape_every_width(backend, rng, dtype, taken):
    """ConstantOfShape of ranks 0-8, odd and zero sizes: long outputs by runs only, short ones (below
    one row of MIN_ROW_BYTES) on the general kernel."""
    bits = 4 if dtype in (ml_dtypes.int4, ml_dtypes.uint4) else np.dtype(dtype).itemsize * 8
    values = [np.array([5], dtype)] if bits == 4 else _values(rng, dtype)
    for value in values:
        tensor = numpy_helper.from_array(value)
        for shape in ([], [0], [3, 0, 5], [7], [131], [3, 67], [2, 3, 1, 5, 1, 2, 3, 9], [1, 1, 1, 1, 1, 1, 1, 1],
                      [5, 1, 77]):
            runs_before, general_before = taken["runs"], taken["general"]
            dims = np.array(shape, np.int64)
            want = reference("ConstantOfShape", 25, [dims], {"value": tensor}, out_types=[tensor.data_type])[0]
            got = constant_of_shape(dims, value=value, backend=backend)
            assert same(got, want), (dtype, shape, value)
            n = int(np.prod(shape))
            if n * bits >= runs.MIN_ROW_BYTES * 8:
                assert taken["runs"] > runs_before and taken["general"] == general_before, shape
            elif n:
                assert taken["general"] > general_before, shape


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int8, np.uint8, np.int64, np.bool_])
def test_eye_like_zeros_by_runs(backend, rng, dtype, taken):
    """EyeLike's zeros by runs (the diagonal, strided, on the general kernel), k inside and beyond."""
    for shape in ((5, 70), (67, 33), (1, 129)):
        x = random_array(rng, shape, np.dtype(dtype))
        for k in (0, 3, -2, 40, -100, 200):
            want = reference("EyeLike", 22, [x], {"k": k})[0]
            assert same(eye_like(x, k=k, backend=backend), want), (shape, k)
    assert taken["runs"] > 0


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.int64])
def test_pad_constant_borders_by_runs(backend, rng, dtype, taken):
    """Pad's constant borders (NaN payload, -0.0, random values) at odd offsets, rank 1-4: nothing on
    the general kernel."""
    lo = -(-runs.MIN_ROW_BYTES // np.dtype(dtype).itemsize)
    for shape, pads in (((lo + 3,), [1, 5]), ((3, lo + 1), [0, 3, 2, 1]), ((2, 3, lo + 7), [1, 0, 1, 0, 2, 3]),
                        ((2, 1, 3, lo), [0, 1, 0, 3, 1, 0, 1, 1])):
        x = random_array(rng, shape, np.dtype(dtype))
        for value in _values(rng, dtype):
            v = value.reshape(())
            got = pad(x, pads=pads, constant_value=v, backend=backend)
            want = reference("Pad", 19, [x, np.array(pads, np.int64), v], {"mode": "constant"})[0]
            assert same(got, want), (shape, pads, value)
    assert taken["runs"] > 0 and taken["general"] == 0


def test_packed_4_bit_constant_pad(backend, rng, taken):
    """4-bit fills start and end at any nibble."""
    for dtype in (ml_dtypes.int4, ml_dtypes.uint4):
        x = rng.integers(0, 8, (3, 131)).astype(dtype)
        for pads in ([0, 1, 1, 2], [1, 3, 0, 0], [0, 0, 0, 5]):
            v = np.array(3, dtype)
            got = pad(x, pads=pads, constant_value=v, backend=backend)
            assert same(got, reference("Pad", 25, [x, np.array(pads, np.int64), v], {"mode": "constant"})[0]), pads
    assert taken["runs"] > 0 and taken["general"] == 0


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.complex128, np.bool_, np.float16])
def test_center_crop_pad_by_runs(backend, rng, dtype, taken):
    """CenterCropPad's zero borders and kept box, cropped and padded at once."""
    x = random_array(rng, (5, 4, 133), dtype)
    for target, axes in (([3, 7, 140], None), ([2, 150], [0, -1]), ([9], [1]), ([6, 2, 201], None)):
        attrs = {} if axes is None else {"axes": axes}
        want = reference("CenterCropPad", 18, [x, np.array(target, np.int64)], attrs)[0]
        got = center_crop_pad(x, shape=np.array(target, np.int64), axes=axes, backend=backend)
        assert same(got, want), (target, axes)
    assert taken["runs"] > 0 and taken["general"] == 0


@pytest.mark.parametrize("vtype", [np.float32, np.float16, np.float64, np.int8])
def test_one_hot_off_value(backend, rng, vtype, taken):
    """OneHot's off value (random bits, a NaN payload, -0.0) beside its on values: no longer a fill by
    runs but the rendered OneHot kernel's one pass (tests/gpu/test_one_hot_kernel.py), no piece run."""
    depth = 70
    indices = rng.integers(-depth, depth, (3, 5)).astype(np.int64)
    hot = (np.where(indices < 0, indices + depth, indices)[..., None] == np.arange(depth))
    for off in _values(rng, vtype):
        on = random_array(rng, (2,), vtype)[1:]
        values = np.concatenate([off, on])
        for axis in (-1, 0, 1):
            got = one_hot(indices, depth=np.array(depth, np.int64), values=values, axis=axis, backend=backend)
            assert same(got, np.moveaxis(np.where(hot, values[1], values[0]), -1, axis)), (off, axis)
    assert taken["runs"] == taken["general"] == 0 and get_gpu(backend).cache["one-hot-last"]["bands"] > 0


@pytest.mark.parametrize("dtype", WIDTHS + [np.complex128])
def test_trilu_by_runs(backend, rng, dtype, taken):
    """Trilu's rows by runs: k positive, negative, beyond the matrix either way and past 2**31, upper
    and lower, square, wide, tall and batched matrices (ranks 2-8), zero sizes."""
    cols = -(-runs.MIN_ROW_BYTES // np.dtype(dtype).itemsize)
    for shape in ((7, cols + 3), (cols + 9, cols), (2, 3, 5, cols + 1), (1, 2, 1, 1, 2, 1, 3, cols + 5),
                  (0, cols), (2, 0, cols)):
        x = random_array(rng, shape, np.dtype(dtype))
        beyond = (cols + 7, -(shape[-2] + 2))  # past the matrix either way: all kept or all zero
        for upper, ks in ((0, (0, -1, -4, -(2**40)) + beyond), (1, (0, 1, 3, 2**40) + beyond)):
            for k in ks:
                want = reference("Trilu", 14, [x, np.array(k, np.int64)], {"upper": upper})[0]
                got = trilu(x, k=np.array(k, np.int64), upper=upper, backend=backend)
                assert same(got, want), (shape, upper, k)
    assert taken["runs"] > 0 and taken["general"] == 0


def test_trilu_cut_across_bands(backend, rng, monkeypatch, taken):
    """Triangles cut across small bands and windows: k folded into each part's origin (rows of one
    band, a row cut in two) stays exact."""
    monkeypatch.setattr(pieces, "DEFAULT_BAND", 1024)
    for dtype in (np.float32, np.uint8, np.float64):
        x = random_array(rng, (3, 11, 150), dtype)
        for upper, k in ((1, 1), (0, -2), (1, -3), (0, 70), (1, 140)):
            got = trilu(x, k=np.array(k, np.int64), upper=upper, backend=backend)
            want = np.triu(x, k) if upper else np.tril(x, k)
            assert same(got, want), (dtype, upper, k)
    assert taken["runs"] > 0


def test_fills_agree_with_the_general_kernel(backend, rng, monkeypatch, taken):
    """runs.FILLS off puts the same plans on the general kernel: the same bytes."""
    x = random_array(rng, (4, 9, 37), np.float32)
    calls = [lambda: trilu(x, k=np.array(5, np.int64), backend=backend),
             lambda: trilu(x, k=np.array(-2, np.int64), upper=0, backend=backend),
             lambda: pad(x, pads=[0, 1, 2, 0, 3, 1], constant_value=np.float32(-0.0), backend=backend),
             lambda: eye_like(x[0], k=2, backend=backend),
             lambda: constant_of_shape(np.array([3, 41], np.int64), value=x.reshape(-1)[-1:], backend=backend)]
    for call in calls:
        on = call()
        monkeypatch.setattr(runs, "FILLS", False)
        off = call()
        monkeypatch.setattr(runs, "FILLS", True)
        assert same(on, off)


# ------------------------------------------------------------ repeats (gpu/repeats.py)


@pytest.fixture
def gathered(monkeypatch):
    """Calls of the gather kernel in this test."""
    from onnxop_cli.gpu import gather

    calls = []
    real = gather.gather_through_kernel

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(gather, "gather_through_kernel", spy)
    return calls


@pytest.mark.parametrize("dtype", WIDTHS + [np.complex128])
def test_expand_and_tile_by_runs(backend, rng, dtype, taken, gathered):
    """Expand's broadcast axes and Tile's copies of whole source rows (ranks 2-8, odd sizes, a sliced
    source) by runs, never the gather kernel."""
    cols = -(-runs.MIN_ROW_BYTES // np.dtype(dtype).itemsize) + 3
    x = random_array(rng, (3, 1, cols), np.dtype(dtype))
    for shape in ((3, 5, cols), (2, 1, 3, 4, cols), (1, 1, 2, 1, 2, 3, 4, cols), (0, 3, 1, cols)):
        # (onnx.reference's Expand multiplies by ones: NaN payloads change; numpy's broadcast is exact)
        assert same(expand(x, shape, backend=backend), np.broadcast_to(x, shape)), shape
    y = random_array(rng, (4, 2 * cols + 1), np.dtype(dtype))[:, 1:]  # a strided view of the source
    for reps in ([2, 3], [1, 2], [3, 1], [2, 1, 1, 2]):
        got = tile(y if len(reps) == 2 else y[None, None], reps, backend=backend)
        assert same(got, np.tile(y if len(reps) == 2 else y[None, None], reps)), reps
    assert taken["runs"] > 0 and taken["general"] == 0 and not gathered


def test_other_views_keep_the_gather_kernel(backend, rng, taken, gathered, monkeypatch):
    """Transposes, short rows, a big-endian source and repeats.ENABLED off: the gather kernel, exactly."""
    x = random_array(rng, (3, 1, 70), np.float32)
    z = x[..., :1]
    assert same(expand(z, [3, 4, 70], backend=backend), np.broadcast_to(z, (3, 4, 70)))  # the inner axis repeats
    assert same(expand(x[..., :3], [3, 4, 3], backend=backend), np.broadcast_to(x[..., :3], (3, 4, 3)))  # short rows
    assert same(expand(x.astype(">f4"), [3, 2, 70], backend=backend), np.broadcast_to(x, (3, 2, 70)))
    w = random_array(rng, (3, 2, 70), np.float32)
    assert same(transpose(w, [1, 0, 2], backend=backend), w.transpose(1, 0, 2))
    monkeypatch.setattr(repeats, "ENABLED", False)
    assert same(tile(x, [2, 1, 2], backend=backend), np.tile(x, [2, 1, 2]))
    assert taken["runs"] == 0 and len(gathered) == 5


def test_repeat_cut_across_bands(backend, rng, monkeypatch, taken):
    """A repeat longer than a band and a source longer than a window (cut by core/pieces.fit)."""
    monkeypatch.setattr(pieces, "DEFAULT_BAND", 4096)
    for dtype in (np.uint8, np.float32, np.float64):
        x = random_array(rng, (9, 1, 301), np.dtype(dtype))
        assert same(expand(x, [9, 7, 301], backend=backend), np.broadcast_to(x, (9, 7, 301))), dtype
        assert same(tile(x, [2, 3, 2], backend=backend), np.tile(x, [2, 3, 2])), dtype
    assert taken["runs"] > 0


def test_repeat_of_a_view_with_an_offset(gpu, rng, taken):
    """gpu/repeats.py directly on a view starting inside its source (the API's inputs start at 0)."""
    from onnxop_cli.core.region import Access

    src = random_array(rng, (400,), np.float32)
    view = Access((3, 2, 70), (90, 0, 1), 7)  # rows 7.., 97.., 187.., each twice
    got = bytearray()
    repeats.mover(gpu, MemoryBytes(src.view(np.uint8)), view, 32, 0)(got.extend)
    want = np.stack([np.stack([src[7 + 90 * i: 77 + 90 * i]] * 2) for i in range(3)])
    assert bytes(got) == want.tobytes()
    assert taken["runs"] == 1 and taken["general"] == 0
