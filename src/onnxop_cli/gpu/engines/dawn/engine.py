"""The dawn engine: Dawn (Tint compiles WGSL) through PyPI's ``dawn-python``
(module ``pydawn``: ctypes bindings of Dawn's ``webgpu.h``, the binding
tinygrad's WebGPU backend uses).

It implements base.py's calls on the C API, spelled as wgpu-py spells them,
so the streaming and kernel code runs unchanged. What differs from wgpu:

- Dawn has no adapter enumeration: one adapter is requested per backend.
- GL goes through EGL without a window (``EGL_PLATFORM=surfaceless``) and
  only at WebGPU's ``compatibility`` feature level, whose default limits are
  smaller (128 invocations per workgroup): the device asks for the
  adapter's limits, so every kernel gets what it needs where the adapter has it.
- Once a GL adapter is in use, every Dawn call runs on one thread of its own
  (:class:`_OneThread`): Dawn's GL backend leaves its EGL context current on
  the thread that last used it, and a context is current on one thread at a
  time, so a map waited for by copy.py's writer thread made the main
  thread's next map come back empty. Futures are then polled
  (``wgpuInstanceWaitAny`` with no timeout), so a wait does not hold that
  thread; otherwise they are waited on with a timeout, so a wait can give up
  (device.py's hang guard). Vulkan devices are created with Dawn's implicit
  synchronisation, and are called from any thread.
- Tint's robustness transform stays on (turning it off measured no
  difference on lavapipe, within this shared machine's noise).
- Errors: creation calls run inside an error scope and raise DawnError with
  Dawn's message; errors Dawn reports later (encoding, submit) come through
  the uncaptured-error callback and are raised by the next finish or submit.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import re
import sys
import threading
from typing import Any

NAME = "dawn"
INSTALL_HINT = "pip install 'onnxop[dawn]'"


class DawnError(RuntimeError):
    """A WebGPU error reported by Dawn (validation, compilation)."""


class DawnOutOfMemory(DawnError, MemoryError):
    pass


def _lib():
    """pydawn's ctypes module (loads Dawn's shared library)."""
    from pydawn import webgpu  # noqa: PLC0415 - ImportError: engines.load names the extra

    return webgpu


class _OneThread:
    """pydawn.webgpu, with every ``wgpu*`` function run on one thread."""

    def __init__(self, lib: Any) -> None:
        import queue

        self.lib = lib
        self.pinned = False  # set when a GL adapter is requested
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="onnxop-dawn", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            fn, args, box, done = self._jobs.get()
            try:
                box.append(fn(*args))
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
                box.append(e)
                box.append(None)
            done.set()

    def run(self, fn: Any, *args: Any) -> Any:
        if not self.pinned or threading.current_thread() is self._thread:
            return fn(*args)
        box: list[Any] = []
        done = threading.Event()
        self._jobs.put((fn, args, box, done))
        done.wait()
        if len(box) == 2:
            raise box[0]
        return box[0]

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.lib, name)
        if name.startswith("wgpu") and callable(value):
            fn = value

            def value(*args: Any) -> Any:
                return self.run(fn, *args)

        setattr(self, name, value)  # looked up once
        return value


w: Any = None  # pydawn.webgpu behind _OneThread, once init() ran
_instance: Any = None
_alive = True  # False at exit: releasing handles then could call into a torn-down Dawn
_keep: list[Any] = []  # ctypes callbacks Dawn may call for the life of the process


@atexit.register
def _at_exit() -> None:
    global _alive
    _alive = False


# our backend name -> Dawn backend types tried, in order
BACKEND_TYPES = {"vulkan": ("Vulkan",), "metal": ("Metal",), "d3d12": ("D3D12",), "gl": ("OpenGLES", "OpenGL")}
_PLATFORM_BACKENDS = {"darwin": ("metal",), "win32": ("d3d12", "vulkan")}
_wanted: tuple[str, ...] = ()


def init(backends: tuple[str, ...]) -> None:
    global w, _instance, _wanted
    if _instance is not None:
        _wanted = tuple(dict.fromkeys(_wanted + backends))
        return
    w = _OneThread(_lib())
    _wanted = backends
    features = w.WGPUInstanceFeatures(timedWaitAnyEnable=True, timedWaitAnyMaxCount=64)
    _instance = w.wgpuCreateInstance(w.WGPUInstanceDescriptor(features=features))
    if not _instance:
        raise DawnError("Dawn could not create a WebGPU instance")


def _text(view: Any) -> str:
    return ctypes.string_at(view.data, view.length).decode("utf-8", "replace") if view.data else ""


def _view(text: str) -> Any:
    data = text.encode()
    return w.WGPUStringView(data=ctypes.create_string_buffer(data), length=len(data))


# WebGPU's names where splitting the C name at capitals gets them wrong
_FEATURE_NAMES = {
    "Depth32FloatStencil8": "depth32float-stencil8",
    "RG11B10UfloatRenderable": "rg11b10ufloat-renderable",
    "BGRA8UnormStorage": "bgra8unorm-storage",
    "Float32Filterable": "float32-filterable",
    "Float32Blendable": "float32-blendable",
}


def _kebab(name: str) -> str:
    """Dawn's ``maxBufferSize`` / ``TimestampQuery`` as wgpu-py names them."""
    return _FEATURE_NAMES.get(name) or re.sub(r"(?<=[a-z])(?=[A-Z0-9])", "-", name).lower()


def _wait(future: Any, timeout: float) -> bool:
    """Wait for one future up to ``timeout`` seconds; whether it completed.
    Polls, sleeping between looks, so Dawn's thread stays free for others."""
    import time

    info = w.WGPUFutureWaitInfo(future=future)
    if not w.pinned:
        status = w.wgpuInstanceWaitAny(_instance, 1, info, max(0, int(timeout * 1e9)))
        if status not in (w.WGPUWaitStatus_Success, w.WGPUWaitStatus_TimedOut):
            raise DawnError(f"waiting on Dawn failed: {w.WGPUWaitStatus__enumvalues.get(status, status)}")
        return status == w.WGPUWaitStatus_Success
    deadline = time.monotonic() + timeout
    pause = 0.0001
    while True:
        status = w.wgpuInstanceWaitAny(_instance, 1, info, 0)
        if status == w.WGPUWaitStatus_Success:
            return True
        if status != w.WGPUWaitStatus_TimedOut:
            raise DawnError(f"waiting on Dawn failed: {w.WGPUWaitStatus__enumvalues.get(status, status)}")
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.002)


def _call(name: str, *args: Any) -> list[Any]:
    """Run a Dawn call that answers through a callback; returns the callback's
    arguments (the two userdata pointers dropped)."""
    got: list[Any] = []

    def callback(*a: Any) -> None:
        got.extend(_text(x) if isinstance(x, w.WGPUStringView) else x for x in a[:-2])

    info_type = getattr(w.lib, name).argtypes[-1]
    cb_type = next(t for n, t, *_ in info_type._fields_ if n == "callback")
    cb = cb_type(callback)
    future = getattr(w, name)(*args, info_type(mode=w.WGPUCallbackMode_WaitAnyOnly, callback=cb))
    while not _wait(future, 1.0):
        pass
    return got


# --------------------------------------------------------------------- adapters

_SOFTWARE = re.compile(r"llvmpipe|softpipe|swiftshader|lavapipe", re.I)


class Adapter:
    """An adapter: ``info``, ``limits`` and ``features`` as wgpu-py gives them."""

    def __init__(self, handle: Any, compat: bool) -> None:
        self.handle = handle
        self.compat = compat
        info = w.WGPUAdapterInfo()
        w.wgpuAdapterGetInfo(handle, info)
        self.info = {
            "vendor": _text(info.vendor),
            "device": _text(info.device),
            "description": _text(info.description),
            "backend_type": w.WGPUBackendType__enumvalues.get(info.backendType, "?").split("_")[-1],
            "adapter_type": w.WGPUAdapterType__enumvalues.get(info.adapterType, "?").split("_")[-1],
        }
        w.wgpuAdapterInfoFreeMembers(info)
        if self.info["adapter_type"] == "Unknown" and _SOFTWARE.search(self.info["device"]):
            # Dawn cannot tell over GL; wgpu-native infers it from the name
            # the same way, and the kernel chooser wants to know.
            self.info["adapter_type"] = "CPU"
        supported = w.WGPUSupportedLimits()
        w.wgpuAdapterGetLimits(handle, supported)
        self._limits = supported.limits
        self.limits = {_kebab(k): int(getattr(supported.limits, k)) for k, *_ in supported.limits._fields_ if not k.startswith("PADDING")}
        feats = w.WGPUSupportedFeatures()
        w.wgpuAdapterGetFeatures(handle, feats)
        self._features = {
            _kebab(w.WGPUFeatureName__enumvalues[f].removeprefix("WGPUFeatureName_")): f
            for f in (feats.features[i] for i in range(feats.featureCount))
            if f in w.WGPUFeatureName__enumvalues
        }
        w.wgpuSupportedFeaturesFreeMembers(feats)
        self.features = set(self._features)


def _request_adapter(backend_type: str, compat: bool) -> Adapter | None:
    level = w.WGPUFeatureLevel_Compatibility if compat else w.WGPUFeatureLevel_Core
    options = w.WGPURequestAdapterOptions(
        featureLevel=level, backendType=getattr(w, f"WGPUBackendType_{backend_type}"), compatibilityMode=compat
    )
    status, handle, _ = _call("wgpuInstanceRequestAdapter2", _instance, options)
    if status != w.WGPURequestAdapterStatus_Success or not handle:
        return None
    return Adapter(handle, compat)


def adapters(backend: str | None = None) -> list[Adapter]:
    """The adapters of ``backend``; for ``auto``, of the first platform
    backend that has one (GL, which pins every call to one thread, only when
    nothing else is there); for None, of every backend asked for at init."""
    platform = _PLATFORM_BACKENDS.get(sys.platform, ("vulkan", "gl"))
    first = backend == "auto"
    names = (_wanted or platform) if backend is None else platform if first else (backend,)
    found = []
    for name in names:
        gl = name == "gl"
        if gl:
            # EGL with no display server; Mesa reads this when EGL starts.
            os.environ.setdefault("EGL_PLATFORM", "surfaceless")
            w.pinned = True
        for backend_type in BACKEND_TYPES[name]:
            adapter = _request_adapter(backend_type, compat=gl)
            if adapter is not None:
                found.append(adapter)
                break
        if first and found:
            break
    return found


# --------------------------------------------------------------------- device


def request_device(adapter: Adapter, features: list[str], on_lost: Any) -> Device:
    wanted = [adapter._features[f] for f in features if f in adapter._features]
    if "implicit-device-synchronization" in adapter._features:
        wanted.append(adapter._features["implicit-device-synchronization"])
    device = Device.__new__(Device)
    device.errors = []

    def lost(_dev: Any, reason: int, message: Any, _u1: Any, _u2: Any) -> None:
        if reason not in (w.WGPUDeviceLostReason_Destroyed, w.WGPUDeviceLostReason_InstanceDropped):
            on_lost(f"Dawn device lost: {_text(message)}")

    def uncaptured(_dev: Any, kind: int, message: Any, _u1: Any, _u2: Any) -> None:
        device.errors.append((kind, _text(message)))

    lost_cb = w.WGPUDeviceLostCallback2(lost)
    error_cb = w.WGPUUncapturedErrorCallback(uncaptured)
    _keep.extend((lost_cb, error_cb))
    # All the adapter's limits: in compatibility mode the defaults are below
    # what the kernels ask for (workgroups of 256 invocations).
    required = w.WGPURequiredLimits(limits=adapter._limits)
    array = (w.WGPUFeatureName * max(1, len(wanted)))(*wanted)
    # Dawn rounds timestamps to 100 us by default (a browser's defence against
    # timing attacks); `onnxop bench` times sub-millisecond kernels.
    off = (ctypes.c_char_p * 1)(b"timestamp_quantization")
    toggles = w.WGPUDawnTogglesDescriptor(
        disabledToggleCount=1, disabledToggles=ctypes.cast(off, ctypes.POINTER(ctypes.POINTER(ctypes.c_char)))
    )
    toggles.chain.sType = w.WGPUSType_DawnTogglesDescriptor
    desc = w.WGPUDeviceDescriptor(
        nextInChain=ctypes.cast(ctypes.pointer(toggles), ctypes.POINTER(w.struct_WGPUChainedStruct)),
        label=_view("onnxop"),
        requiredFeatureCount=len(wanted),
        requiredFeatures=array,
        requiredLimits=ctypes.pointer(required),
        deviceLostCallbackInfo2=w.WGPUDeviceLostCallbackInfo2(mode=w.WGPUCallbackMode_AllowSpontaneous, callback=lost_cb),
        uncapturedErrorCallbackInfo2=w.WGPUUncapturedErrorCallbackInfo2(callback=error_cb),
    )
    status, handle, message = _call("wgpuAdapterRequestDevice2", adapter.handle, desc)
    if status != w.WGPURequestDeviceStatus_Success or not handle:
        raise DawnError(f"device request failed: {message}")
    device._init(handle, adapter)
    return device


def settled(promise: Any, timeout: float) -> bool:
    return promise.wait(timeout)


def write_timestamp(encoder: Any, query_set: Any, index: int) -> None:
    w.wgpuCommandEncoderWriteTimestamp(encoder.handle, query_set.handle, index)


def error_types() -> tuple[type[BaseException], ...]:
    return (DawnError,)


# The objects use the helpers above; Buffer is replaced by tests/test_hostile.py.
from .objects import Buffer, Device  # noqa: E402, F401
