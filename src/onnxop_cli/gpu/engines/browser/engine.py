"""The browser engine: onnxop's own kernels on headless Chromium's WebGPU
(Dawn and Tint with the browser's validation; the adapter is SwiftShader, the
browser's CPU Vulkan), driven by Playwright (driver.py) on a page that holds
the WebGPU objects (page.js). A third implementation beside wgpu and Dawn,
behind base.py's calls (objects.py).

What differs from the dawn engine:

- One adapter, the browser's: its backend (Vulkan on SwiftShader) and type
  come from Chromium's WebGPU developer features.
- Features and limits are the browser's: no shader-int64 (so the 64-bit copy,
  storage64, is never chosen), no timestamps inside encoders, no mappable storage buffers.
- Every call crosses two processes (Python -> Playwright's driver -> the
  page): calls are batched, and one that takes longer than
  ``$ONNXOP_BROWSER_TIMEOUT`` (120 s) ends the engine with one error.
"""

from __future__ import annotations

import atexit
from typing import Any

from ....errors import GpuError
from .driver import INSTALL_HINT, BrowserError, Driver, missing  # noqa: F401 - engines.load
from .objects import Buffer, Device  # noqa: F401 - part of the engine's surface, as dawn's

NAME = "browser"
_driver: Driver | None = None
_adapter: Adapter | None = None
_device: Device | None = None
_failed = ""  # why Chromium did not start in this process, once it did not

_BACKEND_TYPES = {"vulkan": "Vulkan", "metal": "Metal", "d3d12": "D3D12", "opengl": "OpenGL", "opengles": "OpenGLES"}
_ADAPTER_TYPES = {"discrete GPU": "DiscreteGPU", "integrated GPU": "IntegratedGPU", "CPU": "CPU"}


class Adapter:
    """The page's adapter: ``info``, ``limits`` and ``features`` as wgpu-py gives them."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.info = {
            "vendor": answer["vendor"],
            "device": answer["description"] or answer["architecture"] or answer["device"],
            "description": answer["driver"],
            "backend_type": _BACKEND_TYPES.get(answer["backend"], answer["backend"] or "Unknown"),
            "adapter_type": _ADAPTER_TYPES.get(answer["type"], "Unknown"),
        }
        self.limits = {k: int(v) for k, v in answer["limits"].items()}
        self.features = set(answer["features"])


def init(backends: tuple[str, ...]) -> None:
    """Start Chromium (once) and ask its page for the adapter."""
    global _driver, _adapter, _failed
    if _driver is not None:
        return
    if _failed:  # a Chromium that did not start is not started again for each case of a conformance run
        raise GpuError(_failed)
    try:
        driver = Driver()
    except BrowserError as e:
        _failed = str(e)
        raise GpuError(_failed) from None
    atexit.register(driver.close)
    _driver = driver
    answer = _driver.run([["adapter"]], "requesting the adapter")
    if answer["error"]:
        raise GpuError(f"the browser's WebGPU gave no adapter: {answer['error']}")
    found = answer["out"][0] if answer["out"] else None
    _adapter = Adapter(found) if found else None


def adapters(backend: str | None = None) -> list[Adapter]:
    if _adapter is None:
        return []
    if backend in (None, "auto"):
        return [_adapter]
    from ..base import BACKENDS

    return [_adapter] if _adapter.info["backend_type"] in BACKENDS.get(backend, ("",))[1] else []


def request_device(adapter: Adapter, features: list[str], on_lost: Any) -> Device:
    """The page's device: one per process (a page's adapter gives one device;
    a second Gpu of the browser, ``auto`` beside ``vulkan``, shares it)."""
    global _device
    assert _driver is not None
    if _device is not None:
        return _device
    answer = _driver.run([["device", [f for f in features if f in adapter.features]]], "requesting the device")
    if answer["error"]:
        raise BrowserError(f"device request failed: {answer['error']}")
    _device = Device(_driver, answer["out"][0], on_lost)
    return _device


def settled(promise: Any, timeout: float) -> bool:
    return promise.wait(timeout)


def write_timestamp(encoder: Any, query_set: Any, index: int) -> None:
    raise BrowserError("timestamps inside an encoder are not offered by the browser")


def error_types() -> tuple[type[BaseException], ...]:
    return (BrowserError,)
