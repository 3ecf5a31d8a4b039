"""The flat copy kernel, byte for byte, on every adapter.

The output buffer is poisoned before every dispatch, so a byte the kernel
does not write cannot match. Chunk and grid boundaries are exercised on small
data by forcing a small chunk size and a small per-dimension group limit.
"""

from __future__ import annotations

import numpy as np
import pytest

from onnxop_cli.gpu import copy_through_kernel
from onnxop_cli.gpu.copy import WORD, grid, shader_const
from onnxop_cli.tensor import MemoryBytes

POISON = 0xA5


def run_copy(gpu, data: np.ndarray, **kw) -> tuple[bytes, int]:
    out = bytearray()
    dispatches = copy_through_kernel(gpu, MemoryBytes(data), out.extend, poison=POISON, **kw)
    return bytes(out), dispatches


@pytest.mark.parametrize("nbytes", [1, 2, 3, 4, 5, 15, 16, 17, 31, 33, 1023, 4096, 65537, 1_000_003])
def test_copy_is_exact_for_sizes_off_every_boundary(gpu, rng, nbytes):
    data = rng.integers(0, 256, nbytes, dtype=np.uint8)
    out, dispatches = run_copy(gpu, data)
    assert out == data.tobytes()
    assert dispatches == 1


def test_poison_is_detectable(gpu, rng):
    """The poison really is in the output buffer before the kernel runs:
    a chunk of all-poison input comes back as poison, any other byte as itself."""
    data = rng.integers(0, 256, 4099, dtype=np.uint8)
    data[100:200] = POISON
    out, _ = run_copy(gpu, data)
    assert out == data.tobytes()


def test_zero_bytes_dispatch_nothing(gpu):
    out, dispatches = run_copy(gpu, np.empty(0, np.uint8))
    assert out == b"" and dispatches == 0


@pytest.mark.parametrize(
    "nbytes,chunk", [(1000, 16), (1001, 48), (100_003, 4096), (65_536, 65_536), (65_537, 65_536)]
)
def test_chunk_boundaries(gpu, rng, nbytes, chunk):
    data = rng.integers(0, 256, nbytes, dtype=np.uint8)
    out, dispatches = run_copy(gpu, data, chunk_bytes=chunk)
    assert out == data.tobytes()
    assert dispatches == -(-nbytes // chunk)


def test_grid_is_folded_when_groups_exceed_the_dimension_limit(gpu, rng):
    """More workgroups than the per-dimension limit: forced limit of 3 groups
    per dimension on a copy that needs many more, so the grid folds into y."""
    per_group = shader_const("copy.wgsl", "WG") * shader_const("copy.wgsl", "UNROLL") * WORD
    nbytes = per_group * 10 + 7  # 11 groups -> a 3 x 4 grid with one spare group
    data = rng.integers(0, 256, nbytes, dtype=np.uint8)
    out, _ = run_copy(gpu, data, max_groups_per_dim=3)
    assert out == data.tobytes()


def test_grid_folding_arithmetic():
    assert grid(10, 65535) == (10, 1)
    assert grid(65535, 65535) == (65535, 1)
    x, y = grid(65536, 65535)
    assert y == 2 and x * y >= 65536 and x <= 65535
    x, y = grid(200_000, 65535)
    assert x <= 65535 and x * y >= 200_000


def test_binding_limit_bounds_the_chunk(gpu, rng):
    """A chunk size larger than the binding limit is clamped to it."""
    limit = gpu.limits["max-storage-buffer-binding-size"]
    data = rng.integers(0, 256, 3 * 4096 + 5, dtype=np.uint8)
    out, dispatches = run_copy(gpu, data, chunk_bytes=limit * 4)
    assert out == data.tobytes() and dispatches == 1


def test_tensor_above_128_mib(gpu):
    """Once with a tensor larger than max_storage_buffer_binding_size (128 MiB on
    both software adapters): it must stream through in several bindings."""
    limit = gpu.limits["max-storage-buffer-binding-size"]
    nbytes = max(limit, 128 << 20) + (3 << 20) + 13
    data = np.random.default_rng(7).integers(0, 256, nbytes, dtype=np.uint8)
    out = np.empty(nbytes, np.uint8)
    pos = 0

    def sink(chunk):
        nonlocal pos
        out[pos : pos + len(chunk)] = np.frombuffer(chunk, np.uint8)
        pos += len(chunk)

    dispatches = copy_through_kernel(gpu, MemoryBytes(data), sink, chunk_bytes=limit)
    assert pos == nbytes and dispatches >= 2
    assert np.array_equal(out, data)
