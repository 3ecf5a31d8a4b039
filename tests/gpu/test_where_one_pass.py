"""Where in one pass: one select piece that reads the
condition, X and Y through their own broadcast strides and writes each output
element once (shaders/pieces.wgsl, ``has_other``). Against numpy.where and
onnx.reference on random bits (NaN payloads, -0.0), every backend: all
broadcasts, ranks 0-8, zero sizes, odd last dims, big-endian and Fortran
inputs mixed, bands and windows far smaller than the data (the path of
inputs and outputs past one binding), and the kernel itself for the packed
widths (2- and 4-bit) no Where type has but the select piece must keep."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from conftest import random_array
from tensor_refs import reference, same
from onnxop_cli import where
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.core.tensor import dtype_of_numpy
from onnxop_cli.core.view import c_strides
from onnxop_cli.gpu import pieces
from onnxop_cli.ops.base import Node
from onnxop_cli.ops.tensor_op import Arg, Piece
from onnxop_cli.ops.where import Where_9

TYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.float16, ml_dtypes.bfloat16, np.float32, np.int32,
         np.float64, np.int64, np.complex64, np.complex128]
# (condition, X, Y) shapes: each of the three broadcast, odd last dims, ranks 0-8, zero sizes
SHAPES = [
    ((3, 1, 5), (4, 1), (1, 4, 5)),
    ((7,), (1,), (3, 7)),
    ((1, 9), (5, 9), (5, 1)),
    ((), (), ()),
    ((), (2, 3), ()),
    ((2, 0), (1,), (2, 1)),
    ((0,), (0,), (0,)),
    ((2, 1, 3, 1, 2, 1, 3, 5), (1, 2, 1, 3, 1, 2, 1, 5), (2, 2, 3, 1, 2, 2, 3, 1)),
]


def _cond(rng, shape):
    return rng.integers(0, 2, shape).astype(bool)


def test_where_plans_one_select_piece():
    """The plan is one piece (X under the condition, else Y): the output is
    written once, not a Y copy then an X copy."""
    args = [Arg(name, shape, dtype_of_numpy(np.dtype(dt)), None, c_strides(shape))  # type: ignore[arg-type]
            for name, shape, dt in (("c", (3, 1, 5), bool), ("x", (4, 1), "f4"), ("y", (1, 4, 5), "f4"))]
    (out,) = Where_9.plan(Node("Where", 9, {}), args)
    (p,) = out.pieces
    assert (p.src, p.mask, p.other) == (1, 0, 2)
    assert p.shape == (3, 4, 5) and p.src_strides == (0, 1, 0) and p.other_strides == (0, 5, 1)
    assert p.mask_strides == (5, 0, 1)


@pytest.mark.parametrize("dtype", TYPES)
def test_where_one_pass_matches_references(backend, rng, dtype):
    for cs, xs, ys in SHAPES:
        c = _cond(rng, cs)
        x, y = random_array(rng, xs, np.dtype(dtype)), random_array(rng, ys, np.dtype(dtype))
        got = where(c, x, y, backend=backend)
        assert same(got, np.where(c, x, y)), (dtype, cs, xs, ys)
        if len(cs) < 8:  # onnx.reference is slow on the rank-8 case; numpy.where is the same rule
            assert same(got, reference("Where", 16, [c, x, y])[0]), (dtype, cs, xs, ys)


def test_where_one_pass_layouts_mixed(backend, rng):
    """X big-endian and Y little (each its own byte swap), Fortran condition."""
    for dt in ("f8", "f4", "i2", "c16"):
        c = np.asfortranarray(_cond(rng, (3, 4, 7)))
        x = random_array(rng, (4, 7), np.dtype("<" + dt)).astype(">" + dt)
        y = np.asfortranarray(random_array(rng, (3, 1, 7), np.dtype("<" + dt)))
        assert same(where(c, x, y, backend=backend), np.where(c, x.astype("<" + dt), y)), dt
        assert same(where(c, y, x, backend=backend), np.where(c, y, x.astype("<" + dt))), dt


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.float16, np.float32, np.float64, np.complex128])
def test_where_one_pass_small_bands_and_windows(backend, rng, dtype, monkeypatch):
    """Bands and windows of 48 bytes: the output cut into many bands and every
    input window re-uploaded, as for tensors past one binding."""
    monkeypatch.setattr(pieces, "DEFAULT_BAND", 48)
    for cs, xs, ys in [((5, 1, 13), (1, 6, 13), (5, 6, 1)), ((37,), (37,), (1,)), ((3, 11), (11,), (3, 11))]:
        c = _cond(rng, cs)
        x, y = random_array(rng, xs, np.dtype(dtype)), random_array(rng, ys, np.dtype(dtype))
        assert same(where(c, x, y, backend=backend), np.where(c, x, y)), (dtype, cs)


def test_where_strings_on_the_host(rng):
    c = _cond(rng, (3, 4))
    x = np.array(["a", "bb", "", "ccc"], dtype=object)
    y = np.array([["x"], ["yy"], ["é"]], dtype=object)
    assert same(where(c, x, y), np.where(c, x, y))


def _unpack(raw: np.ndarray, bits: int, n: int) -> np.ndarray:
    per = 8 // bits
    b = np.repeat(raw, per)[: n] if n else np.zeros(0, np.uint8)
    return (b >> ((np.arange(n) % per) * bits).astype(np.uint8)) & ((1 << bits) - 1)


def _pack(vals: np.ndarray, bits: int) -> bytes:
    per = 8 // bits
    v = np.concatenate([vals, np.zeros(-len(vals) % per, np.uint8)]).reshape(-1, per).astype(np.uint8)
    return (v << (np.arange(per) * bits).astype(np.uint8)).sum(axis=1, dtype=np.uint8).tobytes()


@pytest.mark.parametrize("bits", [2, 4, 8, 16, 32, 64, 128])
@pytest.mark.parametrize("band", [None, 48])
def test_select_piece_kernel_every_width(gpu, rng, bits, band):
    """The select piece straight through run_pieces, every element width the
    kernel has (the packed 2- and 4-bit ones share words with neighbours),
    odd last dims, all three broadcast, against numpy on the elements."""
    shape = (3, 5, 7)
    xs, ys, cs = (1, 5, 7), (3, 1, 7), (3, 5, 1)
    nx, ny, n = int(np.prod(xs)), int(np.prod(ys)), int(np.prod(shape))
    c = _cond(rng, cs)

    def strides(s):
        full = c_strides(s)
        return tuple(0 if d == 1 else st for d, st in zip(s, full))

    if bits < 8:
        xv = rng.integers(0, 1 << bits, nx).astype(np.uint8)
        yv = rng.integers(0, 1 << bits, ny).astype(np.uint8)
        xb, yb = _pack(xv, bits), _pack(yv, bits)
        want_elems = np.where(c, xv.reshape(xs), yv.reshape(ys)).reshape(-1)
    else:
        w = bits // 8
        xr = rng.integers(0, 256, (nx, w), dtype=np.uint8)
        yr = rng.integers(0, 256, (ny, w), dtype=np.uint8)
        xb, yb = xr.tobytes(), yr.tobytes()
        want_rows = np.where(c[..., None], xr.reshape(*xs, w), yr.reshape(*ys, w))
    piece = Piece(shape, c_strides(shape), 0, 1, strides(xs), mask=0, mask_strides=strides(cs),
                  other=2, other_strides=strides(ys))
    got = bytearray()
    sources = [pieces.Source(MemoryBytes(np.frombuffer(b, np.uint8)))
               for b in (c.astype(np.uint8).tobytes(), xb, yb)]
    pieces.run_pieces(gpu, sources, lambda m: got.extend(bytes(m)), pieces=[piece], count=n, bits=bits,
                      binding_bytes=band)
    if bits < 8:
        assert np.array_equal(_unpack(np.frombuffer(bytes(got), np.uint8), bits, n), want_elems)
        assert len(got) == -(-n * bits // 8)
    else:
        assert bytes(got) == want_rows.tobytes()
