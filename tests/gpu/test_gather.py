"""The gather kernel, byte for byte against numpy, on every adapter: views of
every element size (1 to 16 bytes) and of the packed 2- and 4-bit types --
transposes, slices with negative steps, broadcasts, tiles and arbitrary
as_strided views -- over random bits (NaN payloads and -0.0 included), read
by windows and by runs; a source read front to back only, spooled; a deep
transpose. The output is poisoned before every band, so a word the kernel
does not write cannot match; a small forced binding limit runs the
multi-band and multi-window paths on small data, on every backend.

Fortran order and big-endian input: test_gather_fortran_big_endian.py; the
host side and the limits (one real case above 128 MiB per engine):
test_gather_limits.py; GatherElements' runs refusing the first of many bad
indices: test_gather_elements_first_bad.py.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import random_array
from onnxop_cli.gpu import Access, gather_through_kernel
from onnxop_cli.gpu import tiling
from strided_gathers import (ITEMSIZE_DTYPES, PACKED, SETTINGS, bits_of, forced_binding, gather, packed, random_packed,
                             reference, run_costs, view_of, views)


# ------------------------------------------------------------ views


@pytest.fixture(params=["windows", "runs"])
def reading(request, monkeypatch) -> int:
    """Bands larger than a window read boxes through windows, or as packed
    runs (read calls made free, to run that path on small data)."""
    if request.param == "runs":
        monkeypatch.setattr(tiling, "RUN_COST", 0)
    return tiling.RUN_COST


def read_both_ways(gpu, monkeypatch, source: np.ndarray, view: Access, bits: int, binding: int | None) -> bytes:
    """The gather's bytes, its boxes read through windows and, where that plans other work, as packed runs
    (read calls made free, to run that path on small data): the two must be the same."""
    got = []
    for cost in run_costs(gpu, source.nbytes, view, bits, binding):
        monkeypatch.setattr(tiling, "RUN_COST", cost)
        got.append(gather(gpu, source, view, bits=bits, binding_bytes=binding))
    assert got.count(got[0]) == len(got), "windows and packed runs differ"
    return got[0]


@pytest.mark.same_kernel("kind")  # every view is the one strided gather kernel's data
@pytest.mark.parametrize("dtype", ITEMSIZE_DTYPES + [">f4", ">c8"])
@pytest.mark.parametrize("kind", list(views(np.empty((4, 6, 5)))))
@pytest.mark.parametrize("binding", [None, 16, 48])
def test_views_match_numpy(gpu, rng, monkeypatch, dtype, kind, binding):
    a = random_array(rng, (4, 6, 5), np.dtype(dtype).newbyteorder("<")).astype(dtype)
    v = views(a)[kind]
    assert read_both_ways(gpu, monkeypatch, a, view_of(a, v), a.dtype.itemsize * 8, binding) == reference(v)


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
    binding = forced_binding(binding, view, size * 8)
    assert gather(gpu, a, view, binding_bytes=binding) == reference(v)


# ------------------------------------------------------------ packed 2- and 4-bit types


@pytest.mark.same_kernel("kind")  # every view is the one strided gather kernel's data
@pytest.mark.parametrize("dtype", PACKED, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("kind", list(views(np.empty((4, 6, 5)))))
@pytest.mark.parametrize("binding", [None, 16, 48])
def test_packed_views_match_onnx_packing(gpu, rng, monkeypatch, dtype, kind, binding):
    a = random_packed(rng, (4, 6, 5), dtype)
    v = views(a)[kind]
    expected = packed(v) if v.size else b""
    source = np.frombuffer(packed(a), np.uint8)
    assert read_both_ways(gpu, monkeypatch, source, view_of(a, v), bits_of(dtype), binding) == expected


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
    binding = forced_binding(binding, view, bits)
    assert gather(gpu, source, view, bits=bits, binding_bytes=binding) == packed(v)


# ------------------------------------------------------------ sources read in order, and deep views


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
    a = random_array(rng, (20, 25), "<f4")  # 2,000 bytes: 8 bands of the 256 below, each reading every row
    out = bytearray()
    view = view_of(a, a.T)
    gather_through_kernel(gpu, ForwardOnly(a.tobytes()), out.extend, view=view, bits=32, binding_bytes=256)
    assert bytes(out) == reference(a.T)


@pytest.mark.parametrize(("rank", "binding"), [(20, None), (12, 256)])
def test_a_deep_transpose(gpu, rng, monkeypatch, rank, binding):
    """Axes that no two merge (a reversed permutation of 2 x ... x 2): twenty
    is the deepest a view of a million bytes gets once size-1 axes are dropped."""
    a = random_array(rng, (2,) * rank, "u1")
    v = a.transpose(list(range(rank - 1, -1, -1)))
    assert len(view_of(a, v).simplified().shape) == rank
    assert read_both_ways(gpu, monkeypatch, a, view_of(a, v), 8, binding) == reference(v)
