"""Dawn's mappable storage buffers, made over host memory the engine owns.

wgpu-native maps the kernels' own storage buffers on CPU adapters
(``mappable-primary-buffers``), so copy.py and gather.py read a file
straight into the kernel's source and write the output straight from its
destination. Dawn maps a storage buffer only with
``buffer-map-extended-usages``, which its Vulkan backend does not offer on
lavapipe, so there every transfer was staged (a mapped buffer and a buffer
copy each way). What Dawn does offer there, behind its ``allow_unsafe_apis``
toggle, is ``host-mapped-pointer``: a buffer whose memory is host memory the
caller gives it (Vulkan's VK_EXT_external_memory_host, which Mesa 22.3's and
25's lavapipe have). This module offers ``mappable-primary-buffers`` on
Dawn with it: a storage buffer asked for with a map usage is made over an
aligned block of anonymous memory, and mapping it is waiting for the work
submitted so far (``wgpuQueueOnSubmittedWorkDone``), then handing out a view
of that block. Where the adapter lacks the feature (Dawn on GL) nothing
here is used and the streaming code stages, as before.

The host memory:

- is anonymous and private (``MAP_PRIVATE``): never a mapping of the user's
  input file (sources are read *into* it), not shared with a forked child,
  zero-filled when made, and one block per buffer, so no other buffer's or
  thread's bytes are ever in it;
- starts on a ``HOST_ALIGN`` boundary and spans a multiple of it (Vulkan
  imports whole aligned ranges: ``minImportedHostPointerAlignment``, 4 KiB
  on lavapipe and the common drivers; Dawn does not report it, so the
  engine uses 64 KiB, a multiple of every value seen);
- outlives every GPU use of the buffer: it is held in ``_live`` until Dawn
  calls the buffer's dispose callback (the buffer destroyed or released and
  no longer in use on the GPU), and every view handed out holds the block
  too, so neither Dawn nor a lingering view can see it freed.
"""

from __future__ import annotations

import ctypes
import itertools
import mmap
from typing import Any

from . import runtime as _d
from .runtime import DawnError, _view, _wait

FEATURE = "mappable-primary-buffers"  # the name the streaming code asks for (gpu/buffers.can_map)
DAWN_FEATURE = "host-mapped-pointer"
TOGGLE = b"allow_unsafe_apis"  # Dawn offers host-mapped-pointer only with it
HOST_ALIGN = 64 << 10
MAP_USAGES = 0x1 | 0x2  # MAP_READ | MAP_WRITE (base.BufferUsage)
STORAGE, COPY_SRC, COPY_DST = 0x80, 0x4, 0x8

# Features this Dawn build offers only under allow_unsafe_apis (seen on
# lavapipe, Mesa 22.3 and 25). The toggle is there for host-mapped-pointer
# alone: these are hidden, so nothing else comes in through it.
UNSAFE_ONLY = frozenset({
    "chromium-experimental-timestamp-query-inside-passes", "multi-draw-indirect", "r8unorm-storage", "static-samplers",
})

_live: dict[int, HostMemory] = {}  # key -> memory Dawn may still use; dropped by the dispose callback
_dropped: set[int] = set()  # keys of buffers destroyed or released whose memory Dawn has not disposed yet
_keys = itertools.count(1)


def collect(device: Any) -> None:
    """Let Dawn dispose of the buffers dropped so far whose GPU work is done.

    Dawn frees a buffer (and calls its dispose callback) in a device tick
    once the work submitted before its destruction is done; waiting on a
    future does not tick, so without this the memory of destroyed buffers
    (copy.py trims its slots after every call) would wait for the process
    to end. Called before making a host buffer and before every map."""
    if not _dropped:
        return
    for key in [k for k in list(_dropped) if k not in _live]:  # list(): atomic, a finalizer may add
        _dropped.discard(key)
    if _dropped:
        _d.w.wgpuDeviceTick(device.handle)


def _disposed(userdata: Any) -> None:
    # From Dawn, on whichever thread it frees the buffer: only drops our reference.
    _live.pop(int(userdata or 0), None)


_dispose_callback: Any = None  # made once, kept for the life of the process


def _callback() -> Any:
    global _dispose_callback
    if _dispose_callback is None:
        kind = dict((n, t) for n, t, *_ in _d.w.struct_WGPUBufferHostMappedPointer._fields_)["disposeCallback"]
        _dispose_callback = kind(_disposed)
        _d._keep.append(_dispose_callback)
    return _dispose_callback


class HostMemory:
    """``size`` bytes of zeroed anonymous private memory at a ``HOST_ALIGN``
    boundary, spanning ``span`` (``size`` rounded up to ``HOST_ALIGN``)."""

    def __init__(self, size: int) -> None:
        self.span = max(HOST_ALIGN, -(-size // HOST_ALIGN) * HOST_ALIGN)
        extra = HOST_ALIGN - mmap.PAGESIZE if HOST_ALIGN > mmap.PAGESIZE else 0
        self._map = mmap.mmap(-1, self.span + extra, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        self._anchor = ctypes.c_char.from_buffer(self._map)  # an export: the map cannot be closed under Dawn
        base = ctypes.addressof(self._anchor)
        pad = (-base) % HOST_ALIGN
        self.address = base + pad
        self.view = memoryview(self._map)[pad : pad + self.span]


def create(device: Any, label: str, size: int, usage: int) -> tuple[Any, HostMapping]:
    """A Dawn buffer of ``size`` bytes over host memory, and its mapping
    (objects.Buffer wraps both), mappable as ``usage``'s map bits say (the
    map usages themselves are not Dawn's)."""
    collect(device)
    memory = HostMemory(size)
    key = next(_keys)
    pointer = _d.w.struct_WGPUBufferHostMappedPointer()
    pointer.chain.sType = _d.w.WGPUSType_BufferHostMappedPointer
    pointer.pointer = ctypes.c_void_p(memory.address)
    pointer.disposeCallback = _callback()
    pointer.userdata = ctypes.c_void_p(key)
    dawn_usage = (usage & ~MAP_USAGES) | COPY_SRC | COPY_DST
    desc = _d.w.WGPUBufferDescriptor(
        label=_view(label), size=memory.span, usage=dawn_usage, mappedAtCreation=False,
        nextInChain=ctypes.cast(ctypes.pointer(pointer), ctypes.POINTER(_d.w.struct_WGPUChainedStruct)),
    )
    _live[key] = memory  # before Dawn sees the pointer: it may dispose at once
    try:
        handle = device._scoped(f"buffer {label!r} (host-mapped)", _d.w.wgpuDeviceCreateBuffer, device.handle, desc)
    except BaseException:
        _live.pop(key, None)  # an error buffer never touches the memory
        raise
    return handle, HostMapping(size, device, memory, usage & MAP_USAGES, key)


def wanted(usage: int) -> bool:
    """Whether a buffer of ``usage`` is one this module makes: a storage buffer with a map usage."""
    return bool(usage & STORAGE) and bool(usage & MAP_USAGES)


class WorkDone:
    """A map of a host buffer: resolves once the work submitted before it is done."""

    def __init__(self, queue: Any, mapping: HostMapping) -> None:
        self.status: int | None = None
        self.mapping = mapping

        def done(status: int, _u1: Any, _u2: Any) -> None:
            self.status = status

        self._callback = _d.w.WGPUQueueWorkDoneCallback2(done)
        info = _d.w.WGPUQueueWorkDoneCallbackInfo2(mode=_d.w.WGPUCallbackMode_WaitAnyOnly, callback=self._callback)
        self.future = _d.w.wgpuQueueOnSubmittedWorkDone2(queue.handle, info)

    def wait(self, timeout: float) -> bool:
        return self.status is not None or _wait(self.future, timeout)

    def sync_wait(self) -> None:
        while not self.wait(1.0):
            pass
        if self.status != _d.w.WGPUQueueWorkDoneStatus_Success:
            self.mapping.mode = 0
            raise DawnError(f"host buffer map failed: {_d.w.WGPUQueueWorkDoneStatus__enumvalues.get(self.status, self.status)}")


class HostMapping:
    """What objects.Buffer does instead of Dawn's maps for a buffer over
    :class:`HostMemory`: a map waits for the queue, a range is a view of the
    memory, WebGPU's rules on modes, ranges and double maps kept."""

    def __init__(self, size: int, device: Any, memory: HostMemory, map_usage: int, key: int) -> None:
        self.size, self.device = size, device
        self.memory, self.map_usage, self.key = memory, map_usage, key
        self.mode = 0  # the map mode while mapped

    def map_async(self, mode: int, offset: int, size: int | None) -> WorkDone:
        size = self.size - offset if size is None else size
        if offset % 8 or size % 4 or offset < 0 or size < 0 or offset + size > self.size:
            raise DawnError(f"buffer map range {offset}+{size} is not valid for a buffer of {self.size} bytes")
        if not mode & self.map_usage:
            raise DawnError(f"buffer map mode {mode} is not one of the buffer's usages ({self.map_usage})")
        if self.mode:
            raise DawnError("buffer is already mapped")
        collect(self.device)
        self.mode = mode
        self.device.maps["host-mapped"] += 1
        return WorkDone(self.device.queue, self)

    def range(self, offset: int, size: int | None, *, write: bool) -> memoryview:
        if not self.mode:
            raise DawnError("buffer is not mapped")
        if write and not self.mode & 0x2:
            raise DawnError("buffer is not mapped for writing")
        size = self.size - offset if size is None else size
        if offset < 0 or size < 0 or offset + size > self.size:
            raise DawnError(f"buffer range {offset}+{size} is not mapped")
        view = self.memory.view[offset : offset + size]
        return view if write else view.toreadonly()

    def unmap(self) -> None:
        self.mode = 0

    def dropped(self) -> None:
        """The buffer was destroyed or released: Dawn disposes of it once done (collect)."""
        _dropped.add(self.key)
