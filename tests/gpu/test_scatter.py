"""ScatterND's whole-slice kernel (gpu/render/scatter_slices.py) and
ScatterElements' line kernels (gpu/render/scatter.py's ``Lines``) as
properties, byte for byte against onnx.reference on random bits: random
structures (data ranks 1 to 8, update slices of one element to more than
an invocation's 16 words, distinct targets written negative half the time;
for the lines, the axis first, middle and last, updates matching the data
or not, many updates per element so that their order shows) x the kernel
the host chooses and the claim/apply rounds (``slice_copy=False``) x every
element width and reduction (big-endian data). One tally per property
asserts each case ran the kernel meant for it. Duplicates with reduction
none, bad indices and empty updates are refused or written as the
reference says, with nothing written before an error.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import random_array
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.errors import OpError
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.gpu import scatter as sc
from onnxop_cli.ops import indexing
from properties import CLS, Tally, little, native, reference

WIDTHS = ["bool", "u1", "<i2", "<f2", "<f4", "<i4", "<f8", "<i8", "<c16"]
SLICES = [(), (1,), (3,), (4,), (2, 8), (17,)]


@pytest.fixture
def spied(monkeypatch):
    """The host's calls of the slice kernel ("slices") and of the line kernel
    ("lines", with the direct variant's axis length, else 0), in order."""
    calls: list[tuple[str, int]] = []
    for name, kernel in (("_by_slices", "slices"), ("_by_lines", "lines")):
        real = getattr(sc, name)

        def spy(*a, _real=real, _kernel=kernel, **k):
            if _kernel == "slices" and (a[10] if len(a) > 10 else k.get("raw")) is None:
                _kernel = "slices checked first"  # indices.wgsl checked the indices, the plain apply ran
            calls.append((_kernel, a[8].dlen if _kernel == "lines" else 0))
            return _real(*a, **k)

        monkeypatch.setattr(sc, name, spy)
    return calls


def data(a: np.ndarray) -> ix.Data:
    swap = a.dtype.itemsize if a.dtype.byteorder == ">" else 0
    return ix.Data(MemoryBytes(np.ascontiguousarray(a)), a.shape, a.dtype.itemsize * 8, swap)


def scatter_nd(gpu, x, i, u, reduction="none", into=None, **kw) -> bytes:
    table, check = indexing.scatter_nd("SND", x.shape, i.shape, u.shape)
    out = [] if into is None else into
    reduce = sc.Reduce() if reduction == "none" else sc.Reduce(reduction, 2, True, int(np.prod(x.shape[i.shape[-1]:])))
    n = sc.scatter_indexed(gpu, data(x), data(u), ix.Index(MemoryBytes(np.ascontiguousarray(i)), i.shape), check,
                           table, reduce, lambda v: out.append(bytes(v)), **kw)
    assert n == sum(map(len, out))
    return b"".join(out)


def distinct(rng, shape, lead, m) -> np.ndarray:
    """``lead`` distinct index tuples over shape[:m], each entry negative half the time."""
    n = int(np.prod(lead))
    flat = rng.permutation(int(np.prod(shape[:m])))[:n]
    cols = np.stack(np.unravel_index(flat, shape[:m]), axis=-1).astype(np.int64)
    flip = rng.integers(0, 2, cols.shape).astype(bool)
    cols[flip] -= np.array(shape[:m], np.int64)[np.nonzero(flip)[1]]
    return cols.reshape(tuple(lead) + (m,))


def nd_structures(rng, dtype):
    """(data shape, tuples' leading shape, tuple length): every slice shape;
    for float32 also data ranks 1 to 8 with every tuple length, and 3000
    slices of 3 words."""
    for s in SLICES:
        yield (7, 6) + s, (3, 5), 2
    if dtype == "<f4":
        for rank in range(1, 9):
            shape = (3, 2, 3, 1, 2, 3, 2, 2)[:rank]
            for m in range(1, rank + 1):
                yield shape, (min(int(np.prod(shape[:m])), 4),), m
        yield (60, 70, 3), (3000,), 2


@pytest.mark.parametrize("dtype", WIDTHS)
def test_scatter_nd_matches_the_reference(gpu, rng, spied, dtype):
    """Each structure on the chosen kernel, every other one also on the rounds,
    and every third whole-slice one with the indices checked first
    (indices.wgsl) and then the slice kernel's plain apply, as the host runs
    it where the raw check cannot be folded in (``fold=False``)."""
    tally = Tally()
    for k, (shape, lead, m) in enumerate(nd_structures(rng, dtype)):
        x = random_array(rng, shape, dtype)
        i = distinct(rng, shape, lead, m)
        u = random_array(rng, i.shape[:-1] + shape[m:], dtype)
        want = reference("ScatterND", x, i, u).tobytes()
        whole = int(np.prod(shape[m:])) * np.dtype(dtype).itemsize % 4 == 0
        runs = [(True, True), (False, True)][:1 + (k % 2 or lead == (3000,))] + [(True, False)] * (whole and k % 3 == 0)
        for copy, fold in runs:
            label = f"case {k}: data {shape} {dtype}, indices {i.shape}, slice_copy {copy}, folded check {fold}"
            del spied[:]
            assert scatter_nd(gpu, x, i, u, slice_copy=copy, fold=fold) == want, label
            meant = ("slices" if fold else "slices checked first") if whole and copy else "rounds"
            tally.add(label, meant, spied[0][0] if spied else "rounds")
    tally.check("slices", "slices checked first", "rounds")


@pytest.mark.parametrize("slice_shape", [(), (5,)])
def test_scatter_nd_duplicates_refused_nothing_written(gpu, rng, spied, slice_shape):
    shape = (9, 8) + slice_shape
    x = random_array(rng, shape, "<f4")
    i = distinct(rng, shape, (40,), 2)
    i[33] = i[5] - np.where(i[5] >= 0, np.array(shape[:2]), 0)  # the same slice, written negative
    u = random_array(rng, (40,) + slice_shape, "<f4")
    written: list = []
    with pytest.raises(OpError, match="two updates write one element with reduction none"):
        scatter_nd(gpu, x, i, u, into=written)
    assert [c[0] for c in spied] == ["slices"] and written == []
    # with a reduction, duplicates are applied in order by the rounds, not here
    assert scatter_nd(gpu, x, i, u, "add") == reference("ScatterND", x, i, u, reduction="add").tobytes()
    assert len(spied) == 1


def test_scatter_nd_out_of_range(gpu, rng):
    shape = (9, 8, 4)
    for bad in (2**32 + 1, 2**32, 9, -10, -(2**63)):
        x = random_array(rng, shape, "<f4")
        i = distinct(rng, shape, (12,), 2)
        i[7, 0] = bad
        u = random_array(rng, (12, 4), "<f4")
        written: list = []
        with pytest.raises(ix.BadIndex, match=rf"indices\[7, 0\] = {bad} is out of range \[-9, 8\]"):
            scatter_nd(gpu, x, i, u, into=written)
        assert written == [], bad  # the slice kernel's claim checks them (test_scatter_mapped.py)


def test_scatter_nd_zero_size(gpu, rng, spied):
    x = random_array(rng, (5, 4), "<f4")
    assert scatter_nd(gpu, x, np.zeros((0, 1), np.int64), np.zeros((0, 4), np.float32)) == x.tobytes()
    assert spied == []


# ------------------------------------------------------------------ ScatterElements with a reduction, by lines


def scatter_elements(gpu, x, i, u, axis, reduction, index=None, into=None, **kw) -> bytes:
    table, check = indexing.scatter_elements("SE", x.shape, i.shape, u.shape, axis, *(index or ())[:1])
    index = index[1] if index else ix.Index(MemoryBytes(np.ascontiguousarray(i)), i.shape)
    out = [] if into is None else into
    n = sc.scatter_indexed(gpu, data(x), data(u), index, check, table, sc.Reduce(reduction, CLS[x.dtype.kind], False),
                           lambda v: out.append(bytes(v)), **kw)
    assert n == sum(map(len, out))
    return b"".join(out)


LINE_TYPES = ["<f4", "<f2", "<i4", "<i8", "u1", "<u8", "<i2", "?", ">f4", "<f8"]
# (axis, data, updates): the axis first, last and in the middle; updates matching the data off the axis or not
LINE_SHAPES = [(0, (6, 300), (9, 300)), (1, (300, 5), (300, 8)), (1, (4, 7, 70), (4, 11, 70)),
               (2, (2, 150, 3), (2, 150, 7)), (0, (6, 310), (9, 300)), (1, (5, 9, 71), (4, 11, 70))]


@pytest.mark.every_dtype  # a reduction's kernel is the type's own
@pytest.mark.parametrize("dtype", LINE_TYPES)
def test_lines_in_index_order(gpu, rng, spied, dtype):
    """Every reduction (float64 add and mul are refused by the op: WGSL has
    no f64) on a shape whose updates match the data off the axis (the
    checked indices read directly) and one whose do not, in turn; the first
    also on the rounds."""
    tally = Tally()
    reductions = [r for r in ("add", "mul", "max", "min") if not (dtype == "<f8" and r in ("add", "mul"))]
    for k, reduction in enumerate(reductions):
        j = LINE_TYPES.index(dtype) + k
        for shift, which in enumerate((j % 4, 4 + j % 2)):  # updates matching the data off the axis, then not
            axis, shape, ishape = LINE_SHAPES[which]
            x, u = random_array(rng, shape, dtype), random_array(rng, ishape, dtype)
            i = rng.integers(-shape[axis], shape[axis], ishape).astype(np.int64)  # more updates than slots
            want = little(reference("ScatterElements", native(x), i, native(u), axis=axis, reduction=reduction))
            direct = all(d == e for j, (d, e) in enumerate(zip(shape, ishape)) if j != axis)
            label = f"{reduction} axis {axis} data {shape} updates {ishape}"
            del spied[:]
            assert scatter_elements(gpu, x, i, u, axis, reduction) == want, label
            if k == 0 and shift == 0:
                assert scatter_elements(gpu, x, i, u, axis, reduction) == want, f"run to run: {label}"
            if shift == 0:
                assert scatter_elements(gpu, x, i, u, axis, reduction, slice_copy=False) == want, f"rounds: {label}"
            tally.add(label, f"lines {shape[axis] if direct else 0}", "lines {}".format(*spied[0][1:]))
    tally.check()


def test_few_lines_keep_the_rounds(gpu, rng, spied):
    x = random_array(rng, (50, 4), "<f4")
    i = rng.integers(-50, 50, (60, 4)).astype(np.int64)
    u = random_array(rng, (60, 4), "<f4")
    assert scatter_elements(gpu, x, i, u, 0, "add") == reference("ScatterElements", x, i, u, axis=0,
                                                                   reduction="add").tobytes()
    assert spied == [] and 4 < sc.FEWEST_LINES


def test_lines_out_of_range(gpu, rng):
    for bad in (2**32 + 1, 300, -301):
        x = random_array(rng, (300, 300), "<f4")
        i = rng.integers(-300, 300, (300, 4)).astype(np.int64)
        i[299, 3] = bad
        u = random_array(rng, (300, 4), "<f4")
        written: list = []
        with pytest.raises(ix.BadIndex, match=rf"indices\[299, 3\] = {bad} is out of range \[-300, 299\]"):
            scatter_elements(gpu, x, i, u, 1, "add", into=written)
        assert written == [], bad  # the line kernel checks them itself (test_scatter_mapped.py)


def test_lines_zero_size(gpu, rng, spied):
    x = random_array(rng, (300, 3), "<f4")
    i = np.zeros((300, 0), np.int64)
    assert scatter_elements(gpu, x, i, np.zeros((300, 0), np.float32), 1, "add") == x.tobytes()
    assert spied == []


def test_lines_with_column_major_indices(gpu, rng, spied):
    """Indices stored column-major: the line kernel reads computed targets (the
    direct variant assumes row-major positions)."""
    x = random_array(rng, (300, 6), "<f4")
    i = rng.integers(-6, 6, (300, 9)).astype(np.int64)
    u = random_array(rng, (300, 9), "<f4")
    f = np.asfortranarray(i)
    index = (tuple(s // 8 for s in f.strides), ix.Index(MemoryBytes(f.T.copy()), i.shape, fortran=True))
    got = scatter_elements(gpu, x, i, u, 1, "add", index)
    assert got == reference("ScatterElements", x, i, u, axis=1, reduction="add").tobytes()
    assert spied == [("lines", 0)]
