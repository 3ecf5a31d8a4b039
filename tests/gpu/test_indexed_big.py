"""Indexed operators on data larger than one storage binding: the
gather kernel binds the data one window at a time (gpu/indexed.py). One case
per operator on vulkan and one on gl: each moves about 300 MiB, so they are
kept few (tests/test_indexed_speedpaths.py covers the windows on small data
with forced limits, on every backend)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import BACKENDS
from onnxop_cli import gather, gather_elements
from onnxop_cli.gpu.device import get_gpu
from onnxop_cli.gpu.indexed import binding_limit

CASES = {"test_gather_past_one_binding": ["vulkan", "gl"], "test_gather_elements_past_one_binding": ["vulkan"]}


def backend_params(metafunc) -> bool:
    """Only the backends CASES names for each test, of those this run tests
    (conftest's hook; CI's Mesa 25 pass has no gl)."""
    chosen = [b for b in CASES[metafunc.function.__name__] if b in BACKENDS]
    metafunc.parametrize("backend", chosen or BACKENDS[:1], indirect=True, scope="session")
    return True


def big_data(backend: str) -> np.ndarray:
    """uint8 rows of 1 MiB, 172 MiB past the binding limit: three windows or more."""
    rows = binding_limit(get_gpu(backend)) // (1 << 20) + 172
    return np.random.default_rng(5).integers(0, 256, (rows, 1 << 20), dtype=np.uint8)


def test_gather_past_one_binding(backend):
    x = big_data(backend)
    n = x.shape[0]
    idx = np.array([n - 1, 0, -1, n // 2, 3, -n, n - 2, 130, 129, 255] + list(range(n - 9, n)), np.int64)
    got = gather(x, idx, axis=0, backend=backend)
    assert got.tobytes() == np.take(x, idx, axis=0).tobytes()
    bad = idx.copy()
    bad[4] = 2**32 + 1  # all 64 bits still count past one binding
    with pytest.raises(Exception, match=r"indices\[4\] = 4294967297 is out of range"):
        gather(x, bad, axis=0, backend=backend)


def test_gather_elements_past_one_binding(backend):
    x = big_data(backend)
    n = x.shape[0]
    rng = np.random.default_rng(6)
    idx = rng.integers(-n, n, (2, 1 << 20)).astype(np.int64)  # every window, element by element
    got = gather_elements(x, idx, axis=0, backend=backend)
    assert got.tobytes() == np.take_along_axis(x, np.where(idx < 0, idx + n, idx), axis=0).tobytes()
