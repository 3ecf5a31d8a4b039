"""The re-layout kernel, byte for byte against numpy, on every adapter.

Fortran-ordered input of element sizes 1, 2, 4, 8 and 16 bytes, ranks 2..6,
rows that are not multiples of 4 bytes; big-endian input (row-major, streamed
in chunks, and Fortran-ordered). The output buffer is poisoned first, so a
word the kernel does not write cannot match.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import random_array
from onnxop_cli import core
from onnxop_cli.errors import InputError
from onnxop_cli.gpu import relayout_through_kernel
from onnxop_cli.gpu.relayout import source_axes
from onnxop_cli.ops import flatten_node, unsqueeze_node
from onnxop_cli.tensor import MemoryBytes, Tensor, swap_unit

POISON = 0xA5
# one dtype per element size, and both byte orders where it matters
ITEMSIZE_DTYPES = ["u1", "<u2", "<f4", "<f8", "<c16"]
BIG_ENDIAN = [">u2", ">i2", ">f2", ">f4", ">i4", ">u4", ">f8", ">i8", ">u8", ">c8", ">c16"]
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def relayout(gpu, array: np.ndarray, **kw) -> bytes:
    """Run the kernel on ``array``'s own bytes (Fortran or C, any byte order)."""
    fortran = not array.flags.c_contiguous
    raw = array.T if fortran else array
    out = bytearray()
    relayout_through_kernel(
        gpu, MemoryBytes(raw), out.extend, shape=array.shape, itemsize=array.dtype.itemsize,
        fortran=fortran, swap=swap_unit(array.dtype), poison=POISON, **kw,
    )
    return bytes(out)


def reference(array: np.ndarray) -> bytes:
    """Row-major little-endian bytes, by numpy."""
    return np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()


@pytest.mark.parametrize("dtype", ITEMSIZE_DTYPES)
@pytest.mark.parametrize(
    "shape",
    [(3, 5), (5, 3), (1, 7), (7, 1), (2, 3, 5), (3, 1, 5, 1), (2, 3, 1, 5, 3), (3, 2, 2, 3, 2, 5), (9, 13), (33, 7)],
)
def test_fortran_order_matches_ascontiguousarray(gpu, rng, dtype, shape):
    f = np.asfortranarray(random_array(rng, shape, dtype))
    assert f.flags.f_contiguous
    assert relayout(gpu, f) == reference(f)


@pytest.mark.parametrize("dtype", ITEMSIZE_DTYPES + BIG_ENDIAN)
@SETTINGS
@given(shape=st.lists(st.integers(1, 7), min_size=2, max_size=6).map(tuple), seed=st.integers(0, 2**32 - 1))
def test_fortran_order_property(gpu, dtype, shape, seed):
    f = np.asfortranarray(random_array(np.random.default_rng(seed), shape, dtype))
    assert relayout(gpu, f) == reference(f)


@pytest.mark.parametrize("dtype", BIG_ENDIAN)
@pytest.mark.parametrize("count", [1, 2, 3, 5, 7, 8, 1001])
def test_big_endian_row_major_is_byte_swapped(gpu, rng, dtype, count):
    a = random_array(rng, (count,), np.dtype(dtype).newbyteorder("<")).astype(dtype)
    assert relayout(gpu, a) == reference(a)


@pytest.mark.parametrize("dtype", [">u2", ">f4", ">c16"])
def test_big_endian_streams_in_chunks(gpu, rng, dtype):
    a = random_array(rng, (1000, 3), np.dtype(dtype).newbyteorder("<")).astype(dtype)
    out = bytearray()
    dispatches = relayout_through_kernel(
        gpu, MemoryBytes(a), out.extend, shape=a.shape, itemsize=a.dtype.itemsize,
        fortran=False, swap=swap_unit(a.dtype), chunk_bytes=1024, poison=POISON,
    )
    assert bytes(out) == reference(a)
    assert dispatches == -(-a.nbytes // 1024)


def test_grid_folds_when_groups_exceed_the_dimension_limit(gpu, rng):
    from onnxop_cli.gpu.kernels import shader_const

    words_per_group = shader_const("relayout.wgsl", "WG") * shader_const("relayout.wgsl", "WORDS")
    f = np.asfortranarray(random_array(rng, (301, 4 * words_per_group // 301 * 4 + 3), "u1"))
    assert f.nbytes > 4 * 4 * words_per_group  # more than 4 groups: a 2 x 3 grid with spares
    assert relayout(gpu, f, max_groups_per_dim=2) == reference(f)


def test_fortran_larger_than_the_binding_is_refused_not_chunked(gpu, rng):
    f = np.asfortranarray(random_array(rng, (40, 40), "f4"))
    with pytest.raises(ValueError, match="exceeds"):
        relayout(gpu, f, chunk_bytes=4096)
    assert relayout(gpu, f, chunk_bytes=6400) == reference(f)  # exactly fits


def test_core_refuses_a_fortran_tensor_above_the_binding_limit_with_the_limit(backend, gpu, monkeypatch, rng):
    f = np.asfortranarray(random_array(rng, (40, 40), "f4"))
    monkeypatch.setitem(gpu.limits, "max-storage-buffer-binding-size", 4096)
    with pytest.raises(InputError) as e:
        core.apply(flatten_node(), Tensor.from_numpy(f, "f"), backend=backend)
    assert str(e.value) == (
        f"f: a Fortran-ordered tensor of 6400 bytes does not fit the 4096 bytes the re-layout kernel "
        f"can bind on {gpu.name}; save it in C order (numpy.ascontiguousarray)"
    )


def test_source_axes_drop_size_one_dims_and_detect_the_identity():
    assert source_axes((3, 1, 5), True) == [(3, 1), (5, 3)]
    assert source_axes((1, 5, 1), True) == []
    assert source_axes((3, 5), False) == []


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
