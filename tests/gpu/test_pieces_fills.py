"""Fills, triangles and repeats by runs (gpu/render/pieces.py Rows modes 1-3
through gpu/pieces.py, and its repeat_mover; the general kernel,
gpu/render/pieces.py; the gather kernel for views) as one property:
ConstantOfShape, EyeLike's zeros, Pad's and CenterCropPad's constant
borders as vec4 stores of the fill's word pattern, Trilu's rows as their
kept columns copied and the rest filled, Expand's and Tile's repeats of
whole rows.

Byte for byte against onnx.reference (numpy's triu, tril, broadcast_to and
tile for the repeats and the cut triangles: onnx.reference computes Expand
as ``data * ones``, which quiets a signalling NaN) on random bits, NaN
payload and -0.0 fill values. Random and fixed structures (ranks 0-8, odd
and zero sizes, outputs under one row of MIN_ROW_BYTES; Trilu's k positive,
negative, beyond the matrix either way and past 2**31, upper and lower,
square, wide, tall and batched; EyeLike's k inside and beyond; crops and
pads at once; repeats of a sliced source; transposes, short rows and
big-endian sources, which keep the gather kernel) x every schedule (runs
where a part qualifies; forced: the general kernel and the gather kernel,
``piece_records.FILLS`` and ``pieces.REPEATS`` off; bands and windows of 1 KiB
(4 KiB for the repeats cut);
staged buffers) x every width (bool, 8 to 128 bits, int4 through the API).
One tally asserts each case ran the kernels meant for it and that each came
up. The kernel directly (fills at every alignment sharing edge words, 2-
and 4-bit packed): tests/gpu/test_pieces.py."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from conftest import random_array
from onnx import numpy_helper
from properties import Tally, force_pieces, pieces_kernels, pieces_ran
from tensor_refs import reference, same

from onnxop_cli import center_crop_pad, constant_of_shape, expand, eye_like, one_hot, pad, tile, transpose, trilu
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import get_gpu, piece_records, pieces

WIDTHS = [np.bool_, np.int8, np.uint8, np.float16, ml_dtypes.bfloat16, np.float32, np.int32, np.float64,
          np.int64, np.complex128, ml_dtypes.int4, ml_dtypes.uint4]
PACKED = (ml_dtypes.int4, ml_dtypes.uint4)
FORCED = ("general", "bands", "staged")
SHAPES = ([], [0], [3, 0, 5], [7], [131], [3, 67], [2, 3, 1, 5, 1, 2, 3, 9], [1, 1, 1, 1, 1, 1, 1, 1], [5, 1, 77])
_NAN = {2: 0x7C01, 4: 0x7F800123, 8: 0xFFF0000000000ABC}


@pytest.fixture
def taken(monkeypatch):
    """Parts each kernel ran: {"runs": n, "general": n} (properties.pieces_kernels)."""
    return pieces_kernels(monkeypatch)


@pytest.fixture
def gathered(monkeypatch):
    """Calls of the gather kernel."""
    from onnxop_cli.gpu import gather

    calls = []
    real = gather.gather_through_kernel
    monkeypatch.setattr(gather, "gather_through_kernel", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def _values(rng, dtype) -> list[np.ndarray]:
    """One-element fill values: random bits, and for floats a NaN with a payload and -0.0."""
    dtype = np.dtype(dtype)
    out = [random_array(rng, (1,), dtype)]
    if dtype.kind == "f" or dtype == ml_dtypes.bfloat16:
        size = dtype.itemsize
        nan = _NAN[size] if dtype != ml_dtypes.bfloat16 else 0xFF81
        out += [np.array([nan], f"u{size}").view(dtype), np.array([-0.0], dtype)]
    return out


def structures(rng, dtype, backend):
    """(what, call, want, kind): ``call()`` the operator's output, ``want``
    the reference's, ``kind`` the kernels meant on the schedule chosen."""
    bits = 4 if dtype in PACKED else np.dtype(dtype).itemsize * 8
    values = [np.array([5], dtype)] if dtype in PACKED else _values(rng, dtype)
    for value in values * (dtype is not np.complex128):  # ConstantOfShape has no complex type
        tensor = numpy_helper.from_array(value)
        for shape in SHAPES:
            dims = np.array(shape, np.int64)
            want = reference("ConstantOfShape", 25, [dims], {"value": tensor}, out_types=[tensor.data_type])[0]
            n = int(np.prod(shape))
            kind = "runs" if n * bits >= piece_records.MIN_ROW_BYTES * 8 else "general" if n else "none"
            yield f"ConstantOfShape {shape} of {value}", \
                lambda d=dims, v=value: constant_of_shape(d, value=v, backend=backend), want, kind
    if dtype in PACKED:
        x = rng.integers(0, 8, (3, 131)).astype(dtype)
        for pads in ([0, 1, 1, 2], [1, 3, 0, 0], [0, 0, 0, 5]):
            v = np.array(3, dtype)
            want = reference("Pad", 25, [x, np.array(pads, np.int64), v], {"mode": "constant"})[0]
            yield f"Pad {pads}", lambda p=pads, v=v, x=x: pad(x, pads=p, constant_value=v, backend=backend), \
                want, "runs"
        return
    dt = np.dtype(dtype)
    # the types the replaced test ran: EyeLike has no complex type, and a width each is enough
    for shape in ((5, 70), (67, 33), (1, 129)) * (dtype not in (np.complex128, ml_dtypes.bfloat16, np.int32)):
        x = random_array(rng, shape, dt)
        for diag in (0, 3, -2, 40, -100, 200):
            kind = "runs and general" if -shape[0] < diag < shape[1] else "runs"  # the diagonal: strided
            yield f"EyeLike {shape} k {diag}", lambda x=x, d=diag: eye_like(x, k=d, backend=backend), \
                reference("EyeLike", 22, [x], {"k": diag})[0], kind
    lo = -(-piece_records.MIN_ROW_BYTES // dt.itemsize)
    borders = (((lo + 3,), [1, 5]), ((3, lo + 1), [0, 3, 2, 1]), ((2, 3, lo + 7), [1, 0, 1, 0, 2, 3]),
               ((2, 1, 3, lo), [0, 1, 0, 3, 1, 0, 1, 1]))
    for shape, pads in borders * (dtype in (np.uint8, np.float16, ml_dtypes.bfloat16, np.float32, np.float64,
                                            np.int64)):
        x = random_array(rng, shape, dt)
        for value in _values(rng, dtype):
            v = value.reshape(())
            want = reference("Pad", 19, [x, np.array(pads, np.int64), v], {"mode": "constant"})[0]
            yield f"Pad {shape} {pads} {value}", lambda x=x, p=pads, v=v: pad(
                x, pads=p, constant_value=v, backend=backend), want, "runs"
    x = random_array(rng, (5, 4, 133), dt)
    crops = (([3, 7, 140], None), ([2, 150], [0, -1]), ([9], [1]), ([6, 2, 201], None))
    for target, axes in crops * (dtype in (np.float32, np.uint8, np.complex128, np.bool_, np.float16)):
        attrs = {} if axes is None else {"axes": axes}
        want = reference("CenterCropPad", 18, [x, np.array(target, np.int64)], attrs)[0]
        yield f"CenterCropPad {target} {axes}", lambda t=target, a=axes, x=x: center_crop_pad(
            x, shape=np.array(t, np.int64), axes=a, backend=backend), want, "runs"
    cols = -(-piece_records.MIN_ROW_BYTES // dt.itemsize)
    for shape in ((7, cols + 3), (cols + 9, cols), (2, 3, 5, cols + 1), (1, 2, 1, 1, 2, 1, 3, cols + 5),
                  (0, cols), (2, 0, cols)):
        x = random_array(rng, shape, dt)
        beyond = (cols + 7, -(shape[-2] + 2))  # past the matrix either way: all kept or all zero
        for upper, ks in ((0, (0, -1, -4, -(2**40)) + beyond), (1, (0, 1, 3, 2**40) + beyond)):
            for kk in ks:
                want = reference("Trilu", 14, [x, np.array(kk, np.int64)], {"upper": upper})[0]
                yield f"Trilu {shape} upper {upper} k {kk}", lambda x=x, kk=kk, u=upper: trilu(
                    x, k=np.array(kk, np.int64), upper=u, backend=backend), want, "runs" if x.size else "none"
    yield from repeat_structures(rng, dt, backend)
    if dtype in (np.float32, np.uint8, np.float64):  # triangles and repeats cut across bands of 1 KiB
        x = random_array(rng, (3, 11, 150), dt)
        for upper, kk in ((1, 1), (0, -2), (1, -3), (0, 70), (1, 140)):
            yield f"Trilu cut upper {upper} k {kk}", lambda u=upper, kk=kk, x=x: trilu(
                x, k=np.array(kk, np.int64), upper=u, backend=backend), np.triu(x, kk) if upper else np.tril(x, kk), \
                "runs, cut"
        x = random_array(rng, (9, 1, 301), dt)
        yield "Expand cut", lambda x=x: expand(x, [9, 7, 301], backend=backend), np.broadcast_to(x, (9, 7, 301)), \
            "runs, cut wide"
        yield "Tile cut", lambda x=x: tile(x, [2, 3, 2], backend=backend), np.tile(x, [2, 3, 2]), "runs, cut wide"


def repeat_structures(rng, dt, backend):
    """Expand's broadcast axes and Tile's copies of whole source rows (ranks
    2-8, odd sizes, a sliced source) by runs; for float32 the views left to
    the gather kernel."""
    cols = -(-piece_records.MIN_ROW_BYTES // dt.itemsize) + 3
    x = random_array(rng, (3, 1, cols), dt)
    for shape in ((3, 5, cols), (2, 1, 3, 4, cols), (1, 1, 2, 1, 2, 3, 4, cols), (0, 3, 1, cols)):
        yield f"Expand to {shape}", lambda s=shape, x=x: expand(x, s, backend=backend), np.broadcast_to(x, shape), \
            "runs" if np.prod(shape) else "none"
    y = random_array(rng, (4, 2 * cols + 1), dt)[:, 1:]  # a strided view of the source
    for reps in ([2, 3], [1, 2], [3, 1], [2, 1, 1, 2]):
        src = y if len(reps) == 2 else y[None, None]
        yield f"Tile {reps}", lambda s=src, r=reps: tile(s, r, backend=backend), np.tile(src, reps), "runs"
    if dt == np.float32:
        x = random_array(rng, (3, 1, 70), dt)
        z, w = x[..., :1], random_array(rng, (3, 2, 70), dt)
        for what, call, want in (
                ("Expand of the inner axis", lambda: expand(z, [3, 4, 70], backend=backend),
                 np.broadcast_to(z, (3, 4, 70))),
                ("Expand of short rows", lambda: expand(x[..., :3], [3, 4, 3], backend=backend),
                 np.broadcast_to(x[..., :3], (3, 4, 3))),
                ("Expand big-endian", lambda: expand(x.astype(">f4"), [3, 2, 70], backend=backend),
                 np.broadcast_to(x, (3, 2, 70))),
                ("Transpose", lambda: transpose(w, [1, 0, 2], backend=backend), w.transpose(1, 0, 2))):
            yield what, call, want, "gather"


def meant(kind: str, variant: str, repeat: bool) -> str:
    """``kind`` on ``variant``: with runs off, the general kernel for fills and
    the gather kernel for repeats; in bands of 1 KiB, runs with the general
    kernel for the bits of rows a band's edge cuts short ("runs, cut")."""
    if kind in ("none", "gather"):
        return kind
    if variant == "general":
        return "gather" if repeat else "general"
    if variant.endswith("bands") and "runs" in kind:
        return "runs, cut"
    return kind + ", staged" * (variant == "staged")


@pytest.mark.parametrize("dtype", WIDTHS)
def test_fills_match_the_reference(backend, gpu, rng, monkeypatch, taken, gathered, dtype):
    """Each structure on the schedule chosen (the cut ones in bands of 1 KiB,
    the repeats 4 KiB); the first structure longer than one row on one
    forced schedule, in turn across widths (for float32 on every one, and
    every operator's first on the general kernel; for 4 bits on every
    one)."""
    tally = Tally()
    firsts: set = set()
    forced: set = set()  # the classes meant on a forced schedule: each must come up
    for k, (what, call, want, kind) in enumerate(structures(rng, dtype, backend)):
        chosen = {"runs, cut": "bands", "runs, cut wide": "wide bands"}.get(kind, "chosen")
        first = chosen == "chosen" and kind.startswith("runs") and what.split()[0] not in firsts
        if first:
            firsts.add(what.split()[0])
        turn = (FORCED[WIDTHS.index(dtype) % len(FORCED)],) * (len(firsts) == 1)  # the first operator
        if dtype in PACKED:
            turn = FORCED * (len(firsts) == 1)
        elif dtype is np.float32:  # every operator on the general kernel, as the replaced test compared them
            turn = ("general",) + FORCED[1:] * (len(firsts) == 1)
        for variant in (chosen,) + (turn if first else ()):
            force_pieces(monkeypatch, variant)
            pieces_ran(taken, variant)
            gathered.clear()
            got = call()
            label = f"case {k} ({what}): {np.dtype(dtype)}, {variant}"
            assert same(got, want), label
            ran = pieces_ran(taken, variant)
            if gathered:
                ran = "gather" if ran == "none" else ran + " and gather"
            if variant.endswith("bands") and ran.startswith("runs"):
                ran = "runs, cut"
            tally.add(label, meant(kind, variant, what.startswith(("Expand", "Tile"))), ran)
            if variant != chosen:
                forced.add(meant(kind, variant, what.startswith(("Expand", "Tile"))))
    assert len(forced) >= (3 if dtype is np.float32 or dtype in PACKED else 1), forced  # a class a schedule forced
    tally.check("runs", *forced)


def test_fill_words():
    """The pattern: the element repeated, band word w = words[w % 4]."""
    assert piece_records.fill_words(bytes([0xA]), 4) == (0xAAAAAAAA,) * 4
    assert piece_records.fill_words(bytes([0x12, 0x34]), 16) == (0x34123412,) * 4
    assert piece_records.fill_words(bytes(range(1, 9)), 64) == (0x04030201, 0x08070605) * 2
    assert piece_records.fill_words(bytes(range(16)), 128) == (0x03020100, 0x07060504, 0x0B0A0908, 0x0F0E0D0C)


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


def test_repeat_of_a_view_with_an_offset(gpu, rng, taken):
    """pieces.repeat_mover directly on a view starting inside its source (the API's inputs start at 0)."""
    from onnxop_cli.core.region import Access

    src = random_array(rng, (400,), np.float32)
    view = Access((3, 2, 70), (90, 0, 1), 7)  # rows 7.., 97.., 187.., each twice
    got = bytearray()
    pieces.repeat_mover(gpu, MemoryBytes(src.view(np.uint8)), view, 32, 0)(got.extend)
    want = np.stack([np.stack([src[7 + 90 * i: 77 + 90 * i]] * 2) for i in range(3)])
    assert bytes(got) == want.tobytes()
    assert taken["runs"] == 1 and taken["general"] == 0
