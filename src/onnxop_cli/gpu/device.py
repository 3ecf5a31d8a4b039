"""Adapter, device and queue: created lazily, once per process and backend.

Only this package imports wgpu. The CLI asks for one backend, and only that
backend's WebGPU instance is initialised (``auto`` lets wgpu-native choose).
A process may open a second backend only if the instance was created with it
(the test suite does this to run every GPU test on lavapipe and on GL).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..errors import GpuError, NoAdapterError, UsageError

ENV_BACKEND = "ONNXOP_BACKEND"
ENV_TIMEOUT = "ONNXOP_GPU_TIMEOUT"
# Seconds one GPU step (a chunk's map) may take before the device is called
# hung. A chunk takes milliseconds; a Fortran re-layout of a whole binding a
# few seconds on a CPU adapter: this only ends waits that would never end.
DEFAULT_TIMEOUT = 120.0
POLL_INTERVAL = 0.05  # seconds between looks at the device while waiting

# our name -> (wgpu-native instance flag, GPUAdapterInfo.backend_type values)
BACKENDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "vulkan": ("Vulkan", ("Vulkan",)),
    "metal": ("Metal", ("Metal",)),
    "d3d12": ("DX12", ("D3D12",)),
    "gl": ("GL", ("OpenGL", "OpenGLES")),
}
BACKEND_CHOICES = ("auto", *BACKENDS)

# Features requested when the adapter has them: int64 for the storage64 copy
# kernel, timestamps for `onnxop bench` and the kernel calibration; mappable
# storage buffers only on CPU adapters, where mapping a buffer the kernel uses
# saves two copies per chunk. (Requesting none of them measured no faster
# device creation on lavapipe: 25-60 ms either way, within the noise.)
OPTIONAL_FEATURES = ("shader-int64", "timestamp-query", "timestamp-query-inside-encoders")
CPU_FEATURES = ("mappable-primary-buffers",)

# Preference when several adapters match: real GPUs first, software last.
_ADAPTER_RANK = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "CPU": 3}
_BACKEND_RANK = {"Vulkan": 0, "Metal": 0, "D3D12": 0, "OpenGL": 1, "OpenGLES": 1}

NO_ADAPTER_HINT = (
    "install a GPU driver with Vulkan, Metal or D3D12 support, or Mesa's software "
    "Vulkan driver (Debian/Ubuntu: apt-get install mesa-vulkan-drivers)"
)

_lock = threading.Lock()
_instance_backends: tuple[str, ...] | None = None  # None: not created; () : auto
_gpus: dict[str, Gpu] = {}


def resolve_backend(backend: str | None) -> str:
    """The backend to use: the argument, else $ONNXOP_BACKEND, else auto."""
    name = (backend or os.environ.get(ENV_BACKEND) or "auto").strip().lower()
    if name not in BACKEND_CHOICES:
        raise UsageError(f"unknown backend {name!r}; choose one of {', '.join(BACKEND_CHOICES)}")
    return name


def init_instance(backends: list[str] | tuple[str, ...]) -> None:
    """Create the WebGPU instance for these backends (``[]`` means wgpu's default).

    Must come before any adapter is requested; a second call with the same
    backends is a no-op.
    """
    global _instance_backends
    wanted = tuple(sorted(b for b in backends if b != "auto"))
    with _lock:
        if _instance_backends is not None:
            if wanted != _instance_backends:
                raise GpuError(
                    f"the WebGPU instance was created for {_describe(_instance_backends)}; "
                    f"it cannot also serve {_describe(wanted)} in this process"
                )
            return
        _runtime_dir()
        import wgpu  # noqa: F401  (loads wgpu-native; it must create its logger itself)

        from .cffi_types import speed_up_wgpu

        speed_up_wgpu()  # most of start-up was cffi re-parsing C type strings
        _quiet_wgpu_logger()

        if wanted:
            from wgpu.backends.wgpu_native.extras import set_instance_extras

            set_instance_extras(backends=[BACKENDS[b][0] for b in wanted])
        _instance_backends = wanted


def _runtime_dir() -> None:
    """Mesa prints "XDG_RUNTIME_DIR is invalid or not set" to stderr when there
    is no session (containers, CI, ssh). Give it a private folder instead."""
    if os.name != "posix" or os.environ.get("XDG_RUNTIME_DIR"):
        return
    import tempfile

    path = os.path.join(tempfile.gettempdir(), f"onnxop-runtime-{os.getuid()}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
        if st.st_uid == os.getuid() and st.st_mode & 0o077 == 0:
            os.environ["XDG_RUNTIME_DIR"] = path
    except OSError:
        pass


def _describe(backends: tuple[str, ...]) -> str:
    return "+".join(backends) if backends else "auto"


def get_gpu(backend: str | None = None) -> Gpu:
    """The process's Gpu for ``backend`` (see :func:`resolve_backend`)."""
    name = resolve_backend(backend)
    with _lock:
        gpu = _gpus.get(name)
    if gpu is not None:
        return gpu
    if _instance_backends is None:
        init_instance([] if name == "auto" else [name])
    elif name != "auto" and _instance_backends and name not in _instance_backends:
        raise GpuError(
            f"backend {name!r} was not initialised in this process "
            f"(instance has {_describe(_instance_backends)})"
        )
    gpu = Gpu.open(name)
    with _lock:
        return _gpus.setdefault(name, gpu)


def opened(backend: str | None = None) -> Gpu | None:
    """The process's Gpu for ``backend`` if one was opened, else None
    (never opens one)."""
    with _lock:
        return _gpus.get(resolve_backend(backend))


def list_adapters() -> list[AdapterInfo]:
    """Every adapter the current instance can see (initialising it if needed)."""
    if _instance_backends is None:
        init_instance([])
    import wgpu

    with gpu_errors("enumerating adapters"):
        adapters = wgpu.gpu.enumerate_adapters_sync()
    return [AdapterInfo.of(a) for a in adapters]


# --------------------------------------------------------------------- errors


class _WgpuLogCapture(logging.Handler):
    """Keeps wgpu-native's log lines (device lost, uncaptured errors) so they
    can be reported as one clear message instead of being printed."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


_log_capture = _WgpuLogCapture()


def _quiet_wgpu_logger() -> None:
    log = logging.getLogger("wgpu")
    if _log_capture not in log.handlers:
        log.addHandler(_log_capture)
        log.propagate = False
        if os.environ.get("ONNXOP_DEBUG"):
            log.addHandler(logging.StreamHandler())


def gpu_timeout() -> float:
    """The seconds a GPU step may take ($ONNXOP_GPU_TIMEOUT, else DEFAULT_TIMEOUT)."""
    value = os.environ.get(ENV_TIMEOUT, "").strip()
    if not value:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise UsageError(f"${ENV_TIMEOUT} must be a positive number of seconds, got {value!r}")
    return seconds


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    detail = [ln for ln in lines if not ln.lower().startswith(("validation error", "caused by"))]
    return (detail or lines or [type(text).__name__])[0][:300]


@contextmanager
def gpu_errors(what: str, adapter: str = "") -> Iterator[None]:
    """Turn any WebGPU failure inside the block into one GpuError line."""
    import wgpu

    where = f" on {adapter}" if adapter else ""
    before = len(_log_capture.messages)
    try:
        yield
    except (wgpu.GPUError, wgpu.GPUPipelineError, RuntimeError, ValueError, MemoryError) as e:
        if isinstance(e, (GpuError, UsageError)):
            raise
        kind = "out of GPU memory" if isinstance(e, (wgpu.GPUOutOfMemoryError, MemoryError)) else "failed"
        raise GpuError(f"WebGPU {what} {kind}{where}: {_first_line(str(e))}") from e
    new = _log_capture.messages[before:]
    lost = [m for m in new if "lost" in m.lower()]
    if lost:
        raise GpuError(f"WebGPU device lost while {what}{where}: {_first_line(lost[-1])}")


# --------------------------------------------------------------------- device


@dataclass(frozen=True)
class AdapterInfo:
    name: str
    backend: str
    adapter_type: str
    driver: str
    limits: dict[str, int] = field(default_factory=dict, compare=False)
    features: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def of(cls, adapter: Any) -> AdapterInfo:
        info = adapter.info
        return cls(
            name=info.get("device") or info.get("vendor") or "unknown",
            backend=info.get("backend_type", "unknown"),
            adapter_type=info.get("adapter_type", "unknown"),
            driver=info.get("description", ""),
            limits={k: int(v) for k, v in dict(adapter.limits).items() if isinstance(v, int)},
            features=tuple(sorted(adapter.features)),
        )

    @property
    def our_backend(self) -> str:
        for name, (_, types) in BACKENDS.items():
            if self.backend in types:
                return name
        return self.backend.lower()

    def __str__(self) -> str:
        return f"{self.name} ({self.backend}, {self.adapter_type})"


class Gpu:
    """One adapter, its device and queue, and the pipelines compiled on it."""

    def __init__(self, backend: str, adapter: Any, device: Any) -> None:
        self.backend = backend
        self.adapter = adapter
        self.device = device
        self.queue = device.queue
        self.info = AdapterInfo.of(adapter)
        self.limits = {k: int(v) for k, v in dict(device.limits).items() if isinstance(v, int)}
        self.features = frozenset(device.features)
        self._pipelines: dict[str, Any] = {}
        self.cache: dict[Any, Any] = {}  # reusable resources (streaming buffers), see copy.py
        self.kernel_choice: Any = None  # calibrate.Choice, once measured or read from the cache
        self.kernel_used: Any = None  # the Choice the last flat copy ran with
        self._log_mark = len(_log_capture.messages)  # wgpu's messages from before this device are not its

    @classmethod
    def open(cls, backend: str) -> Gpu:
        import wgpu

        with gpu_errors("adapter request"):
            adapters = wgpu.gpu.enumerate_adapters_sync()
        wanted = BACKENDS[backend][1] if backend != "auto" else None
        candidates = [a for a in adapters if wanted is None or a.info["backend_type"] in wanted]
        if not candidates:
            seen = ", ".join(str(AdapterInfo.of(a)) for a in adapters) or "none"
            which = "WebGPU adapter" if backend == "auto" else f"{backend} WebGPU adapter"
            raise NoAdapterError(f"no {which} found (adapters seen: {seen}); {NO_ADAPTER_HINT}")
        candidates.sort(
            key=lambda a: (
                _ADAPTER_RANK.get(a.info["adapter_type"], 4),
                _BACKEND_RANK.get(a.info["backend_type"], 2),
            )
        )
        adapter = candidates[0]
        limits = dict(adapter.limits)
        required = {
            k: limits[k]
            for k in ("max-storage-buffer-binding-size", "max-buffer-size")
            if k in limits
        }
        wanted_features = OPTIONAL_FEATURES + (
            CPU_FEATURES if adapter.info["adapter_type"] == "CPU" else ()
        )
        features = [f for f in wanted_features if f in adapter.features]
        with gpu_errors("device request", str(AdapterInfo.of(adapter))):
            device = adapter.request_device_sync(
                label="onnxop", required_features=features, required_limits=required
            )
        return cls(backend, adapter, device)

    @property
    def name(self) -> str:
        return str(self.info)

    def pipeline(self, shader: str, entry: str = "main") -> Any:
        """The compute pipeline for ``shaders/<shader>``, compiled once."""
        key = f"{shader}:{entry}"
        pipe = self._pipelines.get(key)
        if pipe is None:
            from .shaders import shader_source

            with gpu_errors(f"compiling {shader}", self.name):
                module = self.device.create_shader_module(label=shader, code=shader_source(shader))
                pipe = self.device.create_compute_pipeline(
                    label=shader, layout="auto", compute={"module": module, "entry_point": entry}
                )
            self._pipelines[key] = pipe
        return pipe

    def pipeline_with_layout(self, shader: str, entries: list[dict], entry: str = "main") -> tuple[Any, Any]:
        """(pipeline, bind group layout) for a shader that needs an explicit
        layout (dynamic offsets), compiled once."""
        key = f"{shader}:{entry}:explicit"
        found = self._pipelines.get(key)
        if found is None:
            from .shaders import shader_source

            with gpu_errors(f"compiling {shader}", self.name):
                module = self.device.create_shader_module(label=shader, code=shader_source(shader))
                layout = self.device.create_bind_group_layout(label=shader, entries=entries)
                pipe = self.device.create_compute_pipeline(
                    label=shader,
                    layout=self.device.create_pipeline_layout(label=shader, bind_group_layouts=[layout]),
                    compute={"module": module, "entry_point": entry},
                )
            found = self._pipelines[key] = (pipe, layout)
        return found

    def errors(self, what: str):
        """Context manager: WebGPU failures become a GpuError naming this adapter."""
        return gpu_errors(what, self.name)

    def lost_reason(self) -> str:
        """wgpu-native's message if it reported a lost device since this one
        was created, else ''."""
        lost = [m for m in _log_capture.messages[self._log_mark :] if "lost" in m.lower()]
        return _first_line(lost[-1]) if lost else ""

    def wait(self, promise: Any, what: str) -> Any:
        """``promise.sync_wait()`` that cannot hang. wgpu-py waits for its poll
        thread without a limit, and a map on a device that is lost may never
        be answered: look at the device while waiting, and give up with a
        GpuError when it is reported lost or after ``gpu_timeout()`` seconds."""
        event = getattr(promise, "_thread_event", None)  # wgpu-native promises; else wait as wgpu does
        if event is not None and not event.is_set():
            limit = gpu_timeout()
            deadline = time.monotonic() + limit
            while not event.wait(POLL_INTERVAL):
                lost = self.lost_reason()
                if lost:
                    raise GpuError(f"WebGPU device lost while {what} on {self.name}: {lost}")
                if time.monotonic() >= deadline:
                    raise GpuError(
                        f"WebGPU {what} did not finish within {limit:g} s on {self.name}; the device "
                        f"is hung or lost (${ENV_TIMEOUT} sets the limit)"
                    )
        with self.errors(what):
            result = promise.sync_wait()
        # A map answered just as the device went: reading its range now would
        # make wgpu-native abort the process (it treats that error as fatal).
        lost = self.lost_reason()
        if lost:
            raise GpuError(f"WebGPU device lost while {what} on {self.name}: {lost}")
        return result
