"""Dawn's WebGPU objects, with the calls of base.py spelled as wgpu-py spells
them (see engine.py: instance, adapters, device request; runtime.py: what both use)."""

from __future__ import annotations

import ctypes
from collections import Counter
from typing import Any

from . import host, runtime as _d
from .runtime import DawnError, DawnOutOfMemory, _call, _kebab, _text, _view, _wait


class _Handle:
    """A Dawn object reference, released when the Python object goes: by a
    thread that can take the engine's lock, else by the lock's holder as it
    lets go (runtime.release: Dawn's objects are not released under another
    thread's work)."""

    _release = ""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def __del__(self) -> None:
        runtime = _d  # None once the interpreter has torn the module down: Dawn is gone too
        if runtime is not None and runtime._alive and self.handle:
            runtime.release(type(self)._drop, self)

    def _drop(self) -> None:
        if _d._alive and self.handle:
            getattr(_d.w, self._release)(self.handle)
            self.handle = None


class Device(_Handle):
    _release = "wgpuDeviceRelease"

    def _init(self, handle: Any, adapter: Any) -> None:
        self.handle = handle
        self.queue = Queue(_d.w.wgpuDeviceGetQueue(handle), self)
        supported = _d.w.WGPUSupportedLimits()
        _d.w.wgpuDeviceGetLimits(handle, supported)
        self.limits = {_kebab(k): int(getattr(supported.limits, k)) for k, *_ in supported.limits._fields_ if not k.startswith("PADDING")}
        feats = _d.w.WGPUSupportedFeatures()
        _d.w.wgpuDeviceGetFeatures(handle, feats)
        names = {v: k for k, v in adapter._features.items()}
        self.features = {names[feats.features[i]] for i in range(feats.featureCount) if feats.features[i] in names}
        _d.w.wgpuSupportedFeaturesFreeMembers(feats)
        # storage buffers with a map usage are made over host memory (host.py)
        self.host_mapped = host.FEATURE in self.features
        self.maps: Counter[str] = Counter()  # maps by kind, "host-mapped" or "staged" (tests look)

    # -- errors

    def _scoped(self, what: str, make: Any, *args: Any) -> Any:
        """``make(*args)`` inside validation and out-of-memory error scopes."""
        _d.w.wgpuDevicePushErrorScope(self.handle, _d.w.WGPUErrorFilter_OutOfMemory)
        _d.w.wgpuDevicePushErrorScope(self.handle, _d.w.WGPUErrorFilter_Validation)
        result = make(*args)
        invalid = _call("wgpuDevicePopErrorScope2", self.handle)
        memory = _call("wgpuDevicePopErrorScope2", self.handle)
        if memory[1] not in (_d.w.WGPUErrorType_NoError, 0):
            raise DawnOutOfMemory(f"{what}: {memory[2] or 'out of memory'}")
        if invalid[1] not in (_d.w.WGPUErrorType_NoError, 0):
            raise DawnError(f"{what}: {invalid[2]}")
        return result

    def check(self) -> None:
        """Raise the first error Dawn reported outside an error scope."""
        if self.errors:
            kind, message = self.errors[0]
            self.errors.clear()
            raise (DawnOutOfMemory if kind == _d.w.WGPUErrorType_OutOfMemory else DawnError)(message)

    # -- creation

    def create_buffer(self, *, label: str = "", size: int, usage: int) -> Any:
        if self.host_mapped and host.wanted(usage):
            handle, mapping = host.create(self, label, size, usage)
            return Buffer(handle, size, self, mapping)
        desc = _d.w.WGPUBufferDescriptor(label=_view(label), size=size, usage=usage, mappedAtCreation=False)
        return Buffer(self._scoped(f"buffer {label!r}", _d.w.wgpuDeviceCreateBuffer, self.handle, desc), size, self)

    def create_shader_module(self, *, label: str = "", code: str) -> Any:
        source = _d.w.WGPUShaderSourceWGSL(code=_view(code))
        source.chain.sType = _d.w.WGPUSType_ShaderSourceWGSL
        desc = _d.w.WGPUShaderModuleDescriptor(
            label=_view(label), nextInChain=ctypes.cast(ctypes.pointer(source), ctypes.POINTER(_d.w.struct_WGPUChainedStruct))
        )
        return _Object(self._scoped(label, _d.w.wgpuDeviceCreateShaderModule, self.handle, desc), "wgpuShaderModuleRelease")

    def create_bind_group_layout(self, *, label: str = "", entries: list[dict]) -> Any:
        items = (_d.w.WGPUBindGroupLayoutEntry * len(entries))()
        for item, e in zip(items, entries):
            buf = e["buffer"]
            item.binding = e["binding"]
            item.visibility = e["visibility"]
            item.buffer.type = _BINDING_TYPES[buf.get("type", "uniform")]
            item.buffer.hasDynamicOffset = bool(buf.get("has_dynamic_offset", False))
            item.buffer.minBindingSize = buf.get("min_binding_size", 0)
        desc = _d.w.WGPUBindGroupLayoutDescriptor(label=_view(label), entryCount=len(entries), entries=items)
        return _Object(self._scoped(label, _d.w.wgpuDeviceCreateBindGroupLayout, self.handle, desc), "wgpuBindGroupLayoutRelease")

    def create_pipeline_layout(self, *, label: str = "", bind_group_layouts: list[Any]) -> Any:
        layouts = (_d.w.WGPUBindGroupLayout * len(bind_group_layouts))(*(b.handle for b in bind_group_layouts))
        desc = _d.w.WGPUPipelineLayoutDescriptor(
            label=_view(label), bindGroupLayoutCount=len(bind_group_layouts), bindGroupLayouts=layouts
        )
        return _Object(self._scoped(label, _d.w.wgpuDeviceCreatePipelineLayout, self.handle, desc), "wgpuPipelineLayoutRelease")

    def create_compute_pipeline(self, *, label: str = "", layout: Any, compute: dict) -> Any:
        state = _d.w.WGPUComputeState(module=compute["module"].handle, entryPoint=_view(compute.get("entry_point", "main")))
        desc = _d.w.WGPUComputePipelineDescriptor(
            label=_view(label), layout=None if layout == "auto" else layout.handle, compute=state
        )
        return ComputePipeline(self._scoped(label, _d.w.wgpuDeviceCreateComputePipeline, self.handle, desc))

    def create_bind_group(self, *, label: str = "", layout: Any, entries: list[dict]) -> Any:
        items = (_d.w.WGPUBindGroupEntry * len(entries))()
        for item, e in zip(items, entries):
            res = e["resource"]
            item.binding = e["binding"]
            item.buffer = res["buffer"].handle
            item.offset = res.get("offset", 0)
            item.size = res.get("size", res["buffer"].size - item.offset)
        desc = _d.w.WGPUBindGroupDescriptor(label=_view(label), layout=layout.handle, entryCount=len(entries), entries=items)
        return _Object(self._scoped(label or "bind group", _d.w.wgpuDeviceCreateBindGroup, self.handle, desc), "wgpuBindGroupRelease")

    def create_command_encoder(self, *, label: str = "") -> CommandEncoder:
        return CommandEncoder(_d.w.wgpuDeviceCreateCommandEncoder(self.handle, _d.w.WGPUCommandEncoderDescriptor()), self)

    def create_query_set(self, *, label: str = "", type: str, count: int) -> Any:
        kind = {"timestamp": _d.w.WGPUQueryType_Timestamp, "occlusion": _d.w.WGPUQueryType_Occlusion}[type]
        desc = _d.w.WGPUQuerySetDescriptor(label=_view(label), type=kind, count=count)
        return _Object(self._scoped(label, _d.w.wgpuDeviceCreateQuerySet, self.handle, desc), "wgpuQuerySetRelease")


_BINDING_TYPES = {"uniform": 1, "storage": 2, "read-only-storage": 3}  # WGPUBufferBindingType


class _Object(_Handle):
    def __init__(self, handle: Any, release: str) -> None:
        super().__init__(handle)
        self._release = release


class ComputePipeline(_Handle):
    _release = "wgpuComputePipelineRelease"

    def get_bind_group_layout(self, index: int) -> Any:
        return _Object(_d.w.wgpuComputePipelineGetBindGroupLayout(self.handle, index), "wgpuBindGroupLayoutRelease")


class Queue:
    def __init__(self, handle: Any, device: Device) -> None:
        self.handle, self.device = handle, device

    def write_buffer(self, buffer: Buffer, offset: int, data: Any) -> None:
        view = memoryview(data).cast("B")
        if view.readonly:
            block = (ctypes.c_ubyte * view.nbytes).from_buffer_copy(view)
        else:
            block = (ctypes.c_ubyte * view.nbytes).from_buffer(view)
        _d.w.wgpuQueueWriteBuffer(self.handle, buffer.handle, offset, block, view.nbytes)

    def submit(self, command_buffers: list[Any]) -> None:
        self.device.check()
        handles = (_d.w.WGPUCommandBuffer * len(command_buffers))(*(c.handle for c in command_buffers))
        _d.w.wgpuQueueSubmit(self.handle, len(command_buffers), handles)
        self.device.check()


class CommandEncoder(_Handle):
    _release = "wgpuCommandEncoderRelease"

    def __init__(self, handle: Any, device: Device) -> None:
        super().__init__(handle)
        self.device = device

    def begin_compute_pass(self, *, timestamp_writes: dict | None = None) -> ComputePass:
        desc = _d.w.WGPUComputePassDescriptor()
        if timestamp_writes:
            writes = _d.w.WGPUComputePassTimestampWrites(
                querySet=timestamp_writes["query_set"].handle,
                beginningOfPassWriteIndex=timestamp_writes["beginning_of_pass_write_index"],
                endOfPassWriteIndex=timestamp_writes["end_of_pass_write_index"],
            )
            desc.timestampWrites = ctypes.pointer(writes)
        return ComputePass(_d.w.wgpuCommandEncoderBeginComputePass(self.handle, desc))

    def copy_buffer_to_buffer(self, src: Buffer, src_offset: int, dst: Buffer, dst_offset: int, size: int) -> None:
        _d.w.wgpuCommandEncoderCopyBufferToBuffer(self.handle, src.handle, src_offset, dst.handle, dst_offset, size)

    def clear_buffer(self, buffer: Buffer, offset: int = 0, size: int | None = None) -> None:
        _d.w.wgpuCommandEncoderClearBuffer(self.handle, buffer.handle, offset, buffer.size - offset if size is None else size)

    def resolve_query_set(self, query_set: Any, first: int, count: int, dst: Buffer, dst_offset: int) -> None:
        _d.w.wgpuCommandEncoderResolveQuerySet(self.handle, query_set.handle, first, count, dst.handle, dst_offset)

    def finish(self) -> Any:
        commands = _Object(_d.w.wgpuCommandEncoderFinish(self.handle, _d.w.WGPUCommandBufferDescriptor()), "wgpuCommandBufferRelease")
        self.device.check()
        return commands


class ComputePass(_Handle):
    _release = "wgpuComputePassEncoderRelease"

    def set_pipeline(self, pipeline: ComputePipeline) -> None:
        _d.w.wgpuComputePassEncoderSetPipeline(self.handle, pipeline.handle)

    def set_bind_group(self, index: int, bind_group: Any, dynamic_offsets: Any = ()) -> None:
        offsets = list(dynamic_offsets)
        array = (ctypes.c_uint32 * len(offsets))(*offsets) if offsets else None
        _d.w.wgpuComputePassEncoderSetBindGroup(self.handle, index, bind_group.handle, len(offsets), array)

    def dispatch_workgroups(self, x: int, y: int = 1, z: int = 1) -> None:
        _d.w.wgpuComputePassEncoderDispatchWorkgroups(self.handle, x, y, z)

    def end(self) -> None:
        _d.w.wgpuComputePassEncoderEnd(self.handle)


# --------------------------------------------------------------------- buffers


class MapPromise:
    """A pending map; ``wait`` may time out, ``sync_wait`` raises if the map failed."""

    def __init__(self, buffer: Buffer, mode: int, offset: int, size: int) -> None:
        self.status: int | None = None
        self.message = ""

        def done(status: int, message: Any, _u1: Any, _u2: Any) -> None:
            self.status, self.message = status, _text(message)

        self._callback = _d.w.WGPUBufferMapCallback2(done)
        info = _d.w.WGPUBufferMapCallbackInfo2(mode=_d.w.WGPUCallbackMode_WaitAnyOnly, callback=self._callback)
        self.future = _d.w.wgpuBufferMapAsync2(buffer.handle, mode, offset, size, info)

    def wait(self, timeout: float) -> bool:
        return self.status is not None or _wait(self.future, timeout)

    def sync_wait(self) -> None:
        while not self.wait(1.0):
            pass
        if self.status != _d.w.WGPUMapAsyncStatus_Success:
            raise DawnError(f"buffer map failed: {self.message or _d.w.WGPUMapAsyncStatus__enumvalues.get(self.status)}")


class Buffer(_Handle):
    """A Dawn buffer; one made over host memory (``host``: a host.HostMapping)
    is mapped by waiting for the queue instead of by Dawn."""

    _release = "wgpuBufferRelease"

    def __init__(self, handle: Any, size: int, device: Device, host: Any = None) -> None:
        super().__init__(handle)
        self.size, self.device, self.host = size, device, host

    def map_async(self, mode: int, offset: int = 0, size: int | None = None) -> Any:
        if self.host is not None:
            return self.host.map_async(mode, offset, size)
        self.device.maps["staged"] += 1
        return MapPromise(self, mode, offset, self.size - offset if size is None else size)

    def map_sync(self, mode: int, offset: int = 0, size: int | None = None) -> None:
        self.map_async(mode, offset, size).sync_wait()

    def _range(self, get: Any, offset: int, size: int | None) -> memoryview:
        size = self.size - offset if size is None else size
        address = get(self.handle, offset, size)
        if not address:
            raise DawnError(f"buffer range {offset}+{size} is not mapped")
        return memoryview((ctypes.c_ubyte * size).from_address(address)).cast("B")

    def _experimental_get_mapped_range(self, offset: int = 0, size: int | None = None) -> memoryview:
        if self.host is not None:
            return self.host.range(offset, size, write=True)
        return self._range(_d.w.wgpuBufferGetMappedRange, offset, size)

    def read_mapped(self, offset: int = 0, size: int | None = None, *, copy: bool = True) -> memoryview:
        if self.host is not None:
            view = self.host.range(offset, size, write=False)
        else:
            view = self._range(_d.w.wgpuBufferGetConstMappedRange, offset, size)
        return memoryview(bytes(view)) if copy else view

    def unmap(self) -> None:
        if self.host is not None:
            self.host.unmap()
            return
        _d.w.wgpuBufferUnmap(self.handle)

    def destroy(self) -> None:
        _d.w.wgpuBufferDestroy(self.handle)
        if self.host is not None:
            self.host.dropped()

    def _drop(self) -> None:
        releasing = self.handle and self.host is not None
        super()._drop()
        if releasing:
            self.host.dropped()
