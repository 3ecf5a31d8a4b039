"""Can Dawn's uploads and readbacks skip the staging copies? A probe of
Dawn's ``host-mapped-pointer`` feature on this machine's adapter.

Dawn maps a storage buffer only with ``buffer-map-extended-usages``, which
its Vulkan backend does not offer for lavapipe, so onnxop's Dawn engine
stages every transfer (a mapped buffer, then a buffer copy). With the
``allow_unsafe_apis`` instance toggle Dawn offers ``host-mapped-pointer``
(``wgpu::BufferHostMappedPointer``: a buffer over host memory the caller
owns, through Vulkan's VK_EXT_external_memory_host, which both Mesa 22.3's
and Mesa 25's lavapipe have). This script checks, on the chosen Vulkan
adapter, that such a buffer carries bytes exactly both ways (host memory ->
buffer copy -> readback, and a buffer copy into it -> host memory), then
times filling ``--size`` bytes through the staged path against writing the
host memory alone, ``--rounds`` times each, in turn.

    python benchmarks/dawn_host_mapped.py [--size 64M] [--rounds 5]

It uses the Dawn engine's own modules (gpu/engines/dawn), with the instance
made here with the toggle. The engine now uses the feature itself
(engines/dawn/host.py; figures against wgpu: benchmarks/dawn_transfers.py).
"""

from __future__ import annotations

import argparse
import ctypes
import mmap
import statistics
import time

import numpy as np

from onnxop_cli.gpu.engines.base import BufferUsage as U, MapMode
from onnxop_cli.gpu.engines.dawn import engine as E, runtime as R
from onnxop_cli.gpu.engines.dawn.objects import Buffer


def instance_with_unsafe_apis() -> None:
    R.w = R._OneThread(R._lib())
    on = (ctypes.c_char_p * 1)(b"allow_unsafe_apis")
    toggles = R.w.WGPUDawnTogglesDescriptor(
        enabledToggleCount=1, enabledToggles=ctypes.cast(on, ctypes.POINTER(ctypes.POINTER(ctypes.c_char)))
    )
    toggles.chain.sType = R.w.WGPUSType_DawnTogglesDescriptor
    features = R.w.WGPUInstanceFeatures(timedWaitAnyEnable=True, timedWaitAnyMaxCount=64)
    R._keep.extend((on, toggles))
    R._instance = R.w.wgpuCreateInstance(R.w.WGPUInstanceDescriptor(
        features=features, nextInChain=ctypes.cast(ctypes.pointer(toggles), ctypes.POINTER(R.w.struct_WGPUChainedStruct))
    ))
    E._wanted = ("vulkan",)


def host_buffer(dev, memory: mmap.mmap, size: int) -> Buffer:
    """A Dawn buffer over ``memory`` (page-aligned, owned by the caller)."""
    pointer = R.w.struct_WGPUBufferHostMappedPointer()
    pointer.chain.sType = R.w.WGPUSType_BufferHostMappedPointer
    pointer.pointer = ctypes.c_void_p(ctypes.addressof(ctypes.c_char.from_buffer(memory)))
    dispose = R.w.struct_WGPUBufferHostMappedPointer._fields_[2][1](lambda _userdata: None)
    pointer.disposeCallback = dispose
    R._keep.extend((pointer, dispose))
    desc = R.w.WGPUBufferDescriptor(
        label=R._view("host"), size=size, usage=U.STORAGE | U.COPY_SRC | U.COPY_DST, mappedAtCreation=False,
        nextInChain=ctypes.cast(ctypes.pointer(pointer), ctypes.POINTER(R.w.struct_WGPUChainedStruct)),
    )
    return Buffer(dev._scoped("buffer host", R.w.wgpuDeviceCreateBuffer, dev.handle, desc), size, dev)


def wait(promise) -> None:
    while not E.settled(promise, 1.0):
        pass


def copy(dev, a, b, n) -> None:
    encoder = dev.create_command_encoder()
    encoder.copy_buffer_to_buffer(a, 0, b, 0, n)
    dev.queue.submit([encoder.finish()])


def read(dev, buffer, readback, n) -> bytes:
    copy(dev, buffer, readback, n)
    wait(readback.map_async(MapMode.READ, 0, n))
    try:
        return bytes(readback.read_mapped(0, n, copy=False))
    finally:
        readback.unmap()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", default="64M")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    size = int(args.size[:-1]) << {"K": 10, "M": 20, "G": 30}[args.size[-1]] if args.size[-1] in "KMG" else int(args.size)

    instance_with_unsafe_apis()
    adapter = E.adapters("vulkan")[0]
    print(f"adapter: {adapter.info.get('description') or adapter.info}")
    # the engine offers Dawn's host-mapped-pointer as mappable-primary-buffers (engines/dawn/host.py)
    if "mappable-primary-buffers" not in adapter.features:
        print("host-mapped-pointer: not offered by this adapter")
        return
    dev = E.request_device(adapter, ["mappable-primary-buffers"], print)
    memory = mmap.mmap(-1, size)
    host = host_buffer(dev, memory, size)
    readback = dev.create_buffer(label="readback", size=size, usage=U.MAP_READ | U.COPY_DST)
    upload = dev.create_buffer(label="upload", size=size, usage=U.MAP_WRITE | U.COPY_SRC)
    src = dev.create_buffer(label="src", size=size, usage=U.STORAGE | U.COPY_DST | U.COPY_SRC)
    fence = dev.create_buffer(label="fence", size=16, usage=U.MAP_READ | U.COPY_DST)

    data = np.random.default_rng(0).integers(0, 2**32, size // 4, dtype=np.uint32).tobytes()
    memoryview(memory)[:] = data
    print("host memory -> buffer, exact:", read(dev, host, readback, size) == data)
    back = data[::-1]
    wait(upload.map_async(MapMode.WRITE, 0, size))
    mapped = upload._experimental_get_mapped_range(0, size)
    mapped[:] = back
    mapped.release()
    upload.unmap()
    copy(dev, upload, host, size)
    read(dev, host, fence, 16)  # the copy into host memory has run
    print("buffer -> host memory, exact:", bytes(memory) == back)

    def staged() -> None:  # what the Dawn engine does now for an upload
        wait(upload.map_async(MapMode.WRITE, 0, size))
        m = upload._experimental_get_mapped_range(0, size)
        m[:] = data
        m.release()
        upload.unmap()
        copy(dev, upload, src, size)
        read(dev, src, fence, 16)

    def host_mapped() -> None:  # the same bytes, in the kernel's buffer
        memoryview(memory)[:] = data
        read(dev, host, fence, 16)

    times: dict[str, list[float]] = {"staged": [], "host-mapped": []}
    for _ in range(args.rounds):
        for name, fill in (("staged", staged), ("host-mapped", host_mapped)):
            start = time.perf_counter()
            fill()
            times[name].append(time.perf_counter() - start)
    for name, ts in times.items():
        print(f"{name}: median {size / statistics.median(ts) / 1e9:.2f} GB/s over {args.rounds} rounds of {args.size}")
    ratios = [s / h for s, h in zip(times["staged"], times["host-mapped"])]
    print(f"host-mapped vs staged, per round: {', '.join(f'{r:.2f}x' for r in ratios)} (median {statistics.median(ratios):.2f}x)")


if __name__ == "__main__":
    main()
