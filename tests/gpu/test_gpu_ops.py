"""Flatten and Unsqueeze through the GPU path, compared with numpy byte for byte:
every numpy fixed-width dtype, ranks 0..6, zero-sized dimensions, random bit
patterns (NaN payloads and -0.0 included)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import random_array
from onnxop_cli.core import apply as core
from onnxop_cli.errors import OpError
from onnxop_cli.ops import flatten_node, unsqueeze_node
from onnxop_cli.core.tensor import Tensor

DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
]
shapes = st.lists(st.integers(0, 5), min_size=0, max_size=6).map(tuple)
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def gpu_result(node, array, backend, monkeypatch) -> np.ndarray:
    monkeypatch.setenv("ONNXOP_POISON", "0xA5")
    result = core.apply(node, Tensor.from_numpy(array, "x"), backend=backend)
    return result.output.to_numpy()


def assert_same(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.shape == expected.shape
    assert actual.dtype == expected.dtype
    assert actual.tobytes() == expected.tobytes()  # bytes: NaN payloads and -0.0 count


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.one_backend  # the op's shapes; the copy kernel fans out in test_gpu_copy and test_view_ops
@SETTINGS
@given(shape=shapes, data=st.data())
def test_flatten_matches_numpy_reshape(backend, dtype, shape, data, monkeypatch):
    r = len(shape)
    axis = data.draw(st.integers(-r, r))
    x = random_array(np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))), shape, dtype)
    norm = axis + r if axis < 0 else axis
    expected = x.reshape(int(np.prod(shape[:norm])), int(np.prod(shape[norm:])))
    assert_same(gpu_result(flatten_node(axis), x, backend, monkeypatch), expected)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.one_backend  # the op's shapes; the copy kernel fans out in test_gpu_copy and test_view_ops
@SETTINGS
@given(shape=shapes, data=st.data())
def test_unsqueeze_matches_numpy_expand_dims(backend, dtype, shape, data, monkeypatch):
    k = data.draw(st.integers(1, 3))
    r_out = len(shape) + k
    targets = data.draw(st.lists(st.integers(0, r_out - 1), min_size=k, max_size=k, unique=True))
    axes = [t - r_out if data.draw(st.booleans()) else t for t in targets]
    x = random_array(np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))), shape, dtype)
    expected = np.expand_dims(x, tuple(axes))
    assert_same(gpu_result(unsqueeze_node(axes), x, backend, monkeypatch), expected)


@SETTINGS
@given(shape=shapes, data=st.data())
def test_invalid_axes_never_reach_the_gpu(backend, shape, data, monkeypatch):
    r = len(shape)
    axis = data.draw(st.one_of(st.integers(r + 1, r + 9), st.integers(-r - 9, -r - 1)))
    x = np.ones(shape, np.float32)

    def no_gpu(*a, **k):
        raise AssertionError("the GPU was asked for on invalid input")

    monkeypatch.setattr("onnxop_cli.gpu.get_gpu", no_gpu)
    with pytest.raises(OpError, match=f"axis {axis} is out of range"):
        core.apply(flatten_node(axis), Tensor.from_numpy(x), backend=backend)
