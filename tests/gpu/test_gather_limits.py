"""The gather kernel's host side and limits: an Access simplified, a view outside its source refused,
a transpose larger than a window read once as runs, the grid folded past the dispatch limit, and every
path past one binding (forced to 16 KiB on every backend, and once per engine above 128 MiB at the
adapter's own limit)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from conftest import random_array
from onnxop_cli.gpu import Access
from onnxop_cli.gpu import tiling
from onnxop_cli.gpu.render.strided import KERNELS
from strided_gathers import fortran, gather, packed, random_packed, reference, view_of


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
