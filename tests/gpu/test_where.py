"""Where's kernels as properties, byte for byte against onnx.reference on
random bits (NaN payloads, -0.0, condition bytes other than 0 and 1):
random structures -- each of the condition, X and Y the output's shape, a
scalar, broadcast along leading axes (a row under 16 bytes and over), along
a trailing run, or both; two separate broadcast runs; Fortran order;
big-endian bytes; odd lengths, ranks 0 to 8, zero sizes, one row to
thousands -- x every kernel the plan and gpu/word_kernels.py's ``run_select``
can choose (the select the renderer writes on its whole-word schedules
``small``, ``wide`` and ``rows``, gpu/render/select.py; the select piece of the
pieces kernel, gpu/render/pieces.py, for what the select cannot read, and as
its fallback past one window) x forced variants
(staged rather than mapped buffers, bands of a few words, windows of 48
bytes, grids of one and two rows) x every element width (bool to
complex128). One tally per property asserts each case ran the kernel meant
for it and that every kernel came up."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from conftest import random_array
from properties import Tally, reference

from onnxop_cli import where
from onnxop_cli.core import apply_tensors as plans
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.core.tensor import Tensor, dtype_of_numpy
from onnxop_cli.core.region import Select, c_strides, load
from onnxop_cli.gpu import get_gpu, pieces, word_kernels
from onnxop_cli.ops.base import Node
from onnxop_cli.ops.tensor_op import Arg, Piece, broadcast_strides
from onnxop_cli.ops.where import VERSIONS, Where_9, run_form

# one type per element width and kind: 1, 2, 4, 8 and 16 bytes
TYPES = [np.bool_, np.int8, np.uint8, np.float16, ml_dtypes.bfloat16, np.int16, np.uint16, np.float32, np.int32,
         np.uint32, np.float64, np.int64, np.uint64, np.complex64, np.complex128]
WIDTHS = [np.bool_, np.float16, np.float32, np.float64, np.complex128]
NODE = Node(VERSIONS[-1], {})
# forced variants: (word_kernels.BAND, pieces.DEFAULT_BAND, mapped)
VARIANTS = {"chosen": (None, None, True), "staged": (None, None, False), "bands": (48, None, True),
            "bands staged": (48, None, False), "vec4 bands": (16, None, True), "vec4 bands staged": (16, None, False),
            "row bands": (1040, None, True), "row bands staged": (1040, None, False), "window": (None, 48, True)}
CAN_MAP = pieces.can_map
# (condition, X, Y) in run forms: the output's shape, scalars, broadcast along leading axes, a trailing run, both
RUNS = [((7, 13), (7, 13), (7, 13)), ((37,), (37,), (37,)), ((), (5, 3), ()), ((), (), ()), ((13,), (4, 13), (1, 13)),
        ((37,), (5, 37), (5, 37)), ((16,), (3, 16), (3, 16)), ((6, 1), (6, 5), (6, 5)), ((6, 5), (6, 1), (1,)),
        ((7, 1), (7, 37), (7, 37)), ((9, 1), (9, 16), (9, 16)), ((1, 5, 1), (3, 5, 20), (3, 5, 20)),
        ((1, 6, 1), (3, 6, 5), (3, 1, 1)), ((3, 1, 1), (1, 1, 5), (3, 4, 5)), ((1, 9), (5, 1), (5, 9)),
        ((0, 5), (0, 5), (1,)), ((0,), (), (0,)), ((2, 2, 2, 2, 2, 2, 2, 3), (1, 1, 1, 2, 2, 2, 1, 1), ()),
        ((1, 1, 1, 1, 1, 1, 1, 1), (2, 1, 2, 1, 2, 1, 2, 3), (2, 1, 2, 1, 2, 1, 2, 3)),
        ((41,), (41,), (41,)), ((6, 1), (6, 7), (1,)), ((9,), (3, 9), (3, 1))]
# runs, wraps and rows crossing the edges of bands of a few words
BANDED = [((7, 13), (7, 13), (7, 13)), ((6, 1), (6, 11), (6, 11)), ((13,), (5, 13), (1,)), ((1, 6, 1), (3, 6, 5), (3, 1, 1)),
          ((3, 1), (1,), (3, 17)), ((5, 1), (5, 40), (5, 40)), ((1, 3, 1), (2, 3, 17), (2, 3, 17)), ((29,), (4, 29), (4, 29))]
# the condition a row of 16 bytes and more under X and Y in full (the rows entry for 32 bits)
ROWS = [((16,), (9, 16), (9, 16)), ((1, 17), (131, 17), (131, 17)), ((37,), (40, 37), (40, 37)),
        ((1, 100), (23, 100), (23, 100)), ((1, 1, 64), (2, 9, 64), (2, 9, 64)), ((15,), (4, 15), (4, 15)),
        ((6, 20), (6, 20), (6, 20)), ((20,), (1, 20), (6, 20)), ((20,), (6, 20), (6, 20))]  # and not: other entries
ROW_BANDS = [((1, 17), (13, 17), (13, 17)), ((37,), (7, 37), (7, 37)), ((1, 100), (5, 100), (5, 100))]
# not run forms (the select piece): two separate runs, ranks to 8, zero sizes
SELECT = [((3, 1, 5), (4, 1), (1, 4, 5)), ((7,), (1,), (3, 7)), ((1, 9), (5, 9), (5, 1)), ((), (2, 3), ()),
          ((2, 0), (1,), (2, 1)), ((2, 1, 3), (1, 4, 1), (2, 4, 3)),
          ((2, 1, 3, 1, 2, 1, 3, 5), (1, 2, 1, 3, 1, 2, 1, 5), (2, 2, 3, 1, 2, 2, 3, 1))]
# past a window of 48 bytes: the fallback (a row broadcast along leading axes) or the select piece in bands
WINDOWED = [((40,), (3, 40), (1,)), ((5, 1, 13), (1, 6, 13), (5, 6, 1)), ((37,), (37,), (1,)), ((3, 11), (11,), (3, 11))]
FORMS = ("full", "scalar", "lead", "trail", "both")


def shape_of(form: str, out: tuple, rng) -> tuple:
    """An input's shape read in ``form`` over output shape ``out`` (all of whose dims are > 1)."""
    r = len(out)
    if form == "full" or r == 0:
        return out
    if form == "scalar":
        return (1,) * int(rng.integers(0, r + 1))
    if form == "lead":  # a suffix of the output's axes, leading ones dropped or 1
        k = int(rng.integers(1, r)) if r > 1 else 1
        return (1,) * int(rng.integers(0, 2)) * k + out[k:] if k < r else (1,)
    if form == "trail":
        k = int(rng.integers(1, r)) if r > 1 else 0
        return out[:k] + (1,) * (r - k) if k else (1,)
    if form == "both":  # a run in the middle
        a = int(rng.integers(1, r - 1))
        return (1,) * a + out[a:a + 1] + (1,) * (r - a - 1)
    assert form == "two runs"
    return out[:1] + (1,) + out[2:]


def structures(rng, dtype):
    """(condition, X, Y shapes, layout, variants, label): the fixed run
    forms, bands, rows, select pieces and windows above (on the variants
    that change their edges, for one type of each width), Fortran and
    big-endian layouts, then random structures with every form for each
    input in turn (five, for the one type of each width, on the kernel
    chosen and one forced variant; one for the others, on the kernel chosen)."""
    dt = np.dtype(dtype)
    one = dtype in WIDTHS  # the one type of its width that takes the forced variants
    narrow = ("vec4 bands", "vec4 bands staged") if dt.itemsize < 8 else ()
    for shapes in RUNS:
        yield shapes, "C", ("chosen",) + ("staged",) * (dtype in WIDTHS[:4]), "runs"
    for shapes in BANDED * one:
        yield shapes, "C", ("bands", "bands staged") + narrow, "bands"
    for shapes in ROWS * (dt.itemsize == 4) + ROWS[-1:] * (dtype in (np.float16, np.float64)):
        yield shapes, "C", ("chosen",), "rows"
    for shapes in ROW_BANDS * (dtype is np.float32):
        yield shapes, "C", ("row bands", "row bands staged", "bands", "bands staged"), "row bands"
    for shapes in SELECT:
        yield shapes, "C", ("chosen",), "select"
    for shapes in WINDOWED[dtype is not np.float32:] * (dtype in WIDTHS or dtype is np.uint8):
        yield shapes, "C", ("window",), "window"
    if dtype in (np.int16, np.float32, np.float64, np.complex128):
        yield ((3, 4, 7), (4, 7), (3, 1, 7)), "F>", ("chosen",), "Fortran and big-endian"
        yield ((3, 4, 7), (3, 1, 7), (4, 7)), "F>", ("chosen",), "Fortran and big-endian"
        yield ((5, 7), (5, 7), (5, 7)), "F", ("chosen",), "Fortran"
        yield ((5, 7), (5, 7), (5, 7)), ">", ("chosen",), "big-endian"
    if one:
        yield ((5, 7), (5, 7), (5, 7)), "F1", ("chosen",), "Fortran one row"
    forced = [v for v in VARIANTS if v != "chosen" and (not v.startswith("vec4") or narrow)]
    for k in range(5 if one else 1):
        r = 2 + k % 3
        out = tuple(int(d) for d in rng.integers(2, 40 if r == 2 else 7 if r == 3 else 5, r))
        forms = [FORMS[(k + j * (1 + k // 5)) % 5] for j in range(3)]
        if r == 2 and "both" in forms:
            out = out + (3,)
        few = one and int(np.prod(out)) <= 40  # bands of a few words: a dispatch each
        yield tuple(shape_of(f, out, rng) for f in forms), "C", ("chosen",) + (forced[k % len(forced)],) * few, \
            "/".join(forms)


def condition(rng, shape, any_byte: bool) -> np.ndarray:
    """A condition; ``any_byte``: bools of any nonzero byte (numpy and the kernels count them true)."""
    raw = rng.integers(0, 256 if any_byte else 2, int(np.prod(shape)), dtype=np.uint8)
    raw[::3] = 0
    return raw.view(np.bool_).reshape(shape)


def inputs(rng, shapes, layout: str, dtype, any_byte: bool):
    c = condition(rng, shapes[0], any_byte)
    x, y = (random_array(rng, s, np.dtype(dtype)) for s in shapes[1:])
    if layout == "F":
        c, y = np.asfortranarray(c), np.asfortranarray(y)
    elif layout == "F>":  # X big-endian and Y Fortran, each its own layout
        c, y = np.asfortranarray(c), np.asfortranarray(y)
        x = x.astype(x.dtype.newbyteorder(">"))
    elif layout == "F1":
        c, x = c[:, :1], np.asfortranarray(x[:1])
    elif layout == ">":
        x = x.astype(x.dtype.newbyteorder(">"))
    return c, x, y


def meant(gpu, c, x, y, variant: str) -> str:
    """The kernel the plan and run_select should choose: "none" for no
    output, the select piece where an input is not in a run form (two runs,
    Fortran, big-endian) or one broadcast along leading axes is past a
    window, else the select's schedule by width (``rows``: 32-bit X and
    Y in full, the condition a row of 16 bytes and more)."""
    shape = np.broadcast_shapes(c.shape, x.shape, y.shape)
    count = int(np.prod(shape))
    if count == 0:
        return "none"
    args = plans.args_of(NODE, [Tensor.from_numpy(a) for a in (c, x, y)])
    forms = [run_form(shape, broadcast_strides(a, shape)) for a in args]
    if None in forms or x.dtype.byteorder == ">":
        return "pieces"
    bits = x.dtype.itemsize * 8
    cap, _ = pieces.one_kernel_bands(gpu, None, count, bits, word_kernels.BAND)
    word = word_kernels.WORD
    if any(div * size < count and size * w // 8 + word > cap for (div, size), w in zip(forms, (8, bits, bits))):
        return "pieces"
    if bits == 32 and forms[1] == forms[2] == (1, count) and forms[0][0] == 1 and 16 <= forms[0][1] < count:
        return "rows"
    return "small" if bits < 32 else "wide"


@pytest.fixture
def ran(monkeypatch):
    """The kernels calls ran, in order: the schedule of the select rendered, or "pieces"."""
    taken: list[str] = []
    kernel, run_pieces = word_kernels.kernel, pieces.run_pieces
    monkeypatch.setattr(word_kernels, "kernel", lambda q, v: taken.append(v) or kernel(q, v))
    monkeypatch.setattr(pieces, "run_pieces", lambda *a, **k: taken.append("pieces") or run_pieces(*a, **k))
    return taken


def force(monkeypatch, variant: str) -> None:
    band, window, mapped = VARIANTS[variant]
    monkeypatch.setattr(word_kernels, "BAND", band or 16 << 20)
    monkeypatch.setattr(pieces, "DEFAULT_BAND", window or 64 << 20)
    monkeypatch.setattr(pieces, "can_map", lambda gpu: mapped and CAN_MAP(gpu))


@pytest.mark.parametrize("dtype", TYPES)
def test_where_matches_the_reference(backend, gpu, rng, dtype, ran, monkeypatch):
    """Each structure on the kernel chosen and on one forced variant in turn
    (the narrow widths' bands of one vec4 where they change the edges)."""
    tally = Tally()
    for k, (shapes, layout, variants, what) in enumerate(structures(rng, dtype)):
        c, x, y = inputs(rng, shapes, layout, dtype, any_byte=k % 2 == 1)
        want = reference("Where", c.astype(bool), x.astype(x.dtype.newbyteorder("=")), y) if len(shapes[0]) < 8 \
            else np.where(c, x, y)  # onnx.reference is slow on rank 8; numpy.where is the same rule
        for variant in variants:
            force(monkeypatch, variant)
            kernel = meant(gpu, c, x, y, variant)
            ran.clear()
            got = where(c, x, y, backend=backend)
            label = f"case {k} ({what}): {c.shape} {x.shape} {x.dtype.str} {y.shape} {layout}, {variant}"
            assert got.tobytes() == want.tobytes() and got.shape == want.shape, label
            tally.add(label, kernel, ran[-1] if ran else "none")
    bits = np.dtype(dtype).itemsize * 8
    tally.check("pieces", "none", "small" if bits < 32 else "wide", *(("rows",) if bits == 32 else ()))


@pytest.mark.parametrize("dtype", WIDTHS)
def test_words_kernel_grid_rows_and_padding(gpu, rng, dtype, ran, monkeypatch):
    """More workgroups than one grid row allows (rows of 1 and 2 here, as
    past 65,535 workgroups), and into a graph's intermediate (a DeviceSink
    keeps the whole last word on the device): bits past the output's last
    element are 0, bands of 48 bytes leaving stale bytes in the windows."""
    from onnxop_cli.gpu import resident

    tally = Tally()
    cases = [(((9001, 1), (9001, 7), (7,)), {"max_groups_per_dim": rows}) for rows in (1, 2)]
    padded = [((61,), (61,), (61,)), ((1,), (3, 21), (21,)), ((3, 1), (1,), (3, 19))]
    cases += [(shapes, "device") for shapes in padded * (np.dtype(dtype).itemsize < 4)]  # a last word in part
    for k, (shapes, how) in enumerate(cases):
        c, x, y = inputs(rng, shapes, "C", dtype, any_byte=True)
        want = reference("Where", c.astype(bool), x, y)
        args = plans.args_of(NODE, [Tensor.from_numpy(a) for a in (c, x, y)])
        forms = [run_form(want.shape, broadcast_strides(a, want.shape)) for a in args]
        sources = [pieces.Source(MemoryBytes(np.ascontiguousarray(a))) for a in (c, x, y)]
        run = {"forms": forms, "fallback": [], "count": want.size, "bits": want.dtype.itemsize * 8}
        label = f"case {k}: {shapes} {how}"
        ran.clear()
        if how == "device":
            monkeypatch.setattr(word_kernels, "BAND", 48)
            out = resident.DeviceBuffer(gpu, want.nbytes)
            word_kernels.run_select(gpu, sources, resident.DeviceSink(out, resident.Traffic()), **run)
            n4 = -(-want.nbytes // 4) * 4
            got = resident.read_back(gpu, out.buffer, 0, n4)
            out.release()
            assert got == want.tobytes() + bytes(n4 - want.nbytes), label
        else:
            got = bytearray()
            word_kernels.run_select(gpu, sources, got.extend, **run, **how)
            assert bytes(got) == want.tobytes(), label
        tally.add(label, "small" if want.dtype.itemsize < 4 else "wide", ran[-1])
    tally.check()


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


def test_where_plans_one_select_piece():
    """The plan is one piece (X under the condition, else Y): the output is
    written once, not a Y copy then an X copy; strings stay on the host."""
    args = [Arg(name, shape, dtype_of_numpy(np.dtype(dt)), None, c_strides(shape))  # type: ignore[arg-type]
            for name, shape, dt in (("c", (3, 1, 5), bool), ("x", (4, 1), "f4"), ("y", (1, 4, 5), "f4"))]
    (out,) = Where_9.plan(Node("Where", 9, {}), args)
    (p,) = out.pieces
    v = p.value
    assert isinstance(v, Select) and (v.then.input, v.mask.input, v.other.input) == (1, 0, 2)
    assert p.shape == (3, 4, 5) and v.then.at.strides == (0, 1, 0) and v.other.at.strides == (0, 5, 1)
    assert v.mask.at.strides == (5, 0, 1)
    c = np.array([[True, False, True, False]] * 3)
    x = np.array(["a", "bb", "", "ccc"], dtype=object)
    y = np.array([["x"], ["yy"], ["é"]], dtype=object)
    (plan,) = plans.check(NODE, [Tensor.from_numpy(a, n) for a, n in ((c, "c"), (x, "x"), (y, "y"))])
    assert plan.kernel != "where"
    got = where(c, x, y)
    assert got.dtype == object and got.tolist() == np.where(c, x, y).tolist()


def _unpack(raw: np.ndarray, bits: int, n: int) -> np.ndarray:
    per = 8 // bits
    b = np.repeat(raw, per)[: n] if n else np.zeros(0, np.uint8)
    return (b >> ((np.arange(n) % per) * bits).astype(np.uint8)) & ((1 << bits) - 1)


def _pack(vals: np.ndarray, bits: int) -> bytes:
    per = 8 // bits
    v = np.concatenate([vals, np.zeros(-len(vals) % per, np.uint8)]).reshape(-1, per).astype(np.uint8)
    return (v << (np.arange(per) * bits).astype(np.uint8)).sum(axis=1, dtype=np.uint8).tobytes()


@pytest.mark.parametrize("bits", [2, 4, 8, 16, 32, 64, 128])
def test_select_piece_kernel_every_width(gpu, rng, bits):
    """The select piece straight through run_pieces, every element width the
    kernel has (the packed 2- and 4-bit ones, which no Where type has,
    share words with neighbours), odd last dims, all three broadcast, whole
    and in bindings of 48 bytes, against numpy on the elements."""
    shape = (3, 5, 7)
    xs, ys, cs = (1, 5, 7), (3, 1, 7), (3, 5, 1)
    nx, ny, n = int(np.prod(xs)), int(np.prod(ys)), int(np.prod(shape))
    c = condition(rng, cs, False)

    def strides(s):
        return tuple(0 if d == 1 else st for d, st in zip(s, c_strides(s)))

    if bits < 8:
        xv, yv = (rng.integers(0, 1 << bits, m).astype(np.uint8) for m in (nx, ny))
        xb, yb = _pack(xv, bits), _pack(yv, bits)
        want = np.where(c, xv.reshape(xs), yv.reshape(ys)).reshape(-1)
    else:
        xr, yr = (rng.integers(0, 256, (m, bits // 8), dtype=np.uint8) for m in (nx, ny))
        xb, yb = xr.tobytes(), yr.tobytes()
        want = np.where(c[..., None], xr.reshape(*xs, -1), yr.reshape(*ys, -1))
    piece = Piece(shape, c_strides(shape), 0, Select(load(0, shape, strides(cs)), load(1, shape, strides(xs)),
                                                     load(2, shape, strides(ys))))
    for band in (None, 48):
        got = bytearray()
        sources = [pieces.Source(MemoryBytes(np.frombuffer(b, np.uint8)))
                   for b in (c.astype(np.uint8).tobytes(), xb, yb)]
        pieces.run_pieces(gpu, sources, got.extend, pieces=[piece], count=n, bits=bits,
                          binding_bytes=band)
        if bits < 8:
            assert np.array_equal(_unpack(np.frombuffer(bytes(got), np.uint8), bits, n), want), band
            assert len(got) == -(-n * bits // 8), band
        else:
            assert bytes(got) == want.tobytes(), band


@pytest.mark.parametrize("bits", [16, 64])
def test_a_fortran_condition_runs_in_one_part(gpu, rng, bits):
    """A condition in Fortran order reads elements far apart for each output row: the window is sized for the
    widest range at the width its element limit counts (a float64 Where's 8 bytes, not the mask's own one), so
    the whole output is one part. Counted at the mask's byte the window held an eighth of the range, and the
    output was cut into a part for each few rows: a 36x52x44 float64 Where of a Fortran condition dispatched
    14,976 kernels, 37 CPU s."""
    shape, xs, ys = (18, 26, 22), (18, 1, 22), (26, 1)
    c = np.asfortranarray(condition(rng, shape, False))
    x, y = (rng.integers(0, 256, (int(np.prod(s)), bits // 8), dtype=np.uint8) for s in (xs, ys))
    want = np.where(c[..., None], x.reshape(*xs, -1), y.reshape(*ys, -1))
    fortran = tuple(c.strides)  # bytes of a 1-byte element: its element strides
    piece = Piece(shape, c_strides(shape), 0, Select(load(0, shape, fortran), load(1, shape, (22, 0, 1)),
                                                     load(2, shape, (0, 1, 0))))
    sources = [pieces.Source(MemoryBytes(np.frombuffer(b, np.uint8)))
               for b in (c.tobytes(order="A"), x.tobytes(), y.tobytes())]
    runs, got = pieces.Runs(), bytearray()
    try:
        pieces.run_pieces(gpu, sources, got.extend, pieces=[piece], count=c.size, bits=bits, reuse=runs)
        (run,) = runs.kept.values()
        parts = run.taken["runs"] + run.taken["general"]
    finally:
        runs.release()
    assert bytes(got) == want.tobytes()
    assert parts == 1
