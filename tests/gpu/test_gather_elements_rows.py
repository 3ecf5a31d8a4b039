"""GatherElements by runs (shaders/gather_elements_rows.wgsl, gpu/elements_rows.py):
32- and 64-bit elements with row-major int64 indices, 16 output elements an
invocation. Every test asserts which kernel ran (``gpu.cache[ix.LAST]["rows"]``)
and compares byte for byte with onnx.reference or numpy on random bits, and
with the element kernel (``slice_copy=False``): every element width, odd
sizes, ranks 1 to 8, runs along a row and across rows, big-endian indices
and column-major data; column-major indices, byte-swapped data and outputs in
bands keep the element kernel; bad indices are refused by the first position, nothing written;
zero sizes write nothing.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from conftest import random_array
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.ops import indexing
from test_reverse_sequence import WIDTHS, data_of, little

ROWS_WIDTHS = ("<f4", "<i4", "<f8", "<i8")  # 32 and 64 bits: the runs kernel's


def onnx_gather_elements(x: np.ndarray, i: np.ndarray, axis: int) -> np.ndarray:
    node = helper.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 0, None) for n in ("x", "i")],
                              [helper.make_tensor_value_info("y", 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with np.errstate(all="ignore"):
        return ReferenceEvaluator(model).run(None, {"x": x, "i": i})[0]


def numpy_gather_elements(x: np.ndarray, i: np.ndarray, axis: int) -> np.ndarray:
    d = x.shape[axis]
    part = x[tuple(slice(0, n) if k != axis else slice(None) for k, n in enumerate(i.shape))]
    return np.take_along_axis(part, np.where(i < 0, i + d, i).astype(np.int64), axis)


def gather_elements(gpu, data: ix.Data, i: np.ndarray, axis: int, fortran: bool = False, **kw) -> bytes:
    istrides = tuple(s // i.itemsize for s in i.strides) if fortran else None
    table, check = indexing.gather_elements("GE", data.shape, i.shape, axis, data.strides, istrides)
    raw = i.ravel(order="F") if fortran else np.ascontiguousarray(i)
    index = ix.Index(MemoryBytes(raw), i.shape, True, i.dtype.byteorder == ">", fortran)
    out = bytearray()
    assert ix.gather_indexed(gpu, data, index, check, table, out.extend, poison=0xA5, **kw) == len(out)
    return bytes(out)


def took_rows(gpu, rows: bool) -> None:
    assert bool(gpu.cache[ix.LAST].get("rows")) == rows, gpu.cache[ix.LAST]


def both_ge(gpu, x: np.ndarray, i: np.ndarray, axis: int, rows: bool = True, **kw) -> bytes:
    """The runs kernel's bytes (asserting it ran, or not), equal to the element kernel's."""
    data = data_of(x)
    got = gather_elements(gpu, data, i, axis, **kw)
    took_rows(gpu, rows)
    assert gather_elements(gpu, data, i, axis, slice_copy=False, **kw) == got
    took_rows(gpu, False)
    return got


@pytest.mark.parametrize("dtype", WIDTHS)
@pytest.mark.parametrize("axis", [0, 1])
def test_gather_elements_every_width_against_onnx_reference(gpu, rng, dtype, axis):
    x = random_array(rng, (21, 37), dtype)
    d = x.shape[axis]
    i = rng.integers(-d, d, (19, 37) if axis == 0 else (21, 35)).astype(np.int64)  # odd sizes
    i[0, 0], i[-1, -1] = -d, d - 1
    native = x.astype(x.dtype.newbyteorder("="))
    want = little(onnx_gather_elements(native, i, axis))
    assert both_ge(gpu, x, i, axis, rows=dtype in ROWS_WIDTHS) == want


@pytest.mark.parametrize("rank", range(1, 9))
def test_gather_elements_ranks(gpu, rng, rank):
    for dtype in ("<f4", "<f8"):
        shape = tuple(int(v) for v in rng.integers(2, 5, rank - 1)) + (int(rng.integers(1, 40)),)
        x = random_array(rng, shape, dtype)
        for axis in {0, rank - 1, int(rng.integers(0, rank))}:
            ishape = tuple(int(rng.integers(1, s + 1)) if k != axis else int(rng.integers(1, 30))
                           for k, s in enumerate(shape))
            i = rng.integers(-shape[axis], shape[axis], ishape).astype(np.int64)
            assert both_ge(gpu, x, i, axis) == numpy_gather_elements(x, i, axis).tobytes(), (shape, ishape, axis)


def test_gather_elements_rows_long_and_short(gpu, rng):
    """Rows of 16 and more (the adds-only run), shorter, and counts not whole runs or vectors."""
    for shape, ishape in (((3, 64), (3, 64)), ((5, 16), (5, 16)), ((2, 33), (2, 47)), ((7, 3), (7, 5)),
                          ((1, 1), (1, 1)), ((300,), (4097,))):
        for dtype in ("<f4", "<f8"):
            x = random_array(rng, shape, dtype)
            axis = len(shape) - 1
            i = rng.integers(-shape[axis], shape[axis], ishape).astype(np.int64)
            assert both_ge(gpu, x, i, axis) == numpy_gather_elements(x, i, axis).tobytes(), (shape, ishape)


def test_gather_elements_big_endian_and_fortran(gpu, rng):
    x = random_array(rng, (9, 23), "<f4")
    i = rng.integers(-23, 23, (9, 20)).astype(">i8")
    assert both_ge(gpu, x, i, 1) == numpy_gather_elements(x, i.astype("<i8"), 1).tobytes()
    f = np.asfortranarray(random_array(rng, (9, 23), "<f8"))  # column-major data: the table's strides
    data = ix.Data(MemoryBytes(f.ravel(order="F")), f.shape, 64, 0, tuple(s // 8 for s in f.strides))
    j = rng.integers(-23, 23, (9, 20)).astype(np.int64)
    assert gather_elements(gpu, data, j, 1) == numpy_gather_elements(f, j, 1).tobytes()
    took_rows(gpu, True)
    jf = np.asfortranarray(j)  # column-major indices: the element kernel
    assert gather_elements(gpu, data_of(np.ascontiguousarray(f)), jf, 1, fortran=True) == \
        numpy_gather_elements(f, j, 1).tobytes()
    took_rows(gpu, False)
    for dtype in (">f4", ">f8"):  # byte-swapped data: the element kernel
        xb = random_array(rng, (9, 23), dtype)
        assert both_ge(gpu, xb, j, 1, rows=False) == little(numpy_gather_elements(xb, j, 1)), dtype
    assert gather_elements(gpu, data_of(x), j, 1, binding_bytes=256) == numpy_gather_elements(x, j, 1).tobytes()
    took_rows(gpu, False)  # bands: the element kernel


@pytest.mark.parametrize("bad", [2**32 + 1, 2**32, 2**63 - 1, -(2**63), "d", "-d-1"])
@pytest.mark.parametrize("where", [(1, 10), (2, 23), (3, 2)])
def test_gather_elements_bad_refused_nothing_written(gpu, rng, bad, where):
    """Bad in an adds-only run (rows 40 wide, runs of 16), at such a run's end, in a run across two rows."""
    for dtype in ("<f4", "<f8"):
        x = random_array(rng, (4, 40), dtype)
        value = {"d": 40, "-d-1": -41}.get(bad, bad)
        for big in (False, True):
            i = rng.integers(-40, 40, (4, 40)).astype(">i8" if big else "<i8")
            i[where] = value
            i[3, 39] = value  # the smallest position is named
            table, check = indexing.gather_elements("GE", x.shape, i.shape, 1)
            got = []
            with pytest.raises(ix.BadIndex) as e:
                ix.gather_indexed(gpu, data_of(x), ix.Index(MemoryBytes(i), i.shape, True, big), check, table,
                                  got.append)
            took_rows(gpu, True)
            assert f"indices[{where[0]}, {where[1]}] = {value} is out of range [-40, 39]" in str(e.value)
            assert e.value.value == value and got == []


def test_gather_elements_zero_sizes(gpu, rng):
    for shape, ishape, axis in (((4, 5), (0, 5), 1), ((4, 5), (4, 0), 1), ((0, 5), (0, 3), 1), ((4, 5), (0, 5), 0)):
        x = random_array(rng, shape, "<f4")
        i = np.zeros(ishape, np.int64)
        got = []
        table, check = indexing.gather_elements("GE", shape, ishape, axis)
        assert ix.gather_indexed(gpu, data_of(x), ix.Index(MemoryBytes(i), ishape), check, table, got.append) == 0
        took_rows(gpu, False)
        assert b"".join(got) == b""
