"""The gather kernel, byte for byte against numpy, on every adapter (and
GatherElements' runs refusing the first of many bad indices).

Views of every element size (1 to 16 bytes) and of the packed 2- and 4-bit
types: Fortran order, big-endian input, transposes, slices with negative
steps, broadcasts, tiles and arbitrary as_strided views, over random bits
(NaN payloads and -0.0 included). The output is poisoned before every band,
so a word the kernel does not write cannot match; a small forced binding
limit runs the multi-band and multi-window paths on small data, on every
backend, and one real case above 128 MiB per engine runs at the adapter's own
limit.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import numpy_helper

from conftest import random_array
from onnxop_cli.core import apply as core
from onnxop_cli.gpu import Access, gather_through_kernel
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.gpu import tiling
from onnxop_cli.gpu.render.strided import KERNELS
from onnxop_cli.ops import flatten_node, indexing, unsqueeze_node
from onnxop_cli.core.tensor import MemoryBytes, Tensor, swap_unit

POISON = 0xA5
# one dtype per element size, and both byte orders where it matters
ITEMSIZE_DTYPES = ["u1", "<u2", "<f4", "<f8", "<c16"]
BIG_ENDIAN = [">u2", ">i2", ">f2", ">f4", ">i4", ">u4", ">f8", ">i8", ">u8", ">c8", ">c16"]
PACKED = [ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2, ml_dtypes.float4_e2m1fn]
SETTINGS = settings(
    max_examples=12, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def view_of(base: np.ndarray, v: np.ndarray) -> Access:
    """The Access (in elements) by which numpy's ``v`` reads ``base``'s buffer."""
    size = base.dtype.itemsize
    offset = v.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return Access(v.shape, tuple(s // size for s in v.strides), offset // size)


def gather(gpu, source: np.ndarray, view: Access, bits: int | None = None, **kw) -> bytes:
    """Run the kernel on ``source``'s own bytes (any byte order)."""
    out = bytearray()
    written = gather_through_kernel(
        gpu, MemoryBytes(source), out.extend, view=view, bits=bits or source.dtype.itemsize * 8,
        swap=swap_unit(source.dtype), poison=POISON, **kw,
    )
    assert written == len(out)
    return bytes(out)


def reference(array: np.ndarray) -> bytes:
    """Row-major little-endian bytes, by numpy."""
    return np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()


def views(a: np.ndarray) -> dict[str, np.ndarray]:
    """numpy's views of a 3-D array, one per kind of layout change."""
    return {
        "transpose": a.transpose(2, 0, 1),
        "reversed": a[::-1, ::-2, 1:],
        "slice": a[1:, 1:4:2, ::-1],
        "broadcast": np.broadcast_to(a[:, :1, :], (2,) + a.shape[:1] + (5,) + a.shape[2:]),
        "tile": np.broadcast_to(a[None, :, None], (2, a.shape[0], 3) + a.shape[1:]),
        "depth_to_space": a.reshape(a.shape[0], 2, a.shape[1] // 2, a.shape[2]).transpose(2, 0, 3, 1),
        "scalar": a[1, 2, 3, ...],
        "empty": a[:, 2:2],
    }


# ------------------------------------------------------------ Fortran and big-endian


def fortran(gpu, array: np.ndarray, **kw) -> bytes:
    raw = array.T if not array.flags.c_contiguous else array
    view = Access.fortran(array.shape) if not array.flags.c_contiguous else Access.row_major(array.shape)
    return gather(gpu, np.ascontiguousarray(raw), view, **kw)


@pytest.mark.parametrize("dtype", ITEMSIZE_DTYPES)
@pytest.mark.parametrize(
    "shape",
    [(3, 5), (5, 3), (1, 7), (7, 1), (2, 3, 5), (3, 1, 5, 1), (2, 3, 1, 5, 3), (3, 2, 2, 3, 2, 5), (9, 13), (33, 7)],
)
def test_fortran_order_matches_ascontiguousarray(gpu, rng, dtype, shape):
    f = np.asfortranarray(random_array(rng, shape, dtype))
    assert f.flags.f_contiguous
    assert fortran(gpu, f) == reference(f)


@pytest.mark.parametrize("dtype", ITEMSIZE_DTYPES + BIG_ENDIAN)
@SETTINGS
@given(shape=st.lists(st.integers(1, 7), min_size=2, max_size=6).map(tuple), seed=st.integers(0, 2**32 - 1))
def test_fortran_order_property(gpu, dtype, shape, seed):
    f = np.asfortranarray(random_array(np.random.default_rng(seed), shape, dtype))
    assert fortran(gpu, f) == reference(f)


@pytest.mark.parametrize("dtype", BIG_ENDIAN)
@pytest.mark.parametrize("count", [1, 2, 3, 5, 7, 8, 1001])
def test_big_endian_row_major_is_byte_swapped(gpu, rng, dtype, count):
    a = random_array(rng, (count,), np.dtype(dtype).newbyteorder("<")).astype(dtype)
    assert fortran(gpu, a) == reference(a)


@pytest.mark.parametrize("dtype", [">u2", ">f4", ">c16", "u1"])
def test_fortran_and_big_endian_larger_than_the_binding_go_in_bands(gpu, rng, dtype):
    """What the old re-layout kernel refused: a Fortran tensor larger than one
    binding, here 1 KiB, read through windows into bands."""
    a = np.asfortranarray(random_array(rng, (100, 37), np.dtype(dtype).newbyteorder("<")).astype(dtype))
    assert fortran(gpu, a, binding_bytes=1024) == reference(a)
    c = np.ascontiguousarray(a)
    assert fortran(gpu, c, binding_bytes=1024) == reference(c)


@pytest.mark.parametrize("dtype", ["int8", "<u2", ">i4", "<f8", ">c16", "bool"])
def test_ops_on_fortran_and_big_endian_tensors_match_numpy(backend, rng, dtype):
    x = np.asfortranarray(random_array(rng, (3, 4, 5), np.dtype(dtype).newbyteorder("<")).astype(dtype))
    le = np.ascontiguousarray(x).astype(x.dtype.newbyteorder("<"))
    for node, expected in [
        (flatten_node(-1), le.reshape(12, 5)),
        (unsqueeze_node([0, 4]), le.reshape(1, 3, 4, 5, 1)),
    ]:
        out = core.apply(node, Tensor.from_numpy(x), backend=backend).output
        assert out.shape == expected.shape
        assert out.data.to_array().tobytes() == expected.tobytes()


def test_core_takes_a_fortran_tensor_above_the_binding_limit(backend, shrink_binding, rng):
    f = np.asfortranarray(random_array(rng, (40, 40), "f4"))
    shrink_binding(4096)
    out = core.apply(flatten_node(), Tensor.from_numpy(f, "f"), backend=backend).output
    assert out.data.to_array().tobytes() == reference(f)


def test_core_spools_a_fortran_stream_it_reads_out_of_order(backend, shrink_binding, rng):
    """A Fortran tensor on stdin larger than a band (here 1 KiB) is read once,
    into a temporary file, and re-laid out from there."""
    import io

    from onnxop_cli.core.tensor import StreamBytes, dtype_of_numpy

    f = np.asfortranarray(random_array(rng, (40, 40), "<f4"))
    shrink_binding(1024)
    stream = StreamBytes(io.BytesIO(np.ascontiguousarray(f.T).tobytes()), f.nbytes)
    tensor = Tensor("f", f.shape, dtype_of_numpy(f.dtype), stream, "F")
    out = core.apply(flatten_node(), tensor, backend=backend).output
    assert out.data.to_array().tobytes() == reference(f)


# ------------------------------------------------------------ views


@pytest.fixture(params=["windows", "runs"])
def reading(request, monkeypatch) -> int:
    """Bands larger than a window read boxes through windows, or as packed
    runs (read calls made free, to run that path on small data)."""
    if request.param == "runs":
        monkeypatch.setattr(tiling, "RUN_COST", 0)
    return tiling.RUN_COST


@pytest.mark.parametrize("dtype", ITEMSIZE_DTYPES + [">f4", ">c8"])
@pytest.mark.parametrize("kind", list(views(np.empty((4, 6, 5)))))
@pytest.mark.parametrize("binding", [None, 16, 48])
def test_views_match_numpy(gpu, rng, reading, dtype, kind, binding):
    a = random_array(rng, (4, 6, 5), np.dtype(dtype).newbyteorder("<")).astype(dtype)
    v = views(a)[kind]
    assert gather(gpu, a, view_of(a, v), binding_bytes=binding) == reference(v)


@st.composite
def strided_views(draw, max_rank: int = 5):
    """A random valid view over a source of `n` elements: shape, signed strides
    (0 included) and an offset that keeps every index in range."""
    rank = draw(st.integers(0, max_rank))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank)))
    strides = tuple(draw(st.lists(st.integers(-40, 40), min_size=rank, max_size=rank)))
    low = sum(min(0, (d - 1) * s) for d, s in zip(shape, strides))
    high = sum(max(0, (d - 1) * s) for d, s in zip(shape, strides))
    offset = -low + draw(st.integers(0, 9))
    return Access(shape, strides, offset), offset + high + 1 + draw(st.integers(0, 5))


@pytest.mark.parametrize("dtype", ITEMSIZE_DTYPES + [">u2", ">f8"])
@SETTINGS
@given(
    case=strided_views(), binding=st.sampled_from([None, 16, 64]), run_cost=st.sampled_from([tiling.RUN_COST, 0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_strided_view_property(gpu, monkeypatch, dtype, case, binding, run_cost, seed):
    monkeypatch.setattr(tiling, "RUN_COST", run_cost)
    view, n = case
    a = random_array(np.random.default_rng(seed), (n,), np.dtype(dtype).newbyteorder("<")).astype(dtype)
    size = a.dtype.itemsize
    v = np.lib.stride_tricks.as_strided(
        a[view.offset :], view.shape, tuple(s * size for s in view.strides), writeable=False
    )
    assert gather(gpu, a, view, binding_bytes=binding) == reference(v)


# ------------------------------------------------------------ packed 2- and 4-bit types


def packed(values: np.ndarray) -> bytes:
    """ONNX's own packing (low bits first), by onnx.numpy_helper."""
    return numpy_helper.from_array(np.ascontiguousarray(values)).raw_data


def bits_of(dtype) -> int:
    return 2 if np.dtype(dtype).name.endswith("2") else 4


def random_packed(rng, shape, dtype) -> np.ndarray:
    return rng.integers(0, 1 << bits_of(dtype), shape, dtype=np.uint8).view(dtype)


@pytest.mark.parametrize("dtype", PACKED, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("kind", list(views(np.empty((4, 6, 5)))))
@pytest.mark.parametrize("binding", [None, 16, 48])
def test_packed_views_match_onnx_packing(gpu, rng, reading, dtype, kind, binding):
    a = random_packed(rng, (4, 6, 5), dtype)
    v = views(a)[kind]
    expected = packed(v) if v.size else b""
    source = np.frombuffer(packed(a), np.uint8)
    assert gather(gpu, source, view_of(a, v), bits=bits_of(dtype), binding_bytes=binding) == expected


@pytest.mark.parametrize("bits", [2, 4])
@SETTINGS
@given(
    case=strided_views(), binding=st.sampled_from([None, 16]), run_cost=st.sampled_from([tiling.RUN_COST, 0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_packed_strided_view_property(gpu, monkeypatch, bits, case, binding, run_cost, seed):
    monkeypatch.setattr(tiling, "RUN_COST", run_cost)
    view, n = case
    dtype = ml_dtypes.uint4 if bits == 4 else ml_dtypes.uint2
    a = random_packed(np.random.default_rng(seed), (n,), dtype)
    v = np.lib.stride_tricks.as_strided(a[view.offset :], view.shape, view.strides, writeable=False)
    source = np.frombuffer(packed(a), np.uint8)
    assert gather(gpu, source, view, bits=bits, binding_bytes=binding) == packed(v)


# ------------------------------------------------------------ host side and limits


def test_simplified_drops_size_one_axes_and_merges_contiguous_ones():
    assert Access((3, 1, 5), (5, 99, 1)).simplified() == Access((15,), (1,))
    assert Access((2, 3, 4), (1, 8, 2), 7).simplified() == Access((2, 12), (1, 2), 7)
    assert Access((), ()).simplified() == Access((1,), (1,))
    assert Access.fortran((2, 3, 4)) == Access((2, 3, 4), (1, 2, 6))
    assert Access.row_major((2, 3, 4)) == Access((2, 3, 4), (12, 4, 1))


def test_views_outside_the_source_are_refused(gpu):
    a = np.arange(10, dtype=np.uint8)
    with pytest.raises(ValueError, match=r"reads source elements -1\.\.8"):
        gather(gpu, a, Access((10,), (1,), -1))
    with pytest.raises(ValueError, match=r"reads source elements 0\.\.11, outside the source\'s 10"):
        gather(gpu, a, Access((2, 3), (5, 3)))


def plan_of(view: Access, bits: int, binding: int) -> tiling.Plan:
    lo, hi = view.span()
    align = max(1, 128 // bits)
    window = min(binding * 8 // bits, -(-(hi - lo + 1 + align) // align) * align)
    return tiling.Plan(view.simplified(), bits, binding * 8 // bits, window, align, -(-(hi + 1) * bits // 8))


def test_a_transpose_larger_than_a_window_is_read_once_as_runs():
    """Each 64 MiB band of a transposed 1 GiB f4 matrix reads the whole source
    range: its 4 KiB runs (1024 rows of a column) are read once instead."""
    view = Access((16384, 16384), (1, 16384))
    plan = plan_of(view, 32, 64 << 20)
    runs = [run for _, _, band in plan.bands() for upload in band for run in upload.runs]
    assert sum(n for _, _, n in runs) == 1 << 30
    assert {n for _, _, n in runs} == {4096}
    assert not tiling.in_order(plan)
    assert tiling.in_order(plan_of(Access.row_major((16384, 16384)), 32, 64 << 20))


class ForwardOnly:
    """A source that can be read front to back only, like stdin."""

    def __init__(self, data: bytes) -> None:
        self.data, self.nbytes, self.pos = data, len(data), 0

    def readinto(self, offset: int, out: memoryview) -> None:
        assert offset == self.pos, "read out of order"
        out[:] = self.data[offset : offset + len(out)]
        self.pos += len(out)


@pytest.mark.parametrize("reading", ["windows", "runs"], indirect=True)
def test_a_forward_only_source_read_out_of_order_is_spooled(gpu, rng, reading):
    a = random_array(rng, (40, 50), "<f4")
    out = bytearray()
    view = view_of(a, a.T)
    gather_through_kernel(gpu, ForwardOnly(a.tobytes()), out.extend, view=view, bits=32, binding_bytes=256)
    assert bytes(out) == reference(a.T)


@pytest.mark.parametrize(("rank", "binding"), [(20, None), (12, 256)])
def test_a_deep_transpose(gpu, rng, reading, rank, binding):
    """Axes that no two merge (a reversed permutation of 2 x ... x 2): twenty
    is the deepest a view of a million bytes gets once size-1 axes are dropped."""
    a = random_array(rng, (2,) * rank, "u1")
    v = a.transpose(list(range(rank - 1, -1, -1)))
    assert len(view_of(a, v).simplified().shape) == rank
    assert gather(gpu, a, view_of(a, v), binding_bytes=binding) == reference(v)


def test_grid_folds_when_groups_exceed_the_dimension_limit(gpu, rng):
    words_per_group = KERNELS["generic"].schedule.per_group
    f = np.asfortranarray(random_array(rng, (301, 4 * words_per_group // 301 * 4 + 3), "u1"))
    assert f.nbytes > 4 * 4 * words_per_group  # more than 4 groups: a 2 x 3 grid with spares
    assert fortran(gpu, f, max_groups_per_dim=2) == reference(f)


PAST_ONE_BINDING = ["transpose-f4", "fortran-u1", "reversed-int4", "every-other-u1"]


def past_one_binding(gpu, case: str, limit: int, **kw) -> tuple[bytes, bytes]:
    """(kernel's bytes, numpy's) of ``case`` on a tensor larger than a binding
    of ``limit`` bytes: 32-bit words, bytes assembled into words, and packed
    nibbles; bands read as packed runs (the transposes), through one window
    (the reversal) and through several windows each (a step of -2 has no
    unit-stride axis)."""
    rng = np.random.default_rng(11)
    if case == "transpose-f4":
        a = random_array(rng, (limit // 4096 + 3, 1027), "<f4")
        v = a.T
        got, want = gather(gpu, a, view_of(a, v), **kw), reference(v)
    elif case == "fortran-u1":
        a = random_array(rng, (4099, limit // 4099 + 5), "u1")
        v = a.T
        got, want = gather(gpu, a, view_of(a, v), **kw), reference(v)
    elif case == "every-other-u1":
        a = random_array(rng, (2 * limit + limit * 3 // 128 + 7,), "u1")
        v = a[::-2]
        got, want = gather(gpu, a, view_of(a, v), **kw), reference(v)
    else:
        a = random_packed(rng, (2 * limit + 101,), ml_dtypes.int4)
        v = a[::-1]
        got, want = gather(gpu, np.frombuffer(packed(a), np.uint8), view_of(a, v), bits=4, **kw), packed(v)
    assert len(want) > limit
    return got, want


@pytest.mark.parametrize("case", PAST_ONE_BINDING)
def test_views_past_one_binding(gpu, case):
    """Every path past one binding, on every backend, with the binding forced
    to 16 KiB: the same banding and windowing as above 128 MiB, on small data
    (test_views_above_128_mib runs it at the adapter's own limit)."""
    limit = 16 << 10
    got, want = past_one_binding(gpu, case, limit, binding_bytes=limit)
    assert got == want


@pytest.mark.per_engine
@pytest.mark.parametrize("case", ["transpose-f4"])
def test_views_above_128_mib(gpu, case):
    """Once per engine with a tensor larger than max_storage_buffer_binding_size
    (128 MiB on both software adapters), at the adapter's own limits: 32-bit
    words in bands read as packed runs (the cheapest of the paths at this size).
    test_views_past_one_binding runs every path at a forced small limit."""
    limit = max(gpu.limits["max-storage-buffer-binding-size"], 128 << 20)
    got, want = past_one_binding(gpu, case, limit)
    assert len(want) > 128 << 20
    assert got == want


# ------------------------------------------------------------------ GatherElements' runs: the folded index check


def test_elements_first_of_many_bad(gpu, rng):
    """GatherElements' runs: bad indices in one invocation's run and in later
    ones; the first position is named, nothing written; fixed, the bytes of
    numpy's take_along_axis (onnx.reference's GatherElements fails on this
    numpy for 70 columns)."""
    x = random_array(rng, (9, 70), "<f4")
    i = rng.integers(-70, 70, x.shape).astype(np.int64)
    i[2, 35], i[2, 33], i[2, 47], i[7, 3] = 70, 2**32 + 1, -71, 2**32
    table, check = indexing.gather_elements("GE", x.shape, i.shape, 1)
    got = []
    with pytest.raises(ix.BadIndex) as e:
        ix.gather_indexed(gpu, ix.Data(MemoryBytes(x), x.shape, 32), ix.Index(MemoryBytes(i), i.shape), check, table, got.append)
    assert not got and gpu.cache[ix.LAST].get("rows") == 1
    assert e.value.position == (2, 33) and e.value.value == 2**32 + 1
    i[2, 33], i[2, 35], i[2, 47], i[7, 3] = 5, -70, 69, 0
    out = bytearray()
    ix.gather_indexed(gpu, ix.Data(MemoryBytes(x), x.shape, 32), ix.Index(MemoryBytes(i), i.shape), check, table, out.extend)
    assert gpu.cache[ix.LAST].get("rows") == 1
    assert bytes(out) == np.take_along_axis(x, np.where(i < 0, i + 70, i), axis=1).tobytes()
