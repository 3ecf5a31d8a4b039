"""core/distance.py's ulp distance, element by element, for every pair of
codes of each 4- and 8-bit float type and a sample of the 16-bit ones,
against ranks on the sorted line of the type's values (test_compare_distances'
independent reference; NaN pairs: 0 apart, NaN against a number the most)."""

from __future__ import annotations

import numpy as np
import pytest

from onnxop_cli.core import distance
from onnxop_cli.core.tensor import dtype_by_name
from test_compare_distances import SMALL, every_code, ranks

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.mark.parametrize("name", SMALL)
def test_ulp_apart_is_the_distance_of_ranks(name, rng):
    codes = every_code(name)
    if len(codes) <= 256:
        ia, ib = np.meshgrid(np.arange(len(codes)), np.arange(len(codes)))
        ia, ib = ia.ravel(), ib.ravel()
    else:
        ia = rng.integers(0, len(codes), 50_000)
        ib = np.where(rng.random(50_000) < 0.5, rng.integers(0, len(codes), 50_000),
                      np.clip(ia + rng.integers(-5, 6, 50_000), 0, len(codes) - 1))
    a, b = codes[ia], codes[ib]
    got = distance.ulp_apart(a, b, dtype_by_name(name))
    na, nb = np.isnan(a.astype(np.float64)), np.isnan(b.astype(np.float64))
    want = np.abs(ranks(a, name).astype(np.int64) - ranks(b, name)).astype(np.uint64)
    want = np.where(na & nb, np.uint64(0), np.where(na ^ nb, np.uint64(2**64 - 1), want))
    assert np.array_equal(got, want)
