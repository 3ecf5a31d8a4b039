"""Where's words kernel (shaders/where.wgsl through gpu/where.py): the plan's
fast path for inputs read in a run form -- the output's shape, scalars,
broadcast along leading axes, along a trailing run, or both -- against
numpy.where and onnx.reference on random bits (NaN payloads, -0.0), every
element width (1, 2, 4, 8 and 16 bytes), odd lengths (the tails of words),
zero sizes, ranks 0 and 8, condition bytes other than 0 and 1, bands of a
few words, more workgroups than one grid row, the staged and the mapped
buffers. The shapes it claims are asserted to take it (and never the pieces
kernel); the rest (two separate broadcast runs, Fortran order, big-endian
bytes, strings) to keep the select piece, exactly."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from conftest import random_array
from tensor_refs import reference, same
from onnxop_cli import where
from onnxop_cli.core import apply_tensors
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.core.tensor import Tensor
from onnxop_cli.gpu import pieces
from onnxop_cli.gpu import where as words
from onnxop_cli.ops.base import Node
from onnxop_cli.ops.tensor_op import broadcast_shape, broadcast_strides
from onnxop_cli.ops.where import VERSIONS, run_form

# one type per element width and kind: 1, 2, 4, 8 and 16 bytes
TYPES = [np.bool_, np.int8, np.uint8, np.float16, ml_dtypes.bfloat16, np.int16, np.float32, np.int32, np.uint32,
         np.float64, np.int64, np.uint64, np.complex64, np.complex128]
WIDTHS = [np.bool_, np.float16, np.float32, np.float64, np.complex128]

# (condition, X, Y): every input in a run form
FAST = [
    ((7, 13), (7, 13), (7, 13)),  # all the output's shape, odd lengths
    ((37,), (37,), (37,)),
    ((), (5, 3), ()),  # scalars
    ((), (), ()),  # rank 0
    ((13,), (4, 13), (1, 13)),  # broadcast along leading axes
    ((37,), (5, 37), (5, 37)),  # ... a row of 16 bytes and more, its end among four elements' bytes
    ((16,), (3, 16), (3, 16)),
    ((6, 1), (6, 5), (6, 5)),  # the condition along a trailing run: (N, 1) against (N, M)
    ((6, 5), (6, 1), (1,)),
    ((7, 1), (7, 37), (7, 37)),  # trailing runs of 16 elements and more (two per invocation at most)
    ((9, 1), (9, 16), (9, 16)),
    ((1, 5, 1), (3, 5, 20), (3, 5, 20)),  # ... wrapping
    ((1, 6, 1), (3, 6, 5), (3, 1, 1)),  # both: leading axes and a trailing run
    ((3, 1, 1), (1, 1, 5), (3, 4, 5)),
    ((1, 9), (5, 1), (5, 9)),
    ((0, 5), (0, 5), (1,)),  # zero sizes
    ((0,), (), (0,)),
    ((2, 2, 2, 2, 2, 2, 2, 3), (1, 1, 1, 2, 2, 2, 1, 1), ()),  # rank 8, a run in the middle
    ((1, 1, 1, 1, 1, 1, 1, 1), (2, 1, 2, 1, 2, 1, 2, 3), (2, 1, 2, 1, 2, 1, 2, 3)),
]
# two separate broadcast runs: the select piece of the pieces kernel
GENERAL = [
    ((2, 1, 3), (1, 4, 1), (2, 4, 3)),
    ((3, 1, 5), (4, 1), (1, 4, 5)),
    ((2, 1, 3, 1, 2, 1, 3, 5), (1, 2, 1, 3, 1, 2, 1, 5), (2, 2, 3, 1, 2, 2, 3, 1)),
]


def _cond(rng, shape, any_byte=False):
    """A condition; ``any_byte``: bools of any nonzero byte (numpy counts them true)."""
    if any_byte:
        raw = rng.integers(0, 256, int(np.prod(shape)), dtype=np.uint8)
        raw[::3] = 0
        return raw.view(np.bool_).reshape(shape)
    return rng.integers(0, 2, shape).astype(bool)


NODE = Node(VERSIONS[-1], {})


def _kernel(c, x, y) -> str:
    (plan,) = apply_tensors.check(NODE, [Tensor.from_numpy(a, n) for a, n in ((c, "c"), (x, "x"), (y, "y"))])
    return plan.kernel


def _inputs(rng, shapes, dtype, any_byte=False):
    cs, xs, ys = shapes
    return _cond(rng, cs, any_byte), random_array(rng, xs, np.dtype(dtype)), random_array(rng, ys, np.dtype(dtype))


@pytest.fixture
def no_pieces(monkeypatch):
    """Where the words kernel is claimed, the pieces kernel must not run."""
    def refuse(*a, **k):
        raise AssertionError("the pieces kernel ran")

    monkeypatch.setattr(pieces, "run_pieces", refuse)


def test_run_forms():
    """(div, size): input element (e // div) % size of output element e."""
    assert run_form((4, 13), (13, 1)) == (1, 52)
    assert run_form((4, 13), (0, 1)) == (1, 13)
    assert run_form((6, 5), (1, 0)) == (5, 6)
    assert run_form((3, 6, 5), (0, 1, 0)) == (5, 6)
    assert run_form((3, 4, 5), (0, 0, 0)) == (1, 1)
    assert run_form((), ()) == (1, 1)
    assert run_form((2, 4, 3), (3, 0, 1)) is None  # two runs
    assert run_form((3, 4), (1, 3)) is None  # Fortran order
    assert run_form((3, 4), (8, 1)) is None  # not its own row-major layout


def test_the_plan_takes_the_words_kernel_for_run_forms(rng):
    for shapes in FAST:
        assert _kernel(*_inputs(rng, shapes, np.float32)) == "where", shapes
    for shapes in GENERAL:
        assert _kernel(*_inputs(rng, shapes, np.float32)) == "pieces", shapes
    c, x, y = _inputs(rng, ((5, 7), (5, 7), (5, 7)), np.float32)
    assert _kernel(c, x.astype(">f4"), y) == "pieces"  # big-endian bytes
    assert _kernel(np.asfortranarray(c), x, y) == "pieces"  # Fortran order
    assert _kernel(c, np.asfortranarray(x), y) == "pieces"
    assert _kernel(c[:, :1], np.asfortranarray(x[:1]), y) == "where"  # one row: Fortran is row-major
    strings = np.array(["a", "bb", "", "ccc", "d", "é", "ff"], dtype=object)
    assert _kernel(c, strings, strings) == "pieces"


@pytest.mark.parametrize("dtype", TYPES)
def test_words_kernel_matches_references(backend, rng, dtype, no_pieces):
    for shapes in FAST:
        c, x, y = _inputs(rng, shapes, dtype)
        got = where(c, x, y, backend=backend)
        assert same(got, np.where(c, x, y)), (dtype, shapes)
        if len(shapes[0]) < 8:  # onnx.reference is slow on rank 8; numpy.where is the same rule
            assert same(got, reference("Where", 16, [c, x, y])[0]), (dtype, shapes)


@pytest.mark.parametrize("dtype", WIDTHS)
def test_words_kernel_any_nonzero_condition_byte(backend, rng, dtype, no_pieces):
    """A bool of byte 2..255 is true to numpy: each nonzero byte selects X."""
    for shapes in [((41,), (41,), (41,)), ((6, 1), (6, 7), (1,)), ((9,), (3, 9), (3, 1))]:
        c, x, y = _inputs(rng, shapes, dtype, any_byte=True)
        assert same(where(c, x, y, backend=backend), np.where(c, x, y)), (dtype, shapes)


# bands of one vec4 for the narrow types; an 8- or 16-byte element gets
# bands of three vec4s (one vec4 would be one element a band: the same edges, 3x the dispatches)
@pytest.mark.parametrize("dtype, band", [(d, b) for d in WIDTHS for b in (16, 48)
                                          if b == 48 or np.dtype(d).itemsize < 8])
def test_words_kernel_small_bands(backend, rng, dtype, band, monkeypatch, no_pieces):
    """Bands of one and three vec4s: many bands, runs and wraps crossing
    their edges, each band's windows uploaded again, the staged buffers
    (X or Y uploaded into dst) and the mapped ones."""
    monkeypatch.setattr(words, "BAND", band)
    for mapped in (True, False):
        if not mapped:
            monkeypatch.setattr(words, "can_map", lambda gpu: False)
        for shapes in [((7, 13), (7, 13), (7, 13)), ((6, 1), (6, 11), (6, 11)), ((13,), (5, 13), (1,)),
                       ((1, 6, 1), (3, 6, 5), (3, 1, 1)), ((3, 1), (1,), (3, 17)), ((5, 1), (5, 40), (5, 40)),
                       ((1, 3, 1), (2, 3, 17), (2, 3, 17)), ((29,), (4, 29), (4, 29))]:
            c, x, y = _inputs(rng, shapes, dtype)
            assert same(where(c, x, y, backend=backend), np.where(c, x, y)), (dtype, shapes, mapped)


@pytest.mark.parametrize("dtype", [np.bool_, np.float16, np.float32, np.float64])
def test_words_kernel_staged(backend, rng, dtype, monkeypatch, no_pieces):
    """Without mapped storage buffers (Dawn, real GPUs): one staging buffer,
    a full Y (else X) uploaded into dst and selected in place."""
    monkeypatch.setattr(words, "can_map", lambda gpu: False)
    for shapes in FAST:
        c, x, y = _inputs(rng, shapes, dtype)
        assert same(where(c, x, y, backend=backend), np.where(c, x, y)), (dtype, shapes)


@pytest.mark.parametrize("dtype", WIDTHS)
def test_words_kernel_grid_rows(gpu, rng, dtype, no_pieces):
    """More workgroups than one grid row allows (rows of 1 and 2 here, as
    past 65,535 workgroups): each writes its own words once."""
    shapes = ((9001, 1), (9001, 7), (7,))
    c, x, y = _inputs(rng, shapes, dtype)
    shape = broadcast_shape("Where", [a.shape for a in (c, x, y)], ["c", "x", "y"])
    args = apply_tensors.args_of(NODE, [Tensor.from_numpy(a) for a in (c, x, y)])
    forms = [run_form(shape, broadcast_strides(a, shape)) for a in args]
    want = np.where(c, x, y)
    for rows in (1, 2):
        got = bytearray()
        sources = [pieces.Source(MemoryBytes(np.ascontiguousarray(a))) for a in (c, x, y)]
        words.run_where(gpu, sources, lambda m: got.extend(bytes(m)), forms=forms, fallback=[], count=want.size,
                        bits=want.dtype.itemsize * 8, max_groups_per_dim=rows)
        assert bytes(got) == want.tobytes(), (dtype, rows)


def test_general_shapes_and_layouts_stay_exact(backend, rng):
    """Two separate runs, big-endian and Fortran inputs: the select piece."""
    for dtype in (np.uint8, np.float16, np.float32, np.complex128):
        for shapes in GENERAL:
            c, x, y = _inputs(rng, shapes, dtype)
            assert same(where(c, x, y, backend=backend), np.where(c, x, y)), (dtype, shapes)
    for dt in ("f8", "f4", "i2"):
        c, x, y = _inputs(rng, ((5, 7), (5, 7), (5, 7)), np.dtype(dt))
        assert same(where(c, x.astype(">" + dt), y, backend=backend), np.where(c, x, y)), dt
        f = np.asfortranarray
        assert same(where(f(c), x, f(y), backend=backend), np.where(c, x, y)), dt


def test_an_input_past_one_window_takes_the_select_piece(backend, rng, monkeypatch):
    """An input broadcast along leading axes is uploaded whole, once; one
    larger than a window (bindings of 48 bytes here) falls back to the
    select piece, exactly."""
    monkeypatch.setattr(pieces, "DEFAULT_BAND", 48)
    ran = []
    real = pieces.run_pieces
    monkeypatch.setattr(pieces, "run_pieces", lambda *a, **k: ran.append(1) or real(*a, **k))
    c, x, y = _inputs(rng, ((40,), (3, 40), (1,)), np.float32)
    assert same(where(c, x, y, backend=backend), np.where(c, x, y))
    assert ran


@pytest.mark.parametrize("dtype", [np.bool_, np.float16])
def test_words_kernel_zeroes_the_last_words_padding(gpu, rng, dtype, monkeypatch, no_pieces):
    """Bits past the output's last element are 0, as the gather kernel
    leaves them: a graph's intermediate (a DeviceSink) keeps the whole last
    word on the device. Bands of 48 bytes, so the last band's windows hold
    stale bytes of earlier bands past their ends."""
    from onnxop_cli.gpu import resident

    monkeypatch.setattr(words, "BAND", 48)
    for shapes in [((61,), (61,), (61,)), ((1,), (3, 21), (21,)), ((3, 1), (1,), (3, 19))]:
        c, x, y = _inputs(rng, shapes, dtype)
        want = np.where(c, x, y)
        shape = want.shape
        args = apply_tensors.args_of(NODE, [Tensor.from_numpy(a) for a in (c, x, y)])
        forms = [run_form(shape, broadcast_strides(a, shape)) for a in args]
        out = resident.DeviceBuffer(gpu, want.nbytes)
        sources = [pieces.Source(MemoryBytes(np.ascontiguousarray(a))) for a in (c, x, y)]
        words.run_where(gpu, sources, resident.DeviceSink(out, resident.Traffic()), forms=forms, fallback=[],
                        count=want.size, bits=want.dtype.itemsize * 8)
        n4 = -(-want.nbytes // 4) * 4
        raw = resident.read_back(gpu, out.buffer, 0, n4)
        out.release()
        assert raw[: want.nbytes] == want.tobytes(), (dtype, shapes)
        assert raw[want.nbytes:] == bytes(n4 - want.nbytes), (dtype, shapes)
