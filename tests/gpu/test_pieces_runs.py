"""Copies by runs (gpu/render/pieces.py's Rows words and edges through
gpu/pieces.py; the general kernel, gpu/render/pieces.py) as one property:
parts whose innermost axis is contiguous in source and output -- Concat's,
Split's and Pad's interior -- copied as whole vec4 words, the source joined
by a funnel shift where its alignment differs, each row's edge words on
their own bits.

Byte for byte against onnx.reference (numpy's concatenate, split and pad,
the same rules, where onnx.reference has no bfloat16) on random bits (NaN
payloads, -0.0). Random and fixed structures (Concat on the inner axis with
odd column counts; of 9 and 33 inputs some empty and on axis 0, for a byte
and 16 and 32-bit floats; Split into 9 unequal outputs on the inner axis
and on axis 0, for bool, a byte and 16, 32 and 64-bit floats; Pad in every
mode and padding, NaN and -0.0 constants, for a byte and 16, 32 and 64-bit
floats, the constant or another mode in turn for the rest; ranks 0
(float32) and 1 to 8 (float64); big-endian and Fortran sources of 16, 32
and 64-bit floats, beside little-endian ones for float32) x every schedule
(the runs kernels where a part qualifies; forced: the general kernel for
every part, ``piece_records.BY_RUNS`` off; windows and bands of 1 KiB; staged rather
than mapped buffers) x every element width (4-bit packed, 8 to 128 bits).
One tally asserts each case ran the kernels meant for it (runs, general, or
both where Pad's non-constant borders are stride-0 or reversed columns, or
rows are under MIN_ROW_BYTES) and that each came up. The kernel directly
(every alignment, rows sharing edge words, 2-bit elements, folded grids, a
poisoned output): tests/gpu/test_pieces.py."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from conftest import random_array
from properties import Tally, force_pieces, pieces_kernels, pieces_ran
from tensor_refs import reference, same

from onnxop_cli import concat, pad, split, tile
from onnxop_cli.core.region import load
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import get_gpu, piece_records, pieces
from onnxop_cli.ops.tensor_op import Piece

WIDTHS = [np.bool_, np.int8, np.uint8, np.float16, ml_dtypes.bfloat16, np.float32, np.int32, np.float64,
          np.int64, np.complex128, ml_dtypes.int4, ml_dtypes.uint4]
FORCED = ("staged", "general", "bands")
# the widths each forced schedule runs on (as the replaced tests had staged and general); the others take bands
FORCED_ON = {"staged": (np.uint8, np.float16, np.float32, np.float64), "general": (np.bool_, np.float16, np.float32,
                                                                                np.complex128), "bands": (np.float32,)}
MODES = ("constant", "edge", "reflect", "wrap")
PADS = ([0, 1, 3, 1, 0, 2], [1, 0, 1, 0, 2, 0], [0, 0, 0, 0, 0, 3])
_NAN = {2: 0x7C01, 4: 0x7F800123, 8: 0xFFF0000000000ABC}


@pytest.fixture
def taken(monkeypatch):
    """Parts each kernel ran: {"runs": n, "general": n}, and the ways their buffers took (properties.pieces_kernels)."""
    return pieces_kernels(monkeypatch)


def _cols(rng, n, dtype):
    """Column counts giving rows of at least MIN_ROW_BYTES, odd ones included."""
    lo = -(-piece_records.MIN_ROW_BYTES // np.dtype(dtype).itemsize)
    return [int(lo + rng.integers(0, 40)) | 1 if k % 2 else int(lo + rng.integers(0, 40)) for k in range(n)]


def _onnx(dtype) -> bool:
    return dtype is not ml_dtypes.bfloat16


def structures(rng, dtype, backend):
    """(what, call, want, kind): ``call()`` the operator's outputs, ``want``
    theirs by reference, ``kind`` the kernels meant on the schedule chosen."""
    dt = np.dtype(dtype)
    if dtype in (ml_dtypes.int4, ml_dtypes.uint4):  # Pad-21 has int4; Concat has not
        x = rng.integers(0, 8, (5, 131)).astype(dtype)
        for k, mode in enumerate(("constant", "edge", "reflect")):
            for pads in ([0, 1, 1, 2], [1, 3, 0, 0]):
                want = reference("Pad", 25, [x, np.array(pads, np.int64)], {"mode": mode})
                yield f"Pad {mode} {pads}", lambda m=mode, p=pads, x=x: [pad(x, pads=p, mode=m, backend=backend)], \
                    want, "runs" if mode == "constant" else "runs and general"
        return
    for shape, n in (((3, None), 3), ((2, 3, None), 4), ((None,), 3)):
        xs = [random_array(rng, tuple(c if d is None else d for d in shape), dt) for c in _cols(rng, n, dtype)]
        axis = len(shape) - 1
        want = reference("Concat", 13, xs, {"axis": axis}) if _onnx(dtype) else [np.concatenate(xs, axis=axis)]
        yield f"Concat inner {shape} of {n}", lambda xs=xs, a=axis: [concat(*xs, axis=a, backend=backend)], want, \
            "runs"
    for count in (9, 33) if dtype in (np.uint8, np.float16, np.float32) else ():
        cols = _cols(rng, count, dtype)
        cols[1] = cols[count // 2] = 0
        xs = [random_array(rng, (4, c), dt) for c in cols]
        yield f"Concat of {count}, some empty", lambda xs=xs: [concat(*xs, axis=1, backend=backend)], \
            [np.concatenate(xs, axis=1)], "runs"
        xs = [random_array(rng, (int(rng.integers(0, 3)), 41), dt) for _ in range(count)]
        yield f"Concat of {count} on axis 0", lambda xs=xs: [concat(*xs, axis=0, backend=backend)], \
            [np.concatenate(xs, axis=0)], by_size([x.nbytes and 41 * dt.itemsize for x in xs])
    lo = -(-piece_records.MIN_ROW_BYTES // dt.itemsize)
    sizes = np.array([lo + k for k in range(9)], np.int64)
    x = random_array(rng, (3, int(sizes.sum())), dt)
    for _ in range(dtype in (np.bool_, np.uint8, np.float16, np.float32, np.float64)):  # a run per output
        want = reference("Split", 18, [x, sizes], {"axis": 1}, n_outputs=9)
        yield "Split into 9 inner", lambda x=x: list(split(x, sizes, axis=1, backend=backend)), want, "runs"
        y = random_array(rng, (18, 3 * lo + 1), dt)
        yield "Split into 9 on axis 0", lambda y=y: list(split(y, axis=0, num_outputs=9, backend=backend)), \
            np.split(y, 9, axis=0), "runs"
    x = random_array(rng, (4, 3, lo + 5), dt)
    every = dtype in (np.uint8, np.float16, np.float32, np.float64)
    w = WIDTHS.index(dtype)
    for k, mode in enumerate(MODES if every else (("constant", MODES[1 + w % 3])[w % 2],)):
        values = [None]
        if mode == "constant" and dt.kind == "f" and every:
            values = [np.array(_NAN[dt.itemsize], f"u{dt.itemsize}").view(dt), np.array(-0.0, dt)]
        for pads in PADS if every else PADS[k::3]:
            for value in values:
                feeds = [x, np.array(pads, np.int64)] + ([] if value is None else [value])
                want = reference("Pad", 19, feeds, {"mode": mode}) if _onnx(dtype) else \
                    [np.pad(x, np.reshape(pads, (2, -1)).T, mode={"edge": "edge", "reflect": "reflect",
                                                                  "wrap": "wrap"}.get(mode, "constant"))]
                kw = {} if value is None else {"constant_value": value}
                yield f"Pad {mode} {pads} {value}", lambda m=mode, p=pads, kw=kw, x=x: [
                    pad(x, pads=p, mode=m, backend=backend, **kw)], want, \
                    "runs" if mode == "constant" else "runs and general"
    for rank in range(1, 9) if dtype is np.float64 else ():
        shape = tuple(int(v) for v in rng.integers(1, 3, rank - 1)) + (19 * 8 // dt.itemsize,)
        x, y = random_array(rng, shape, dt), random_array(rng, shape[:-1] + (5,), dt)
        yield f"Concat rank {rank}", lambda x=x, y=y, r=rank: [concat(x, y, x, axis=r - 1, backend=backend)], \
            [np.concatenate([x, y, x], axis=rank - 1)], by_size([x.shape[-1] * dt.itemsize, 5 * dt.itemsize])
    if dtype in (np.float16, np.float32, np.float64):  # big-endian bytes and Fortran order: the general kernel's
        a = random_array(rng, (3, 70), dt).astype(dt.newbyteorder(">"))
        b = np.asfortranarray(random_array(rng, (3, 51), dt))
        yield "Concat big-endian and Fortran", lambda a=a, b=b: [concat(a, b, axis=1, backend=backend)], \
            [np.concatenate([a.astype(dt), b], axis=1)], "general"
    if dtype is np.float32:
        c = random_array(rng, (3, 70), dt)
        yield "Concat little- and big-endian", lambda a=a, c=c: [concat(c, a, axis=1, backend=backend)], \
            [np.concatenate([c, a.astype(dt)], axis=1)], "runs and general"
    if dtype is np.float32:
        x = random_array(rng, (1,), dt)
        yield "a rank-0 part", lambda x=x: [_rank_0(backend, x)], [x], "general"


def _rank_0(backend, x):
    got = bytearray()
    pieces.run_pieces(get_gpu(backend), [pieces.Source(MemoryBytes(x.view(np.uint8)))], got.extend,
                      pieces=[Piece((), (), 0, load(0, (), ()))], count=1, bits=32)
    return np.frombuffer(bytes(got), x.dtype)


def by_size(rows: list[int]) -> str:
    """The kernels meant for parts of rows of these bytes (0: no part): a row
    under MIN_ROW_BYTES is the general kernel's."""
    return " and ".join(k for k, on in (("runs", any(n >= piece_records.MIN_ROW_BYTES for n in rows)),
                                        ("general", any(0 < n < piece_records.MIN_ROW_BYTES for n in rows))) if on)


def meant(kind: str, variant: str) -> str:
    """``kind`` on ``variant``: the general kernel for all where runs are
    off; in bands of 1 KiB, runs with the general kernel for the bits of
    rows a band's edge cuts under MIN_ROW_BYTES (counted as "runs, cut")."""
    if variant == "general":
        return "general"
    if variant == "bands" and "runs" in kind:
        return "runs, cut"
    return kind + ", staged" * (variant == "staged")


def cut(ran: str, variant: str) -> str:
    return "runs, cut" if variant == "bands" and ran.startswith("runs") else ran


@pytest.mark.parametrize("dtype", WIDTHS)
def test_copies_match_the_reference(backend, gpu, rng, monkeypatch, taken, dtype):
    """Each structure on the schedule chosen; the first (Concat on the inner
    axis, Pad for the 4-bit widths) on the forced schedules FORCED_ON names
    for its width too."""
    tally = Tally()
    forced = tuple(v for v in FORCED if dtype in FORCED_ON[v]) or ("bands",)
    for k, (what, call, want, kind) in enumerate(structures(rng, dtype, backend)):
        for variant in ("chosen",) + forced * (k == 0):
            force_pieces(monkeypatch, variant)
            pieces_ran(taken, variant)
            got = call()
            label = f"case {k} ({what}): {np.dtype(dtype)}, {variant}"
            assert len(got) == len(want) and all(same(g, w) for g, w in zip(got, want)), label
            tally.add(label, meant(kind, variant), cut(pieces_ran(taken, variant), variant))
    tally.check("runs", *(meant("runs", v) for v in forced),
                *(("general",) if dtype in (np.float16, np.float32, np.float64) else ()))


def test_windows_are_sized_by_one_band(backend, rng, monkeypatch, taken):
    """A source read one band at a time gets a window of about one band's
    reach, not the whole source (Pad's 64 MiB input paid a 64 MiB window's
    first touch); the bands are at most BAND bytes."""
    seen = []
    real = pieces.Run.__init__

    def init(self, gpu, band_bytes, sizes, *a, **k):
        seen.append((band_bytes, sizes[0]))
        real(self, gpu, band_bytes, sizes, *a, **k)

    monkeypatch.setattr(pieces.Run, "__init__", init)
    monkeypatch.setattr(pieces, "BAND", 4096)
    x = random_array(rng, (64, 255), np.float32)  # 65,280 bytes
    got = pad(x, pads=[0, 1, 0, 0], mode="edge", backend=backend)
    assert same(got, np.pad(x, [(0, 0), (1, 0)], mode="edge"))
    (band, window), = seen
    assert band == 4096 and window <= 4096 + 32, seen
    assert taken["runs"] > 0


class _FirstBand(Exception):
    pass


def test_bands_are_cut_one_at_a_time(backend, rng, monkeypatch):
    """A huge output's bands are cut when each runs, not all before the first: a list of every
    band's parts grew with the output (`onnxop tile a.npy --repeats 100000,100000,100000,1 -o t.npy`,
    480 PB, filled 20 GB of memory in 6 minutes and wrote no byte). At most LOOKED bands are cut to
    size the windows; past them the pieces' own reach is taken, and the bytes are still right."""
    monkeypatch.setattr(pieces, "BAND", 4096)
    monkeypatch.setattr(pieces, "LOOKED", 2)
    calls = {"cut": 0}
    real_cut = pieces.cut

    def counted(*a, **k):
        calls["cut"] += 1
        return real_cut(*a, **k)

    def first_drain(self, sink, nbytes):
        raise _FirstBand(calls["cut"])

    monkeypatch.setattr(pieces, "cut", counted)
    x = random_array(rng, (16, 64), np.float32)
    # 16 source rows, 8 in each 4 KiB band: two bands reach half the source, the third takes the whole
    assert same(tile(x, repeats=[8, 2], backend=backend), np.tile(x, (8, 2)))
    monkeypatch.setattr(pieces.Run, "drain", first_drain)
    calls["cut"] = 0
    with pytest.raises(_FirstBand) as stopped:
        tile(x, repeats=[4096, 2], backend=backend)  # 32 MiB: 8,192 bands
    assert stopped.value.args[0] <= 2 + 1, stopped.value.args
