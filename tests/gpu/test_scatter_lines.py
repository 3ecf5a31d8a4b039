"""ScatterElements' line kernels (gpu/render/scatter.py's ``Lines``,
gpu/scatter.py's ``_by_lines``): every type the op reduces (float32, int32, uint32,
int64, uint64 and float64's max and min; float16, bfloat16, int16, uint16,
int8, uint8 and bool where each word has one writer), every reduction, each
line's updates applied in index order. Every test asserts which kernel ran
(``gpu.cache[ix.LAST]["word lines"]``: a silent fallback to the generic line
kernel fails it, and so does the word kernel taken where lines share words)
and compares byte for byte with onnx.reference on random bits (NaN payloads,
-0.0, subnormals), with many updates per element so that the order shows:
the axis last and not, rank 3, a 2-D dispatch grid, indices raw int64
(little- and big-endian, checked by the kernel), checked by the separate
pass (int32, ``fold=False``) and as element offsets (updates smaller than
the data); NaN pairs, infinities, -0.0 / +0.0 and subnormals; bad indices
refused by the first position, with nothing written.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from conftest import random_array
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.gpu import scatter as sc
from onnxop_cli.ops import indexing
from properties import CLS


def cls_of(dtype: np.dtype) -> int:
    return 4 if dtype == ml_dtypes.bfloat16 else CLS[dtype.kind]


def is_float(dtype) -> bool:
    return np.dtype(dtype).kind == "f" or np.dtype(dtype) == ml_dtypes.bfloat16
REDUCTIONS = ["add", "mul", "max", "min"]


def reference(x: np.ndarray, i: np.ndarray, u: np.ndarray, axis: int, reduction: str) -> bytes:
    node = helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=axis, reduction=reduction)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 0, None) for n in "xiu"],
                              [helper.make_tensor_value_info("y", 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    native = {"x": x.astype(x.dtype.newbyteorder("=")), "i": i.astype(np.int64),
              "u": u.astype(u.dtype.newbyteorder("="))}
    with np.errstate(all="ignore"):
        y = ReferenceEvaluator(model).run(None, native)[0]
    return np.ascontiguousarray(y).astype(y.dtype.newbyteorder("<")).tobytes()


def data_of(a: np.ndarray) -> ix.Data:
    swap = a.dtype.itemsize if a.dtype.byteorder == ">" and a.dtype.itemsize > 1 else 0
    return ix.Data(MemoryBytes(np.ascontiguousarray(a)), a.shape, a.dtype.itemsize * 8, swap)


def index_of(i: np.ndarray) -> ix.Index:
    return ix.Index(MemoryBytes(np.ascontiguousarray(i)), i.shape, i.dtype.itemsize == 8, i.dtype.byteorder == ">")


def scattered(gpu, x, i, u, axis, reduction, folded=None, word=True, **kw) -> bytes:
    """The bytes on the device, asserting the word-lines kernel ran (or,
    ``word`` False, the shared-word lines), and whether it checked the
    raw indices itself, when ``folded`` is given."""
    table, check = indexing.scatter_elements("SE", x.shape, i.shape, u.shape, axis)
    out = bytearray()
    reduce = sc.Reduce(reduction, cls_of(x.dtype), False)
    n = sc.scatter_indexed(gpu, data_of(x), data_of(u), index_of(i), check, table, reduce, out.extend, **kw)
    assert n == len(out)
    counts = gpu.cache[ix.LAST]
    assert counts.get("word lines", 0) == int(word), counts
    if folded is not None:
        assert counts["folded checks"] == int(folded), counts
    return bytes(out)


def values(rng, shape, dtype, reduction) -> np.ndarray:
    """Random bits; for float add and mul, also values near 1 and of mixed
    magnitude (random bits alone are mostly NaN or overflow there), so that
    the order of the updates changes the rounding."""
    a = random_array(rng, shape, dtype)
    if is_float(dtype) and reduction in ("add", "mul"):
        flat = a.reshape(-1)
        near = (rng.standard_normal(flat.size) * np.exp2(rng.integers(-20 if a.itemsize > 2 else -6, 6, flat.size)))
        if reduction == "mul":
            near = 1 + rng.standard_normal(flat.size) / 8
        pick = rng.random(flat.size) < 0.85
        flat[pick] = near.astype(a.dtype)[pick]
    return a


# float64 add and mul are refused by the op (no f64 in WGSL): not made, rather than skipped
ENTRIES = [(t, r) for t in ("<f4", "<i4", "<u4", "<i8", "<u8", "<f8") for r in REDUCTIONS
           if not (t == "<f8" and r in ("add", "mul"))]


@pytest.mark.every_dtype  # a reduction's kernel is the type's own
@pytest.mark.parametrize("dtype, reduction", ENTRIES)
def test_every_entry_matches_reference(gpu, rng, dtype, reduction):
    """The axis last (lines contiguous) and first (lines interleaved), six
    updates per element on average: index order decides the bits."""
    for shape, ushape, axis in (((300, 3), (300, 20), 1), ((4, 260), (24, 260), 0)):
        x = values(rng, shape, dtype, reduction)
        u = values(rng, ushape, dtype, reduction)
        d = shape[axis]
        i = rng.integers(-d, d, ushape).astype(np.int64)
        assert scattered(gpu, x, i, u, axis, reduction, folded=True) == reference(x, i, u, axis, reduction), shape


@pytest.mark.every_dtype  # a reduction's kernel is the type's own
@pytest.mark.parametrize("dtype", ["<f2", ml_dtypes.bfloat16, "<i2", "<u2", "i1", "u1", "?"])
def test_narrow_whole_words_and_shared_words(gpu, rng, dtype):
    """8- and 16-bit elements: the axis last with lines of whole words (one
    line an invocation), the axis first with a word's elements in adjacent
    lines (a group of lines an invocation), and lines that share words
    otherwise (the compare-exchange kernel: the same bytes);
    big-endian 16-bit data (add)."""
    for reduction in REDUCTIONS:
        for shape, ushape, axis, word in (((256, 8), (256, 10), 1, True), ((8, 256), (10, 256), 0, True),
                                          ((256, 6), (256, 7), 1, np.dtype(dtype).itemsize == 2)):
            x = values(rng, shape, dtype, reduction)
            u = values(rng, ushape, dtype, reduction)
            d = shape[axis]
            i = rng.integers(-d, d, ushape).astype(np.int64)
            want = reference(x, i, u, axis, reduction)
            assert scattered(gpu, x, i, u, axis, reduction, word=word) == want, (reduction, shape)
            if np.dtype(dtype).itemsize == 2 and np.dtype(dtype).kind != "V" and word and reduction == "add":
                big = np.dtype(dtype).newbyteorder(">")
                assert scattered(gpu, x.astype(big), i, u.astype(big), axis, reduction) == want


@pytest.mark.parametrize("dtype, reduction", [("<f4", r) for r in REDUCTIONS] + [("<u8", "mul"), ("<u8", "min")])
def test_index_forms_and_rank_3(gpu, rng, dtype, reduction):
    """Rank 3 along the middle axis: raw int64 big-endian (checked by the
    kernel), int32 and ``fold=False`` (the check pass's indices), updates
    smaller than the data (element offsets), big-endian data."""
    x = values(rng, (5, 6, 70), dtype, reduction)
    u = values(rng, (5, 23, 70), dtype, reduction)
    i = rng.integers(-6, 6, u.shape).astype(np.int64)
    want = reference(x, i, u, 1, reduction)
    assert scattered(gpu, x, i.astype(">i8"), u, 1, reduction, folded=True) == want
    assert scattered(gpu, x, i.astype("<i4"), u, 1, reduction, folded=False) == want
    assert scattered(gpu, x, i, u, 1, reduction, folded=False, fold=False) == want
    assert scattered(gpu, x.astype(x.dtype.newbyteorder(">")), i, u.astype(u.dtype.newbyteorder(">")), 1,
                     reduction) == want
    small = np.ascontiguousarray(u[:, :, :64])  # the updates' lines do not span the data's: offsets mode
    si = np.ascontiguousarray(i[:, :, :64])
    assert scattered(gpu, x, si, small, 1, reduction, folded=False) == reference(x, si, small, 1, reduction)


F8_SPECIALS = [0x7FF8000000000001, 0xFFF0000000000123, 1 << 63, 0, 1, (1 << 63) | 1, 0x000FFFFFFFFFFFFF,
               0x800FFFFFFFFFFFFF, 0x7FF0000000000000, 0xFFF0000000000000, 0x3FF0000000000000, 0xBFF0000000000001,
               0x3FF0000000000001, 0x4000000000000000 | 0xFFFFFFFF, 0x4000000100000000]


@pytest.mark.parametrize("reduction", ["max", "min"])
def test_float64_nan_inf_zeros_subnormals(gpu, rng, reduction):
    """float64's max and min: the same rules, on words that differ in the
    low half only or the high half only."""
    specials = np.array(F8_SPECIALS, np.uint64)
    x = specials[rng.integers(0, specials.size, (300, 4))].view(np.float64)
    u = specials[rng.integers(0, specials.size, (300, 12))].view(np.float64)
    i = rng.integers(-4, 4, u.shape).astype(np.int64)
    assert scattered(gpu, x, i, u, 1, reduction) == reference(x, i, u, 1, reduction)
    assert scattered(gpu, x.astype(">f8"), i, u.astype(">f8"), 1, reduction) == reference(x, i, u, 1, reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nan_inf_zeros_subnormals(gpu, rng, reduction):
    """Python's max() and min(): a NaN update never replaces, a NaN element
    stays, -0.0 and +0.0 are equal (the element stays), subnormals compare
    by value; add and mul: of two NaNs numpy's scalar loop keeps the one
    the host's numpy keeps, inf - inf and 0 * inf give the host's NaN."""
    specials = np.array([0x7FC00001, 0xFF800123, 0x80000000, 0x00000000, 0x00000001, 0x80000001, 0x007FFFFF,
                         0x807FFFFF, 0x7F800000, 0xFF800000, 0x3F800000, 0xBF800000], np.uint32)
    x = specials[rng.integers(0, specials.size, (300, 4))].view(np.float32)
    u = specials[rng.integers(0, specials.size, (300, 12))].view(np.float32)
    i = rng.integers(-4, 4, u.shape).astype(np.int64)
    assert scattered(gpu, x, i, u, 1, reduction) == reference(x, i, u, 1, reduction)


def test_bad_index_first_position_nothing_written(gpu, rng):
    x = values(rng, (300, 5), "<i4", "add")
    u = values(rng, (300, 7), "<i4", "add")
    i = rng.integers(-5, 5, u.shape).astype(np.int64)
    i[200, 3], i[17, 6], i[17, 2] = 5, -6, 2**32 + 1  # three bad: the first at [17, 2]
    table, check = indexing.scatter_elements("SE", x.shape, i.shape, u.shape, 1)
    got: list = []
    with pytest.raises(ix.BadIndex) as e:
        sc.scatter_indexed(gpu, data_of(x), data_of(u), index_of(i), check, table, sc.Reduce("add", 1, False),
                           got.append)
    assert e.value.position == (17, 2) and e.value.value == 2**32 + 1 and got == []
    assert gpu.cache[ix.LAST].get("word lines") == 1


def test_grid_of_several_rows(gpu, rng):
    """More workgroups than ``max_groups_per_dim``: the lines are numbered
    across a 2-D grid (300 lines, 64 a workgroup: 5 groups on a 2-wide grid)."""
    x = values(rng, (300, 6), "<f4", "add")
    u = values(rng, (300, 9), "<f4", "add")
    i = rng.integers(-6, 6, u.shape).astype(np.int64)
    assert scattered(gpu, x, i, u, 1, "add", max_groups_per_dim=2) == reference(x, i, u, 1, "add")


def test_every_scatter_render_compiles(gpu):
    """Every kernel gpu/render/scatter.py can write compiles on the adapter: each arithmetic at each width
    as the rounds' apply and the lines (8 and 16 bits on shared words too), the rounds' passes and the
    whole-slice steps."""
    from onnxop_cli.gpu.render import scatter
    from onnxop_cli.gpu.render.scatter_slices import Slices
    from onnxop_cli.gpu.program import compiled

    kernels = [scatter.Pass(name) for name in scatter.PASSES]
    kernels += [Slices(step, raw) for step in ("claim", "apply") for raw in (False, True)]
    for op in scatter.ARITH:
        for bits in scatter.ARITH[op].widths:
            kernels.append(scatter.Apply(op, bits))
            if op != "none":
                kernels += [scatter.Lines(op, bits, shared) for shared in (False, True)[:1 + (bits < 32)]]
    for kernel in kernels:
        assert compiled(gpu, kernel) is not None, kernel.label
    assert len(kernels) > 100
