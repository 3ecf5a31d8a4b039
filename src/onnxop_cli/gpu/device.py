"""Adapter, device and queue: created lazily, once per process, engine and backend.

Only this package imports wgpu (or Dawn). The engine (engines/: ``wgpu`` by
default, or ``dawn``) provides the instance, adapters and devices; the rest
of the GPU code uses the device through the engine interface only.
The CLI asks for one backend, and only that backend's WebGPU instance is
initialised (``auto`` lets the engine choose). A process may open a second
wgpu backend only if the instance was created with it (the test suite does
this to run every GPU test on lavapipe and on GL, under both engines).

A backend may be written ``ENGINE-BACKEND`` (``dawn-gl``): short for
``--engine dawn --backend gl``, so one string names a test's adapter.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import GpuError, NoAdapterError, UsageError
from . import engines
from .engines.base import BACKENDS
from .release import EngineLock
from .faults import (ENV_TIMEOUT, _log_capture, _quiet_wgpu_logger, check_headroom, check_lost, gpu_errors,
                     gpu_timeout)

ENV_BACKEND = "ONNXOP_BACKEND"
POLL_INTERVAL = 0.05  # seconds between looks at the device while waiting

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
# Opening a device (instance, adapter, device) is done by one thread at a
# time, so two threads' first calls share one device instead of racing to
# create two (Dawn's instance, wgpu's instance flags).
_opening = threading.RLock()
# The GPU work of one call (a copy or a gather: its cached streaming buffers,
# pipelines, submits and maps) holds its engine's lock: see Gpu.lock.
_engine_locks: dict[str, EngineLock] = {}
_instance_backends: tuple[str, ...] | None = None  # wgpu's: None: not created; () : auto
_gpus: dict[str, Gpu] = {}


def resolve(backend: str | None, engine: str | None = None) -> tuple[str, str]:
    """(engine, backend) to use: the arguments, else $ONNXOP_ENGINE and
    $ONNXOP_BACKEND, else wgpu and auto. ``backend`` may carry its engine
    (``dawn-gl``)."""
    spec = given = (backend or os.environ.get(ENV_BACKEND) or "auto").strip().lower()
    prefix, _, rest = spec.partition("-")
    if rest and prefix in engines.ENGINES:
        if engine and engines.resolve_engine(engine) != prefix:
            raise UsageError(f"backend {spec!r} names the {prefix} engine, but the engine asked for is {engine} "
                             "(--engine, the API's engine=, or $ONNXOP_ENGINE)")
        engine, spec = prefix, rest
    if spec not in BACKEND_CHOICES:
        raise UsageError(f"unknown backend {spec!r}{engines.from_environment(given, ENV_BACKEND)}; choose one of "
                         f"{', '.join(BACKEND_CHOICES)}")
    return engines.resolve_engine(engine), spec


def gpu_key(engine: str, backend: str) -> str:
    """The one string naming an engine's backend: ``vulkan``, ``dawn-vulkan``."""
    return backend if engine == engines.DEFAULT else f"{engine}-{backend}"


def init_instance(backends: list[str] | tuple[str, ...]) -> None:
    """Create the WebGPU instances for these backends (``[]`` means wgpu's
    default; ``dawn-...`` names go to Dawn's instance).

    Must come before any adapter is requested; a second call with the same
    backends is a no-op.
    """
    global _instance_backends
    pairs = [resolve(b) for b in backends]
    with _opening:
        for engine in dict.fromkeys(e for e, _ in pairs if e != "wgpu"):  # Dawn's, the browser's
            _runtime_dir()
            engines.load(engine).init(tuple(b for e, b in pairs if e == engine and b != "auto"))
        if all(e != "wgpu" for e, _ in pairs) and pairs:
            return
        wanted = tuple(sorted(b for e, b in pairs if e == "wgpu" and b != "auto"))
        with _lock:
            if _instance_backends is not None:
                if wanted != _instance_backends:
                    raise GpuError(
                        f"the WebGPU instance was created for {_describe(_instance_backends)}; "
                        f"it cannot also serve {_describe(wanted)} in this process"
                    )
                return
            _runtime_dir()
            engines.load("wgpu").init(wanted)
            _quiet_wgpu_logger()
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


def get_gpu(backend: str | None = None, engine: str | None = None) -> Gpu:
    """The process's Gpu for ``backend`` on ``engine`` (see :func:`resolve`)."""
    engine, name = resolve(backend, engine)
    gpu = opened(name, engine)
    if gpu is None:
        with _opening:  # one thread opens it; the others wait and share it
            gpu = opened(name, engine) or _open_gpu(engine, name, gpu_key(engine, name))
    return gpu


def _open_gpu(engine: str, name: str, key: str) -> Gpu:
    check_headroom(engine)  # under `ulimit -v`: refused in one line before the engine can crash
    if engine != "wgpu" or _instance_backends is None:
        init_instance([] if key == "auto" else [key])
    elif name != "auto" and _instance_backends and name not in _instance_backends:
        raise GpuError(
            f"backend {name!r} was not initialised in this process "
            f"(instance has {_describe(_instance_backends)}: an earlier call opened wgpu for it, and wgpu takes "
            "the backends of its first call only; use one backend per process)"
        )
    gpu = Gpu.open(name, engine)
    with _lock:
        return _gpus.setdefault(key, gpu)


def engine_lock(backend: str | None = None, engine: str | None = None) -> EngineLock:
    """The lock of ``backend``'s engine (Gpu.lock), whether or not its device
    is open yet: for work that opens the device part-way (a graph's plan)."""
    engine, _ = resolve(backend, engine)
    with _lock:
        return _engine_locks.setdefault(engine, EngineLock())


def opened(backend: str | None = None, engine: str | None = None) -> Gpu | None:
    """The process's Gpu for ``backend`` on ``engine`` if one was opened, else
    None (never opens one)."""
    key = gpu_key(*resolve(backend, engine))
    with _lock:
        return _gpus.get(key)


def list_adapters(engine: str | None = None) -> list[AdapterInfo]:
    """Every adapter the engine's instance can see (initialising it if needed)."""
    engine = engines.resolve_engine(engine)
    if engine != "wgpu" or _instance_backends is None:  # Dawn's and the browser's init may come again
        init_instance([f"{engine}-auto"])
    with gpu_errors("enumerating adapters"):
        adapters = engines.load(engine).adapters()
    return [AdapterInfo.of(a, engine) for a in adapters]


def _all_adapters() -> list[AdapterInfo]:
    """The adapters of every backend, from a second, throw-away wgpu-native
    instance: the process's own was made for one backend and cannot see the
    others. Only for the "no adapter" message; any failure means "none"."""
    try:
        return [AdapterInfo.of(a) for a in engines.load("wgpu").every_adapter()]
    except Exception:  # noqa: BLE001 - a better message, never a new failure
        return []


# --------------------------------------------------------------------- device


@dataclass(frozen=True)
class AdapterInfo:
    name: str
    backend: str
    adapter_type: str
    driver: str
    limits: dict[str, int] = field(default_factory=dict, compare=False)
    features: tuple[str, ...] = field(default=(), compare=False)
    engine: str = engines.DEFAULT

    @classmethod
    def of(cls, adapter: Any, engine: str = engines.DEFAULT) -> AdapterInfo:
        info = adapter.info
        return cls(
            name=info.get("device") or info.get("vendor") or "unknown",
            backend=info.get("backend_type", "unknown"),
            adapter_type=info.get("adapter_type", "unknown"),
            driver=info.get("description", ""),
            limits={k: int(v) for k, v in dict(adapter.limits).items() if isinstance(v, int)},
            features=tuple(sorted(adapter.features)),
            engine=engine,
        )

    @property
    def our_backend(self) -> str:
        """The --backend value that names this adapter (``dawn-vulkan`` on Dawn)."""
        name = next((n for n, (_, types) in BACKENDS.items() if self.backend in types), self.backend.lower())
        return gpu_key(self.engine, name)

    def __str__(self) -> str:
        on = "" if self.engine == engines.DEFAULT else f", {self.engine}"
        return f"{self.name} ({self.backend}, {self.adapter_type}{on})"


class Gpu:
    """One adapter, its device and queue, and the pipelines compiled on it (gpu/program.py)."""

    def __init__(self, backend: str, adapter: Any, device: Any, engine: str = engines.DEFAULT) -> None:
        self.backend = backend
        self.engine_name = engine
        self.engine = engines.load(engine)
        self.adapter = adapter
        self.device = device
        self.queue = device.queue
        self.info = AdapterInfo.of(adapter, engine)
        self.limits = {k: int(v) for k, v in dict(device.limits).items() if isinstance(v, int)}
        self.features = frozenset(device.features)
        self._pipelines: dict[str, tuple[Any, Any]] = {}  # label -> (pipeline, bind group layout), program.py's
        self.cache: dict[Any, Any] = {}  # reusable resources (streaming buffers), see copy.py
        self.kernel_used: Any = None  # the Choice the last flat copy ran with
        self.schedule_choices: dict[str, Any] = {}  # choose's questions answered (measured, cached, only) for it
        self.schedules_used: dict[str, Any] = {}  # the answers its kernels ran with (forced included), by command
        self._log_mark = len(_log_capture.messages)  # wgpu's messages from before this device are not its
        # Held for the GPU work of one call (copy.py, gather.py take it): the
        # streaming buffers in ``cache``, the pipelines and the kernel choice
        # are shared by every call on this device, and neither wgpu-native nor
        # Dawn orders one thread's submits and maps against another's. One lock
        # per engine, not per device: a process's devices on one engine share
        # its instance (Dawn's events, wgpu-py's poll thread). Reentrant, so a
        # caller may hold it across several calls.
        # Its holder is also the only thread that releases the engine's objects (gpu/release.py).
        with _lock:
            self.lock = _engine_locks.setdefault(engine, EngineLock())
            guard = getattr(self.engine, "guard_releases", None)
            if guard is not None:
                guard(self.lock)

    @classmethod
    def open(cls, backend: str, engine: str = engines.DEFAULT) -> Gpu:
        impl = engines.load(engine)
        with gpu_errors("adapter request"):
            adapters = impl.adapters(backend)
        wanted = BACKENDS[backend][1] if backend != "auto" else None
        candidates = [a for a in adapters if wanted is None or a.info["backend_type"] in wanted]
        if not candidates:
            seen = ", ".join(str(AdapterInfo.of(a, engine)) for a in adapters)
            if not seen and engine == "wgpu" and _instance_backends:
                # the instance sees one backend: ask about the others
                seen = ", ".join(map(str, _all_adapters()))
                seen = f"none; other backends have: {seen}" if seen else ""
            which = "WebGPU adapter" if backend == "auto" else f"{backend} WebGPU adapter"
            which += "" if engine == engines.DEFAULT else f" on {engine}"
            raise NoAdapterError(f"no {which} found (adapters seen: {seen or 'none'}); {NO_ADAPTER_HINT}")
        adapter = min(candidates, key=lambda a: (_ADAPTER_RANK.get(a.info["adapter_type"], 4),
                                                 _BACKEND_RANK.get(a.info["backend_type"], 2)))
        wanted_features = OPTIONAL_FEATURES + (
            CPU_FEATURES if adapter.info["adapter_type"] == "CPU" else ()
        )
        features = [f for f in wanted_features if f in adapter.features]
        with gpu_errors("device request", str(AdapterInfo.of(adapter, engine))):
            device = impl.request_device(adapter, features, _log_capture.messages.append)
        return cls(backend, adapter, device, engine)

    @property
    def name(self) -> str:
        return str(self.info)

    def errors(self, what: str):
        """Context manager: WebGPU failures become a GpuError naming this adapter."""
        return gpu_errors(what, self.name)

    def wait(self, promise: Any, what: str) -> Any:
        """``promise.sync_wait()`` that cannot hang. wgpu-py waits for its poll
        thread without a limit, and a map on a device that is lost may never
        be answered: look at the device while waiting, and give up with a
        GpuError when it is reported lost or after ``gpu_timeout()`` seconds."""
        if not self.engine.settled(promise, 0):
            limit = gpu_timeout()
            deadline = time.monotonic() + limit
            while not self.engine.settled(promise, POLL_INTERVAL):
                check_lost(self._log_mark, what, self.name)
                if time.monotonic() >= deadline:
                    raise GpuError(
                        f"WebGPU {what} did not finish within {limit:g} s on {self.name}; the device "
                        f"is hung or lost (${ENV_TIMEOUT} sets the limit)"
                    )
        with self.errors(what):
            result = promise.sync_wait()
        # A map answered just as the device went: reading its range now would
        # make wgpu-native abort the process (it treats that error as fatal).
        check_lost(self._log_mark, what, self.name)
        return result
