"""Dawn's transfers: host-mapped storage buffers where the adapter offers
them (dawn-vulkan: lavapipe has VK_EXT_external_memory_host), staged
buffers elsewhere (dawn-gl), byte for byte either way.

The Dawn device counts its maps by kind (``device.maps``: "host-mapped" for
a buffer made over host memory, engines/dawn/host.py; "staged" for Dawn's
own mapped buffers), so each test asserts which path ran, not only that the
bytes came back. Outputs are poisoned before every chunk or band, sources
are random bit patterns (NaN payloads, -0.0), sizes are odd, zero, not
multiples of 4 and span several chunks or bands.
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from conftest import BACKENDS, random_array
from onnxop_cli.core.sources import FileBytes, MemoryBytes
from onnxop_cli.gpu import Access, copy_through_kernel, gather_through_kernel
from onnxop_cli.gpu.buffers import BufferUsage as U, MapMode, can_map
from onnxop_cli.gpu.copy import KEEP_BYTES

POISON = 0xC3
DAWN = [b for b in BACKENDS if b.startswith("dawn-")]
# the adapters that offer host-mapped-pointer on this project's machines: both Mesa lavapipes
HOST_MAPPED = {"dawn-vulkan": True, "dawn-gl": False}


def _host_mapped(backend: str) -> bool:
    return HOST_MAPPED.get(backend, False) and os.environ.get("ONNXOP_DAWN_HOST_MAPPED", "") != "0"


def backend_params(metafunc) -> bool:
    """Dawn's backends only: what is under test is the Dawn engine's
    transfers; a test of the host buffers themselves (``host_buffer`` in its
    name) runs where they exist, not generated to be skipped elsewhere."""
    if "backend" not in metafunc.fixturenames:
        return False
    backends = DAWN
    if "host_buffer" in metafunc.definition.name:
        backends = [b for b in DAWN if _host_mapped(b)]
    metafunc.parametrize("backend", backends, indirect=True, scope="session")
    return True


def _memory(data: bytes) -> MemoryBytes:
    # as an array: np.asarray(b"") is one byte of dtype S1
    return MemoryBytes(np.frombuffer(data, np.uint8))


def _maps(gpu) -> dict[str, int]:
    return dict(gpu.device.maps)


def _delta(before: dict[str, int], gpu) -> dict[str, int]:
    after = _maps(gpu)
    return {k: after.get(k, 0) - before.get(k, 0) for k in ("host-mapped", "staged")}


def test_each_backend_takes_its_path(gpu, backend):
    """dawn-vulkan maps the kernel's own buffers; dawn-gl stages. The toggle
    that lets host-mapped-pointer in lets nothing else in."""
    assert can_map(gpu) is _host_mapped(backend)
    assert gpu.device.host_mapped is _host_mapped(backend)
    offered = set(gpu.info.features)
    assert "host-mapped-pointer" not in offered
    assert not offered & {"multi-draw-indirect", "static-samplers", "r8unorm-storage",
                          "chromium-experimental-timestamp-query-inside-passes"}


SIZES = [0, 1, 3, 4, 5, 15, 17, 4095, 4096, 4097, 65535, 65537, 3 * 65536 + 1, 200_003]


@pytest.mark.parametrize("size", SIZES)
def test_flat_copy_exact_through_its_path(gpu, backend, rng, size):
    """Random bytes of every awkward size, in chunks of 8 KiB (several
    chunks, through the writer thread), exact; and the maps were the
    backend's kind, two per chunk (upload, readback), none of the other.
    Counted on a second copy: the first on a fresh device also measures the
    adapter's copy schedule (gpu/choose.py), whose maps are not the copy's."""
    data = random_array(rng, (size,), np.uint8).tobytes()
    copy_through_kernel(gpu, _memory(data), lambda chunk: None, chunk_bytes=8192, poison=POISON)
    out = bytearray()
    before = _maps(gpu)
    chunks = copy_through_kernel(gpu, _memory(data), out.extend, chunk_bytes=8192, poison=POISON)
    assert bytes(out) == data
    assert chunks == -(-size // 8192)
    if _host_mapped(backend):
        assert _delta(before, gpu) == {"host-mapped": 2 * chunks, "staged": 0}
    else:
        assert _delta(before, gpu) == {"host-mapped": 0, "staged": 2 * chunks}


@pytest.mark.parametrize("dtype", ["<f4", "<f8", "<f2"])
def test_floats_keep_their_bits(gpu, rng, dtype):
    """NaN payloads and -0.0 (random_array puts both in) survive host memory both ways."""
    a = random_array(rng, (3, 1001), np.dtype(dtype))
    out = bytearray()
    copy_through_kernel(gpu, _memory(a.tobytes()), out.extend, chunk_bytes=4096, poison=POISON)
    assert bytes(out) == a.tobytes()


def test_file_is_read_into_our_memory_never_written(gpu, rng, tmp_path):
    """A read-only input file: read into the engine's own memory, never mapped
    and written; the file's bytes and times stay as they were."""
    data = random_array(rng, (70_001,), np.uint8).tobytes()
    path = tmp_path / "in.bin"
    path.write_bytes(b"H" * 64 + data)
    os.chmod(path, 0o444)
    before = os.stat(path)
    source = FileBytes(path, 64, len(data))
    out = bytearray()
    try:
        copy_through_kernel(gpu, source, out.extend, chunk_bytes=16384, poison=POISON)
    finally:
        source.close()
    after = os.stat(path)
    assert bytes(out) == data
    assert path.read_bytes() == b"H" * 64 + data
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)


@pytest.mark.parametrize("shape, perm", [((12, 40, 36), (2, 1, 0)), ((37, 129), (1, 0))])
def test_gather_bands_exact_through_its_path(gpu, backend, rng, tmp_path, shape, perm):
    """A transpose of a file in several bands of a small binding (and
    windows of the source), through mapped host memory on dawn-vulkan."""
    a = random_array(rng, shape, np.dtype("<f4"))
    path = tmp_path / "a.bin"
    path.write_bytes(a.tobytes())
    source = FileBytes(path, 0, a.nbytes)
    strides = tuple(s // 4 for s in a.strides)
    view = Access(tuple(shape[p] for p in perm), tuple(strides[p] for p in perm), 0)
    out = bytearray()
    before = _maps(gpu)
    try:
        written = gather_through_kernel(gpu, source, out.extend, view=view, bits=32, poison=POISON, binding_bytes=4096)
    finally:
        source.close()
    assert written == a.nbytes and bytes(out) == np.ascontiguousarray(a.transpose(perm)).tobytes()
    record = gpu.cache["gather-last"]
    assert record["mapped"] is _host_mapped(backend)
    delta = _delta(before, gpu)
    bands = -(-a.nbytes // 4096)
    if _host_mapped(backend):
        assert delta["staged"] == 0 and delta["host-mapped"] > bands
    else:
        assert delta["host-mapped"] == 0 and delta["staged"] > bands


def test_threads_transfer_at_once_without_crossing(gpu, rng):
    """Four threads copy their own data (own sizes, several chunks each) at
    the same time, eight times over: each gets its own bytes back."""
    datas = [random_array(rng, (50_000 + 9_973 * i,), np.uint8).tobytes() for i in range(4)]
    failures: list[str] = []

    def work(i: int) -> None:
        try:
            for r in range(8):
                out = bytearray()
                copy_through_kernel(gpu, _memory(datas[i]), out.extend, chunk_bytes=8192 + 4 * i, poison=POISON)
                if bytes(out) != datas[i]:
                    failures.append(f"thread {i} round {r}: wrong bytes")
        except BaseException as e:  # noqa: BLE001 - reported below
            failures.append(f"thread {i}: {e!r}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_host_buffer_memory_is_freed_once_dawn_is_done(gpu, rng):
    """Slots larger than KEEP_BYTES are destroyed after every call; their
    host memory goes when Dawn disposes of them, so it stays bounded over
    many calls (it would grow by a slot set per call otherwise)."""
    from onnxop_cli.gpu.engines.dawn import host

    data = random_array(rng, (2 * KEEP_BYTES + 13,), np.uint8).tobytes()
    counts = []
    for _ in range(6):
        out = bytearray()
        copy_through_kernel(gpu, _memory(data), out.extend, chunk_bytes=KEEP_BYTES + 4096, poison=POISON)
        assert bytes(out) == data
        counts.append(len(host._live))
    assert max(counts[2:]) <= counts[1] + 1, counts


def test_a_host_buffer_maps_as_webgpu_says(gpu):
    """Mapped for writing: the bytes written reach a copy; mapped for
    reading: a copy's bytes are seen; wrong modes, ranges and double maps
    are refused."""
    from onnxop_cli.gpu.engines.dawn.runtime import DawnError

    device = gpu.device
    up = device.create_buffer(label="t-up", size=4100, usage=U.STORAGE | U.MAP_WRITE)
    down = device.create_buffer(label="t-down", size=4100, usage=U.STORAGE | U.MAP_READ | U.COPY_DST)
    payload = bytes(range(256)) * 16 + b"\x01\x02\x03\x04"
    gpu.wait(up.map_async(MapMode.WRITE, 0, 4100), "test")
    with pytest.raises(DawnError, match="already mapped"):
        up.map_async(MapMode.WRITE, 0, 4100)
    up._experimental_get_mapped_range(0, 4100)[:] = payload
    up.unmap()
    encoder = device.create_command_encoder()
    encoder.copy_buffer_to_buffer(up, 0, down, 0, 4100)
    gpu.queue.submit([encoder.finish()])
    gpu.wait(down.map_async(MapMode.READ, 0, 4100), "test")
    assert bytes(down.read_mapped(0, 4100)) == payload
    assert down.read_mapped(8, 4, copy=False).readonly
    with pytest.raises(DawnError, match="not mapped for writing"):
        down._experimental_get_mapped_range(0, 4)
    down.unmap()
    with pytest.raises(DawnError, match="not mapped"):
        down.read_mapped(0, 4)
    with pytest.raises(DawnError, match="not one of the buffer's usages"):
        down.map_async(MapMode.WRITE, 0, 4)
    with pytest.raises(DawnError, match="not valid"):
        down.map_async(MapMode.READ, 0, 4104)
    up.destroy()
    down.destroy()
