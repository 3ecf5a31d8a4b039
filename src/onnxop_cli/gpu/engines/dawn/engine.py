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

import ctypes
import os
import re
import sys
from typing import Any

from . import host, runtime as _r
from .objects import Buffer, Device  # noqa: F401 - Buffer: tests/cli/test_hostile_gpu.py replaces its map_async
from .runtime import DawnError, _call, _kebab, _lib, _OneThread, _text, _view  # noqa: F401 - _lib: engines.load

NAME = "dawn"
INSTALL_HINT = "pip install 'onnxop[dawn]'"


# our backend name -> Dawn backend types tried, in order
BACKEND_TYPES = {"vulkan": ("Vulkan",), "metal": ("Metal",), "d3d12": ("D3D12",), "gl": ("OpenGLES", "OpenGL")}
_PLATFORM_BACKENDS = {"darwin": ("metal",), "win32": ("d3d12", "vulkan")}
_wanted: tuple[str, ...] = ()


def init(backends: tuple[str, ...]) -> None:
    global _wanted
    if _r._instance is not None:
        _wanted = tuple(dict.fromkeys(_wanted + backends))
        return
    _r.w = _OneThread(_lib())
    _wanted = backends
    features = _r.w.WGPUInstanceFeatures(timedWaitAnyEnable=True, timedWaitAnyMaxCount=64)
    _r._instance = _r.w.wgpuCreateInstance(_r.w.WGPUInstanceDescriptor(features=features))
    if not _r._instance:
        raise DawnError("Dawn could not create a WebGPU instance")



# --------------------------------------------------------------------- adapters

_SOFTWARE = re.compile(r"llvmpipe|softpipe|swiftshader|lavapipe", re.I)


class Adapter:
    """An adapter: ``info``, ``limits`` and ``features`` as wgpu-py gives them."""

    def __init__(self, handle: Any, compat: bool) -> None:
        self.handle = handle
        self.compat = compat
        info = _r.w.WGPUAdapterInfo()
        _r.w.wgpuAdapterGetInfo(handle, info)
        self.info = {
            "vendor": _text(info.vendor),
            "device": _text(info.device),
            "description": _text(info.description),
            "backend_type": _r.w.WGPUBackendType__enumvalues.get(info.backendType, "?").split("_")[-1],
            "adapter_type": _r.w.WGPUAdapterType__enumvalues.get(info.adapterType, "?").split("_")[-1],
        }
        _r.w.wgpuAdapterInfoFreeMembers(info)
        if self.info["adapter_type"] == "Unknown" and _SOFTWARE.search(self.info["device"]):
            # Dawn cannot tell over GL; wgpu-native infers it from the name
            # the same way, and the kernel chooser wants to know.
            self.info["adapter_type"] = "CPU"
        supported = _r.w.WGPUSupportedLimits()
        _r.w.wgpuAdapterGetLimits(handle, supported)
        self._limits = supported.limits
        self.limits = {_kebab(k): int(getattr(supported.limits, k)) for k, *_ in supported.limits._fields_ if not k.startswith("PADDING")}
        feats = _r.w.WGPUSupportedFeatures()
        _r.w.wgpuAdapterGetFeatures(handle, feats)
        self._features = {
            _kebab(_r.w.WGPUFeatureName__enumvalues[f].removeprefix("WGPUFeatureName_")): f
            for f in (feats.features[i] for i in range(feats.featureCount))
            if f in _r.w.WGPUFeatureName__enumvalues
        }
        _r.w.wgpuSupportedFeaturesFreeMembers(feats)
        for name in host.UNSAFE_ONLY:
            self._features.pop(name, None)
        if host.DAWN_FEATURE in self._features:
            # mapped storage buffers, made over host memory (host.py)
            self._features[host.FEATURE] = self._features.pop(host.DAWN_FEATURE)
        self.features = set(self._features)


ENV_HOST_MAPPED = "ONNXOP_DAWN_HOST_MAPPED"  # "0": stage every transfer, as on GL (benchmarks, tests)


def host_mapped_allowed() -> bool:
    """Whether adapters are asked for host-mapped buffers (host.py); ``$ONNXOP_DAWN_HOST_MAPPED=0`` says no."""
    return os.environ.get(ENV_HOST_MAPPED, "").strip() != "0"


def _request_adapter(backend_type: str, compat: bool) -> Adapter | None:
    level = _r.w.WGPUFeatureLevel_Compatibility if compat else _r.w.WGPUFeatureLevel_Core
    options = _r.w.WGPURequestAdapterOptions(
        featureLevel=level, backendType=getattr(_r.w, f"WGPUBackendType_{backend_type}"), compatibilityMode=compat
    )
    if not compat and host_mapped_allowed():
        # Dawn offers host-mapped-pointer (host.py) only with this adapter
        # toggle; the other features it lets in are hidden (host.UNSAFE_ONLY).
        on = (ctypes.c_char_p * 1)(host.TOGGLE)
        toggles = _r.w.WGPUDawnTogglesDescriptor(
            enabledToggleCount=1, enabledToggles=ctypes.cast(on, ctypes.POINTER(ctypes.POINTER(ctypes.c_char)))
        )
        toggles.chain.sType = _r.w.WGPUSType_DawnTogglesDescriptor
        options.nextInChain = ctypes.cast(ctypes.pointer(toggles), ctypes.POINTER(_r.w.struct_WGPUChainedStruct))
    status, handle, _ = _call("wgpuInstanceRequestAdapter2", _r._instance, options)
    if status != _r.w.WGPURequestAdapterStatus_Success or not handle:
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
            _r.w.pinned = True
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
        if reason not in (_r.w.WGPUDeviceLostReason_Destroyed, _r.w.WGPUDeviceLostReason_InstanceDropped):
            on_lost(f"Dawn device lost: {_text(message)}")

    def uncaptured(_dev: Any, kind: int, message: Any, _u1: Any, _u2: Any) -> None:
        device.errors.append((kind, _text(message)))

    lost_cb = _r.w.WGPUDeviceLostCallback2(lost)
    error_cb = _r.w.WGPUUncapturedErrorCallback(uncaptured)
    _r._keep.extend((lost_cb, error_cb))
    # All the adapter's limits: in compatibility mode the defaults are below
    # what the kernels ask for (workgroups of 256 invocations).
    required = _r.w.WGPURequiredLimits(limits=adapter._limits)
    array = (_r.w.WGPUFeatureName * max(1, len(wanted)))(*wanted)
    # Dawn rounds timestamps to 100 us by default (a browser's defence against
    # timing attacks); `onnxop bench` times sub-millisecond kernels.
    off = (ctypes.c_char_p * 1)(b"timestamp_quantization")
    toggles = _r.w.WGPUDawnTogglesDescriptor(
        disabledToggleCount=1, disabledToggles=ctypes.cast(off, ctypes.POINTER(ctypes.POINTER(ctypes.c_char)))
    )
    toggles.chain.sType = _r.w.WGPUSType_DawnTogglesDescriptor
    desc = _r.w.WGPUDeviceDescriptor(
        nextInChain=ctypes.cast(ctypes.pointer(toggles), ctypes.POINTER(_r.w.struct_WGPUChainedStruct)),
        label=_view("onnxop"),
        requiredFeatureCount=len(wanted),
        requiredFeatures=array,
        requiredLimits=ctypes.pointer(required),
        deviceLostCallbackInfo2=_r.w.WGPUDeviceLostCallbackInfo2(mode=_r.w.WGPUCallbackMode_AllowSpontaneous, callback=lost_cb),
        uncapturedErrorCallbackInfo2=_r.w.WGPUUncapturedErrorCallbackInfo2(callback=error_cb),
    )
    status, handle, message = _call("wgpuAdapterRequestDevice2", adapter.handle, desc)
    if status != _r.w.WGPURequestDeviceStatus_Success or not handle:
        raise DawnError(f"device request failed: {message}")
    device._init(handle, adapter)
    return device


def guard_releases(lock: Any) -> None:
    """Route every Dawn object's release through the engine's lock (runtime.release, gpu/release.py)."""
    _r._releases = lock


def settled(promise: Any, timeout: float) -> bool:
    return promise.wait(timeout)


def write_timestamp(encoder: Any, query_set: Any, index: int) -> None:
    _r.w.wgpuCommandEncoderWriteTimestamp(encoder.handle, query_set.handle, index)


def error_types() -> tuple[type[BaseException], ...]:
    return (DawnError,)
