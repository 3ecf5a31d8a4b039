"""The wgpu engine: wgpu-native (Naga) through wgpu-py, whose objects already
have the interface of base.py. This module only creates the instance, lists
adapters and requests devices."""

from __future__ import annotations

from typing import Any

NAME = "wgpu"


def init(backends: tuple[str, ...]) -> None:
    import os

    _lazy_pycparser()

    import wgpu  # loads wgpu-native; it must create its logger itself

    from ...core import signals
    from .cffi_types import speed_up_wgpu

    signals.callback_code(os.path.dirname(wgpu.__file__))  # wgpu-py's cffi callbacks

    speed_up_wgpu()  # most of start-up was cffi re-parsing C type strings
    if backends:
        from wgpu.backends.wgpu_native.extras import set_instance_extras

        from .base import BACKENDS  # our name -> (wgpu-native instance flag, ...)

        set_instance_extras(backends=[BACKENDS[b][0] for b in backends])


def _lazy_pycparser() -> None:
    """Put a stand-in for pycparser in sys.modules that loads the real one
    on first use. wgpu-py's cffi imports it with its C parser (compiling the
    lexer's regular expressions: about 0.04 CPU-seconds), but onnxop's cached
    header parse (cffi_types.py) leaves it unused in most processes.
    (importlib's LazyLoader does not do here: the import statement itself
    reads the module's ``__spec__``, which loads it.)"""
    import importlib
    import importlib.util
    import sys
    import types

    if "pycparser" in sys.modules:
        return
    spec = importlib.util.find_spec("pycparser")
    if spec is None:
        return

    class StandIn(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            if sys.modules.get("pycparser") is self:
                del sys.modules["pycparser"]
            real = importlib.import_module("pycparser")
            return getattr(real, name)

    stand_in = StandIn("pycparser")
    stand_in.__spec__ = spec
    stand_in.__path__ = list(spec.submodule_search_locations or [])
    stand_in.__file__ = spec.origin
    sys.modules["pycparser"] = stand_in


_adapters: list[Any] = []  # the instance's adapters, enumerated once per process


def adapters(backend: str | None = None) -> list[Any]:
    """Every adapter of the instance; the caller picks by backend.

    Enumerated once: every device of a process on one adapter comes from the
    same adapter object. On GL that is what keeps two devices' threads apart:
    wgpu-hal serialises GL work by a mutex per enumerated adapter, while every
    adapter of the instance shares one EGL context, so a device of a second
    enumeration, released in one thread while another device's poll thread
    polled, made the context current twice ("BadAccess" in egl.rs, a Rust
    abort; tests/process/test_gc_release.py)."""
    import wgpu

    if not _adapters:
        _adapters.extend(wgpu.gpu.enumerate_adapters_sync())
    return list(_adapters)


def every_adapter() -> list[Any]:
    """The adapters of every backend, from a second, throw-away instance: the
    process's own was made for one backend and cannot see the others."""
    import wgpu
    from wgpu.backends.wgpu_native._ffi import ffi, lib

    instance = lib.wgpuCreateInstance(ffi.new("WGPUInstanceDescriptor *"))
    count = lib.wgpuInstanceEnumerateAdapters(instance, ffi.NULL, ffi.NULL)
    ids = ffi.new("WGPUAdapter[]", count)
    lib.wgpuInstanceEnumerateAdapters(instance, ffi.NULL, ids)
    return [wgpu.gpu._create_adapter(i) for i in ids]


def request_device(adapter: Any, features: list[str], on_lost: Any) -> Any:
    # wgpu-native reports a lost device in its log, which device.py captures.
    limits = dict(adapter.limits)
    required = {k: limits[k] for k in ("max-storage-buffer-binding-size", "max-buffer-size") if k in limits}
    return adapter.request_device_sync(label="onnxop", required_features=features, required_limits=required)


def settled(promise: Any, timeout: float) -> bool:
    # wgpu-py waits for its poll thread without a limit; its event can be
    # waited on with one. Promises without it resolve in sync_wait.
    event = getattr(promise, "_thread_event", None)
    return event is None or event.wait(timeout)


def write_timestamp(encoder: Any, query_set: Any, index: int) -> None:
    from wgpu.backends.wgpu_native.extras import write_timestamp as write

    write(encoder, query_set, index)


def error_types() -> tuple[type[BaseException], ...]:
    import wgpu

    return (wgpu.GPUError, wgpu.GPUPipelineError)


def guard_releases(lock: Any) -> None:
    """Route wgpu-py's finalizers through the engine's lock (gpu/release.py):
    an object is released by a thread that can take ``lock``, else left for
    the thread holding it. Installed once, on wgpu-py's base classes (every
    GPU object, and the adapter)."""
    from wgpu import _classes

    for base in (_classes.GPUObjectBase, _classes.GPUAdapter):
        if getattr(base, "_onnxop_lock", None) is not None:
            continue
        finalize = base.__del__

        def __del__(self: Any, finalize: Any = finalize) -> None:
            if lock.acquire(blocking=False):
                try:
                    finalize(self)
                finally:
                    lock.release()
            else:  # another thread works with the engine: its holder releases this (the object lives till then)
                lock.later(finalize, self)

        base.__del__ = __del__
        base._onnxop_lock = lock
