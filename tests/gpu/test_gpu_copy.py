"""The flat copy kernels, byte for byte, on every adapter and every path.

A *path* is a width's kernel (storage, storage64) and a buffer mode (staged
through upload/readback buffers, or mapped kernel buffers); every path the
adapter supports is tested, and each width's other runs and unroll (the copy
question's other candidates) on the boundaries where they differ. The output buffer is poisoned before every chunk,
so a byte the kernel does not write cannot match. Chunk, span and grid
boundaries are exercised on small data by forcing small chunks and a small
per-dimension group limit; several chunks run through the overlapped
(writer-thread) path. Buffers are padded to whole workgroup spans and the
kernels copy the padding too: the tests reuse buffers that held other data,
so a padding byte that reached the output would show.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import BACKENDS
from onnxop_cli.errors import NoAdapterError, UsageError
from onnxop_cli.gpu import copy_through_kernel, get_gpu
from onnxop_cli.gpu.buffers import can_map
from onnxop_cli.gpu.copy import KEEP_BYTES
from onnxop_cli.gpu.buffers import grid
from onnxop_cli.gpu.choose import kernel_for
from onnxop_cli.gpu.kernels import KERNELS, WIDTHS
from onnxop_cli.core.tensor import MemoryBytes

POISON = 0xA5


def backend_params(metafunc) -> bool:
    """Tests taking ``path`` run once per (adapter, path) the adapter supports:
    the combinations are read off the real adapters at collection, so nothing
    is generated only to be skipped. What an adapter lacks is checked by
    test_paths_the_adapter_lacks_are_refused instead. (Called by conftest's
    pytest_generate_tests; returns False for tests without ``path``.)"""
    if "path" not in metafunc.fixturenames:
        return False
    params, ids = [], []
    for backend in BACKENDS:
        try:
            gpu = get_gpu(backend)
        except NoAdapterError:
            # the backend fixture skips this, or fails it when CI is set
            params.append((backend, None))
            ids.append(f"{backend}-no-adapter")
            continue
        for kernel in WIDTHS:
            for mapped in (False, True):
                if KERNELS[kernel].available(gpu) and (can_map(gpu) or not mapped):
                    params.append((backend, {"kernel": kernel, "mapped": mapped}))
                    ids.append(f"{backend}-{kernel}-{'mapped' if mapped else 'staged'}")
    metafunc.parametrize(("backend", "path"), params, ids=ids, indirect=["backend"], scope="session")
    return True


def test_every_adapter_runs_the_portable_path(gpu):
    assert KERNELS["storage"].available(gpu)
    assert kernel_for(gpu).name in KERNELS


def test_paths_the_adapter_lacks_are_refused(gpu, rng):
    """A kernel or buffer mode the adapter cannot run is refused with the
    reason, never attempted (GL has no shader-int64 and cannot map storage
    buffers; lavapipe has both)."""
    data = rng.integers(0, 256, 4096, dtype=np.uint8)
    for name, kernel in KERNELS.items():
        if not kernel.available(gpu):
            with pytest.raises(UsageError, match=f"kernel '{name}' needs {kernel.features[0]}, .*; available: "
                                                 "storage$"):
                run_copy(gpu, data, kernel=name)
    with pytest.raises(UsageError, match="unknown kernel 'uniform64'; available on .*: storage"):
        run_copy(gpu, data, kernel="uniform64")
    if not can_map(gpu):
        with pytest.raises(ValueError, match="cannot map storage buffers"):
            run_copy(gpu, data, kernel="storage", mapped=True)


def run_copy(gpu, data: np.ndarray, **kw) -> tuple[bytes, int]:
    out = bytearray()
    kw.setdefault("poison", POISON)
    chunks = copy_through_kernel(gpu, MemoryBytes(data), out.extend, **kw)
    return bytes(out), chunks


SPAN = max(k.align for k in KERNELS.values())  # the widest kernel's workgroup span


def test_kernels_declare_their_spans_and_features():
    assert KERNELS["storage"].features == () and KERNELS["storage"].align == 256 * 4 * 16
    assert KERNELS["storage64"].features == ("shader-int64",) and KERNELS["storage64"].align == 256 * 8 * 32


@pytest.mark.parametrize("nbytes", [1, 2, 3, 4, 5, 15, 16, 17, 31, 33, 1023, 4096, 65537, 1_000_003])
def test_copy_is_exact_for_sizes_off_every_boundary(gpu, path, rng, nbytes):
    data = rng.integers(0, 256, nbytes, dtype=np.uint8)
    out, chunks = run_copy(gpu, data, **path)
    assert out == data.tobytes()
    assert chunks == 1


def test_every_run_and_unroll_is_exact(gpu, rng):
    """The copy question's candidates besides the widths' own (gpu/kernels.py), each the adapter runs: exact
    off its span's boundaries, over two chunks in flight, and on a grid folded into y with a spare group."""
    for name, kernel in KERNELS.items():
        if name in WIDTHS or not kernel.available(gpu):
            continue
        span = kernel.align
        for nbytes, kw in [(1, {}), (17, {}), (span - 3, {}), (span + 5, {}), (3 * span + 1, {"chunk_bytes": 2 * span}),
                           (10 * span + 7, {"max_groups_per_dim": 3})]:
            data = rng.integers(0, 256, nbytes, dtype=np.uint8)
            assert run_copy(gpu, data, kernel=name, **kw)[0] == data.tobytes(), (name, nbytes, kw)


def test_poison_is_detectable(gpu, path, rng):
    """The poison really is in the output buffer before the kernel runs:
    a chunk of all-poison input comes back as poison, any other byte as itself."""
    data = rng.integers(0, 256, 4099, dtype=np.uint8)
    data[100:200] = POISON
    out, _ = run_copy(gpu, data, **path)
    assert out == data.tobytes()


def test_zero_bytes_dispatch_nothing(gpu):
    out, chunks = run_copy(gpu, np.empty(0, np.uint8))
    assert out == b"" and chunks == 0


@pytest.mark.parametrize(
    "nbytes,chunk", [(1000, 16), (1001, 48), (100_003, 4096), (65_536, 65_536), (65_537, 65_536)]
)
def test_chunk_boundaries(gpu, path, rng, nbytes, chunk):
    data = rng.integers(0, 256, nbytes, dtype=np.uint8)
    out, chunks = run_copy(gpu, data, chunk_bytes=chunk, **path)
    assert out == data.tobytes()
    assert chunks == -(-nbytes // chunk)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_chunks_in_flight_arrive_in_order(gpu, path, rng, depth):
    """Many chunks, several spans each, through 1-3 slots in flight: every
    chunk reaches the sink once, in order."""
    chunk = 3 * SPAN + 4096
    data = rng.integers(0, 256, 7 * chunk + 1234, dtype=np.uint8)
    out, chunks = run_copy(gpu, data, chunk_bytes=chunk, depth=depth, **path)
    assert chunks == 8
    assert out == data.tobytes()


def test_fresh_buffers_without_poison(gpu, path, rng):
    """No poison (which writes the whole output buffer first) and new
    buffers: wgpu zero-fills a mapped range it believes was never written, so
    a kernel write it fails to track would come back as zeros here."""
    gpu.cache.clear()
    data = rng.integers(1, 256, 5 * SPAN + 77, dtype=np.uint8)
    out, _ = run_copy(gpu, data, poison=None, chunk_bytes=3 * SPAN, **path)
    assert out == data.tobytes()


def test_buffers_are_reused_across_calls(gpu, path, rng):
    """A second tensor of the same or smaller size reuses the first one's
    buffers (many files, one device) and is still exact."""
    gpu.cache.clear()
    first = rng.integers(0, 256, 70_001, dtype=np.uint8)
    second = rng.integers(0, 256, 50_003, dtype=np.uint8)
    assert run_copy(gpu, first, **path)[0] == first.tobytes()
    (stream,) = gpu.cache.values()
    slots = list(stream.slots)
    assert run_copy(gpu, second, **path)[0] == second.tobytes()
    assert stream.slots == slots and all(a is b for a, b in zip(stream.slots, slots))


def test_a_failing_sink_stops_the_stream_and_the_next_copy_works(gpu, path, rng):
    data = rng.integers(0, 256, 10 * 4096, dtype=np.uint8)
    seen = []

    def sink(view):
        seen.append(bytes(view))
        if len(seen) == 3:
            raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        copy_through_kernel(gpu, MemoryBytes(data), sink, chunk_bytes=4096, **path)
    assert b"".join(seen) == data[: 3 * 4096].tobytes()  # in order, then nothing more
    out, _ = run_copy(gpu, data, chunk_bytes=4096, **path)
    assert out == data.tobytes()


def test_grid_is_folded_when_groups_exceed_the_dimension_limit(gpu, path, rng):
    """More workgroups than the per-dimension limit: forced limit of 3 groups
    per dimension on a copy that needs many more, so the grid folds into y
    and the spare group of the last row must write nothing."""
    kernel = KERNELS[path["kernel"]]
    assert kernel.align == kernel.render.schedule.wg * kernel.render.schedule.unroll * kernel.word
    nbytes = kernel.align * 10 + 7  # 11 groups -> a 3 x 4 grid with one spare group
    data = rng.integers(0, 256, nbytes, dtype=np.uint8)
    out, _ = run_copy(gpu, data, max_groups_per_dim=3, **path)
    assert out == data.tobytes()


def test_stale_padding_never_reaches_the_output(gpu, path, rng):
    """The kernel copies whole spans, padding included. After a large tensor
    filled the buffers, a small one whose last chunk ends mid-span must come
    back exactly its own bytes: nothing of the old data past its end."""
    gpu.cache.clear()
    big = rng.integers(0, 256, 3 * SPAN, dtype=np.uint8)
    assert run_copy(gpu, big, chunk_bytes=2 * SPAN, **path)[0] == big.tobytes()
    for nbytes in (1, 17, SPAN - 3, SPAN + 5, 2 * SPAN + 1):
        small = rng.integers(0, 256, nbytes, dtype=np.uint8)
        out, _ = run_copy(gpu, small, chunk_bytes=2 * SPAN, **path)
        assert len(out) == nbytes and out == small.tobytes()


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
    out, chunks = run_copy(gpu, data, chunk_bytes=limit * 4, kernel="storage")
    assert out == data.tobytes() and chunks == 1


def test_a_copy_records_the_kernel_it_ran_with(gpu, rng):
    """The default kernel is the calibrated choice, and a copy records it
    (for --json); GL has no shader-int64, so it has storage alone."""
    data = rng.integers(0, 256, 4096, dtype=np.uint8)
    assert run_copy(gpu, data)[0] == data.tobytes()
    assert gpu.kernel_used is not None and gpu.kernel_used.kernel == kernel_for(gpu).name
    assert gpu.kernel_used.reason in ("measured", "cached")
    if "shader-int64" not in gpu.features:
        assert gpu.kernel_used.kernel == "storage"
    assert gpu.info.adapter_type == "CPU"
    if gpu.backend == "vulkan" and gpu.engine_name == "wgpu":  # mapping a storage buffer: a wgpu-native feature
        assert can_map(gpu)


@pytest.mark.per_engine  # the real-size twin of test_chunk_boundaries' forced chunks on every backend and path
def test_tensor_above_128_mib(gpu):
    """Once with a tensor larger than max_storage_buffer_binding_size (128 MiB on
    both software adapters), in binding-sized chunks, with the default kernel
    and path; the oversized buffers are not kept afterwards."""
    limit = gpu.limits["max-storage-buffer-binding-size"]
    nbytes = max(limit, 128 << 20) + (3 << 20) + 13
    data = np.random.default_rng(7).integers(0, 256, nbytes, dtype=np.uint8)
    out = np.empty(nbytes, np.uint8)
    pos = 0

    def sink(chunk):
        nonlocal pos
        out[pos : pos + len(chunk)] = np.frombuffer(chunk, np.uint8)
        pos += len(chunk)

    chunks = copy_through_kernel(gpu, MemoryBytes(data), sink, chunk_bytes=limit)
    assert pos == nbytes and chunks >= 2
    assert np.array_equal(out, data)
    for stream in (v for v in gpu.cache.values() if hasattr(v, "slots")):  # (the gather keeps a record there too)
        assert all(s is None or s.size <= KEEP_BYTES for s in stream.slots)
