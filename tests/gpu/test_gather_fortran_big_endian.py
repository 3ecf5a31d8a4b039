"""The gather kernel on Fortran-order and big-endian tensors, byte for byte against numpy: every
element size, shapes with size-1 axes, larger than a binding (read through windows into bands), the
view and tensor operators on them, and a Fortran stream read out of order spooled once."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import random_array
from onnxop_cli.core import apply as core
from onnxop_cli.ops import flatten_node, unsqueeze_node
from onnxop_cli.core.tensor import Tensor
from strided_gathers import BIG_ENDIAN, ITEMSIZE_DTYPES, SETTINGS, fortran, reference


# The shapes are data for one gather kernel per element size: in a matrix pass the first runs
# (tests/matrix_subset.py); random shapes run on every backend in test_fortran_order_property
@pytest.mark.same_kernel("shape")
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


@pytest.mark.same_kernel("count")  # as above: the lengths are data for one swapping kernel per element size
@pytest.mark.parametrize("dtype", BIG_ENDIAN)
@pytest.mark.parametrize("count", [1, 2, 3, 5, 7, 8, 1001])
def test_big_endian_row_major_is_byte_swapped(gpu, rng, dtype, count):
    a = random_array(rng, (count,), np.dtype(dtype).newbyteorder("<")).astype(dtype)
    assert fortran(gpu, a) == reference(a)


@pytest.mark.parametrize("dtype", [">u2", ">f4", ">c16", "u1"])
def test_fortran_and_big_endian_larger_than_the_binding_go_in_bands(gpu, rng, dtype):
    """What the old re-layout kernel refused: a Fortran tensor larger than one
    binding, here 1 KiB (256 elements: 4 KiB of complex128), read through
    windows into bands. Each band of the Fortran tensor reads the whole source
    through windows, so the dispatches grow with (bytes / binding)^2: 1 KiB
    bindings of complex128 made 58 bands of 58 windows each, 16 times the
    dispatches of float32's 15 x 15 for the same paths."""
    a = np.asfortranarray(random_array(rng, (100, 37), np.dtype(dtype).newbyteorder("<")).astype(dtype))
    binding = max(1024, 256 * a.dtype.itemsize)
    assert fortran(gpu, a, binding_bytes=binding) == reference(a)
    c = np.ascontiguousarray(a)
    assert fortran(gpu, c, binding_bytes=binding) == reference(c)


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
