"""Pieces by runs (shaders/pieces_runs.wgsl through gpu/runs.py): parts whose
innermost axis is contiguous in source and output -- Concat's, Split's and
Pad's interior -- copied as whole vec4 words, the source joined by a funnel
shift where its alignment differs, each row's edge words on their own bits.

Through the operators, against numpy and onnx.reference on random bits (NaN
payloads, -0.0): every element width (4-bit packed, 8 to 128 bits), zero
sizes, ranks 0-8, 9 and 33 inputs, 9 outputs, every Pad mode, big-endian and
Fortran sources, windows of one band, staged and mapped buffers. Each test
asserts which kernel ran (so a silent fallback to shaders/pieces.wgsl fails
it). The kernel directly (every source and output alignment, rows sharing
edge words, 2-bit elements, bands of a few words, folded grids, a poisoned
output, inner axes that are not runs): tests/gpu/test_pieces.py."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from conftest import random_array
from properties import pieces_kernels
from tensor_refs import reference, same

from onnxop_cli import concat, pad, split
from onnxop_cli.core.region import load
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import pieces, runs
from onnxop_cli.ops.tensor_op import Piece

WIDTHS = [np.bool_, np.int8, np.uint8, np.float16, ml_dtypes.bfloat16, np.float32, np.int32, np.float64,
          np.int64, np.complex128]


@pytest.fixture
def taken(monkeypatch):
    """Parts each kernel ran in this test: {"runs": n, "general": n}, and the ways their buffers took (properties.pieces_kernels)."""
    return pieces_kernels(monkeypatch)


def _cols(rng, n, dtype, lo=None):
    """Column counts giving rows of at least MIN_ROW_BYTES, odd ones included."""
    itemsize = np.dtype(dtype).itemsize
    lo = lo or -(-runs.MIN_ROW_BYTES // itemsize)
    return [int(lo + rng.integers(0, 40)) | 1 if k % 2 else int(lo + rng.integers(0, 40)) for k in range(n)]


# ------------------------------------------------------------ the operators


def _run(gpu, raw: bytes, parts, count, bits, **kw) -> bytes:
    got = bytearray()
    pieces.run_pieces(gpu, [pieces.Source(MemoryBytes(np.frombuffer(raw, np.uint8)))], got.extend, pieces=parts,
                      count=count, bits=bits, **kw)
    return bytes(got)


def test_rank_0_to_8(gpu, backend, rng, taken):
    """A rank-0 part and rows too short stay on the general kernel; ranks 1-8 run by runs."""
    x = random_array(rng, (1,), np.float32)
    assert _run(gpu, x.tobytes(), [Piece((), (), 0, load(0, (), ()))], 1, 32) == x.tobytes()
    assert taken["runs"] == 0 and taken["general"] == 1
    for rank in range(1, 9):
        shape = tuple(int(v) for v in rng.integers(1, 3, rank - 1)) + (19,)
        x = random_array(rng, shape, np.float64)
        y = random_array(rng, shape[:-1] + (5,), np.float64)
        got = concat(x, y, x, axis=rank - 1, backend=backend)
        assert same(got, np.concatenate([x, y, x], axis=rank - 1)), rank
    assert taken["runs"] > 0


@pytest.mark.parametrize("dtype", WIDTHS)
def test_concat_inner_axis_matches_references(backend, rng, dtype, taken):
    """Odd column counts: 8- and 16-bit inputs start anywhere in the output's words."""
    for shape, n in (((3, None), 3), ((2, 3, None), 4), ((None,), 3)):
        xs = [random_array(rng, tuple(c if d is None else d for d in shape), dtype) for c in _cols(rng, n, dtype)]
        axis = len(shape) - 1
        got = concat(*xs, axis=axis, backend=backend)
        assert same(got, np.concatenate(xs, axis=axis)), (dtype, shape)
        if dtype is not ml_dtypes.bfloat16:
            assert same(got, reference("Concat", 13, xs, {"axis": axis})[0]), (dtype, shape)
    assert taken["runs"] > 0


@pytest.mark.parametrize("count", [9, 33])
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32])
def test_concat_many_inputs_and_zero_sizes(backend, rng, count, dtype, taken):
    cols = _cols(rng, count, dtype)
    cols[1] = cols[count // 2] = 0
    xs = [random_array(rng, (4, c), dtype) for c in cols]
    assert same(concat(*xs, axis=1, backend=backend), np.concatenate(xs, axis=1))
    xs = [random_array(rng, (int(rng.integers(0, 3)), 41), dtype) for _ in range(count)]
    assert same(concat(*xs, axis=0, backend=backend), np.concatenate(xs, axis=0))
    assert taken["runs"] > 0


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.float16, np.float32, np.float64])
def test_split_into_9_outputs(backend, rng, dtype, taken):
    """Unequal parts on an inner axis (each part's rows start anywhere in a word of the source) and on axis 0."""
    lo = -(-runs.MIN_ROW_BYTES // np.dtype(dtype).itemsize)
    sizes = [lo + k for k in range(9)]
    x = random_array(rng, (3, sum(sizes)), dtype)
    got = split(x, np.array(sizes, np.int64), axis=1, backend=backend)
    want = np.split(x, np.cumsum(sizes)[:-1], axis=1)
    assert len(got) == 9 and all(same(g, w) for g, w in zip(got, want))
    ref = reference("Split", 18, [x, np.array(sizes, np.int64)], {"axis": 1}, n_outputs=9)
    assert all(same(g, w) for g, w in zip(got, ref))
    x = random_array(rng, (18, 3 * lo + 1), dtype)
    got = split(x, axis=0, num_outputs=9, backend=backend)
    assert all(same(g, w) for g, w in zip(got, np.split(x, 9, axis=0)))
    assert taken["runs"] > 0


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64])
def test_pad_every_mode(backend, rng, mode, dtype, taken):
    """The interior by runs at odd offsets; the constant borders (fills) by runs too, the others (stride-0
    and reversed columns) on the general kernel."""
    lo = -(-runs.MIN_ROW_BYTES // np.dtype(dtype).itemsize)
    x = random_array(rng, (4, 3, lo + 5), dtype)
    values = [None]
    if mode == "constant" and np.dtype(dtype).kind == "f":
        nan = {2: 0x7C01, 4: 0x7F800123, 8: 0xFFF0000000000ABC}[np.dtype(dtype).itemsize]
        values = [np.array(nan, f"u{np.dtype(dtype).itemsize}").view(dtype), np.array(-0.0, dtype)]
    for pads in ([0, 1, 3, 1, 0, 2], [1, 0, 1, 0, 2, 0], [0, 0, 0, 0, 0, 3]):
        for value in values:
            kw = {} if value is None else {"constant_value": value}
            got = pad(x, pads=pads, mode=mode, backend=backend, **kw)
            feeds = [x, np.array(pads, np.int64)] + ([] if value is None else [value])
            assert same(got, reference("Pad", 19, feeds, {"mode": mode})[0]), (mode, pads, value)
    assert taken["runs"] > 0 and (taken["general"] == 0) == (mode == "constant")


def test_packed_4_bit_pad(backend, rng, taken):
    """Packed 4-bit elements (Concat has no int4; Pad-21 has): the interior rows start at any nibble."""
    for dtype in (ml_dtypes.int4, ml_dtypes.uint4):
        x = rng.integers(0, 8, (5, 131)).astype(dtype)
        for mode in ("constant", "edge", "reflect"):
            for pads in ([0, 1, 1, 2], [1, 3, 0, 0]):
                got = pad(x, pads=pads, mode=mode, backend=backend)
                want = reference("Pad", 25, [x, np.array(pads, np.int64)], {"mode": mode})[0]
                assert same(got, want), (dtype, mode, pads)
    assert taken["runs"] > 0


def test_big_endian_and_fortran_sources_stay_exact(backend, rng, taken):
    """Big-endian bytes and Fortran order are the general kernel's (no runs for them)."""
    for dt in ("f2", "f4", "f8"):
        a = random_array(rng, (3, 70), np.dtype(dt)).astype(">" + dt)
        b = np.asfortranarray(random_array(rng, (3, 51), np.dtype(dt)))
        got = concat(a, b, axis=1, backend=backend)
        assert same(got, np.concatenate([a.astype("<" + dt), b], axis=1)), dt
    assert taken["runs"] == 0 and taken["general"] > 0
    c = random_array(rng, (3, 70), np.float32)
    got = concat(c, random_array(rng, (3, 40), np.float32).astype(">f4"), axis=1, backend=backend)
    assert got[:, :70].tobytes() == c.tobytes()
    assert taken["runs"] > 0


@pytest.mark.parametrize("mapped", [True, False])
def test_staged_and_mapped(backend, rng, mapped, monkeypatch, taken):
    """Without mapped storage buffers (Dawn, real GPUs) the windows go through staging buffers."""
    if not mapped:
        monkeypatch.setattr(pieces, "can_map", lambda gpu: False)
    for dtype in (np.uint8, np.float16, np.float32, np.float64):
        xs = [random_array(rng, (5, c), dtype) for c in _cols(rng, 3, dtype)]
        assert same(concat(*xs, axis=1, backend=backend), np.concatenate(xs, axis=1)), (dtype, mapped)
    assert taken["runs"] > 0
    if not mapped:
        assert taken["mapped"] == {False}


def test_runs_agree_with_the_general_kernel(backend, rng, monkeypatch, taken):
    """The same plans with gpu/runs.py turned off: the same bytes."""
    for dtype in (np.bool_, np.float16, np.float32, np.complex128):
        xs = [random_array(rng, (2, 3, c), dtype) for c in _cols(rng, 4, dtype)]
        on = concat(*xs, axis=2, backend=backend)
        monkeypatch.setattr(runs, "ENABLED", False)
        off = concat(*xs, axis=2, backend=backend)
        monkeypatch.setattr(runs, "ENABLED", True)
        assert same(on, off) and same(on, np.concatenate(xs, axis=2)), dtype


def test_windows_are_sized_by_one_band(backend, rng, monkeypatch, taken):
    """A source read one band at a time gets a window of about one band's
    reach, not the whole source (Pad's 64 MiB input paid a 64 MiB window's
    first touch); the bands are at most BAND bytes."""
    seen = []
    real = pieces.Run.__init__

    def init(self, gpu, band_bytes, window_bytes, *a, **k):
        seen.append((band_bytes, window_bytes))
        real(self, gpu, band_bytes, window_bytes, *a, **k)

    monkeypatch.setattr(pieces.Run, "__init__", init)
    monkeypatch.setattr(pieces, "BAND", 4096)
    x = random_array(rng, (64, 255), np.float32)  # 65,280 bytes
    got = pad(x, pads=[0, 1, 0, 0], mode="edge", backend=backend)
    assert same(got, np.pad(x, [(0, 0), (1, 0)], mode="edge"))
    (band, window), = seen
    assert band == 4096 and window <= 4096 + 32, seen
    assert taken["runs"] > 0
