"""The engine interface: the part of WebGPU that onnxop's GPU code calls.

onnxop runs its WGSL kernels on one of two WebGPU implementations:

- ``wgpu``: wgpu-native (Naga compiles WGSL), through wgpu-py;
- ``dawn``: Dawn (Tint compiles WGSL), through PyPI's ``dawn-python``.

Streaming (copy.py), the kernels (kernels.py, gather.py), ``bench`` and the
device code are written once against the objects below; the spelling is
wgpu-py's (keyword arguments, dict descriptors), so wgpu-py's own objects are
the wgpu engine and dawn/ implements the same calls on Dawn's C API. This
file lists exactly what is called: anything not here is not part of the seam.

Flag values (buffer usage, map mode, shader stage) are WebGPU's, the same in
both implementations' headers.
"""

from __future__ import annotations

from typing import Any, Iterable, Protocol, Sequence


# our backend name -> (wgpu-native instance flag, GPUAdapterInfo.backend_type values)
BACKENDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "vulkan": ("Vulkan", ("Vulkan",)),
    "metal": ("Metal", ("Metal",)),
    "d3d12": ("DX12", ("D3D12",)),
    "gl": ("GL", ("OpenGL", "OpenGLES")),
}


class BufferUsage:
    MAP_READ = 0x1
    MAP_WRITE = 0x2
    COPY_SRC = 0x4
    COPY_DST = 0x8
    UNIFORM = 0x40
    STORAGE = 0x80
    QUERY_RESOLVE = 0x200


class MapMode:
    READ = 0x1
    WRITE = 0x2


class ShaderStage:
    COMPUTE = 0x4


class Promise(Protocol):
    """A pending map: resolves once the work submitted before it is done."""

    def sync_wait(self) -> Any: ...


class Buffer(Protocol):
    size: int

    def map_async(self, mode: int, offset: int = 0, size: int | None = None) -> Promise: ...
    def map_sync(self, mode: int, offset: int = 0, size: int | None = None) -> None: ...
    def read_mapped(self, offset: int = 0, size: int | None = None, *, copy: bool = True) -> memoryview: ...
    def _experimental_get_mapped_range(self, offset: int = 0, size: int | None = None) -> memoryview: ...
    def unmap(self) -> None: ...
    def destroy(self) -> None: ...


class ComputePass(Protocol):
    def set_pipeline(self, pipeline: Any) -> None: ...
    def set_bind_group(self, index: int, bind_group: Any, dynamic_offsets: Sequence[int] = ()) -> None: ...
    def dispatch_workgroups(self, x: int, y: int = 1, z: int = 1) -> None: ...
    def end(self) -> None: ...


class CommandEncoder(Protocol):
    def begin_compute_pass(self, *, timestamp_writes: dict | None = None) -> ComputePass: ...
    def copy_buffer_to_buffer(self, src: Buffer, src_offset: int, dst: Buffer, dst_offset: int, size: int) -> None: ...
    def clear_buffer(self, buffer: Buffer, offset: int = 0, size: int | None = None) -> None: ...
    def resolve_query_set(self, query_set: Any, first: int, count: int, dst: Buffer, dst_offset: int) -> None: ...
    def finish(self) -> Any: ...


class Queue(Protocol):
    def write_buffer(self, buffer: Buffer, offset: int, data: Any) -> None: ...
    def submit(self, command_buffers: Iterable[Any]) -> None: ...


class ComputePipeline(Protocol):
    def get_bind_group_layout(self, index: int) -> Any: ...


class Device(Protocol):
    queue: Queue
    limits: dict[str, int]  # wgpu-py's kebab-case names: "max-buffer-size", ...
    features: set[str]  # wgpu-py's names: "timestamp-query", "shader-int64", ...

    def create_buffer(self, *, label: str = "", size: int, usage: int) -> Buffer: ...
    def create_shader_module(self, *, label: str = "", code: str) -> Any: ...
    def create_bind_group_layout(self, *, label: str = "", entries: list[dict]) -> Any: ...
    def create_pipeline_layout(self, *, label: str = "", bind_group_layouts: list[Any]) -> Any: ...
    def create_compute_pipeline(self, *, label: str = "", layout: Any, compute: dict) -> ComputePipeline: ...
    def create_bind_group(self, *, label: str = "", layout: Any, entries: list[dict]) -> Any: ...
    def create_command_encoder(self, *, label: str = "") -> CommandEncoder: ...
    def create_query_set(self, *, label: str = "", type: str, count: int) -> Any: ...


class Adapter(Protocol):
    info: dict[str, str]  # device, vendor, description, backend_type, adapter_type
    limits: dict[str, int]
    features: set[str]


class Engine(Protocol):
    """One WebGPU implementation (a module: wgpu_native or dawn.engine)."""

    NAME: str

    def init(self, backends: tuple[str, ...]) -> None:
        """Create the instance for these of onnxop's backend names (() = all)."""

    def adapters(self, backend: str | None = None) -> list[Adapter]:
        """The adapters the instance sees: for ``backend`` (our name, or
        ``auto``) at least, for None every one."""

    def request_device(self, adapter: Adapter, features: list[str], on_lost: Any) -> Device:
        """A device with these features and the limits the kernels need;
        ``on_lost(message)`` is called if it is lost (from any thread)."""

    def settled(self, promise: Promise, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds; whether ``promise`` has resolved."""

    def write_timestamp(self, encoder: CommandEncoder, query_set: Any, index: int) -> None:
        """A timestamp between commands (feature timestamp-query-inside-encoders)."""

    def error_types(self) -> tuple[type[BaseException], ...]:
        """Exceptions the engine's calls raise for WebGPU errors."""
