"""The Dawn runtime the engine and its objects share: pydawn's library behind
one thread (:class:`_OneThread`, see engine.py for why), the instance, Dawn's
errors, and the helpers every call uses (strings, futures, callbacks).
``w`` and ``_instance`` are set by engine.init()."""

from __future__ import annotations

import atexit
import ctypes
import re
import threading
from typing import Any


class DawnError(RuntimeError):
    """A WebGPU error reported by Dawn (validation, compilation)."""


class DawnOutOfMemory(DawnError, MemoryError):
    pass


def _lib():
    """pydawn's ctypes module (loads Dawn's shared library)."""
    import os

    import pydawn
    from pydawn import webgpu  # noqa: PLC0415 - ImportError: engines.load names the extra

    from ....core import signals

    # pydawn's ctypes callbacks, and ours in this package (runtime, engine, objects)
    signals.callback_code(os.path.dirname(pydawn.__file__))
    signals.callback_code(os.path.dirname(__file__))
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


w: Any = None  # pydawn.webgpu behind _OneThread, once engine.init() ran
_instance: Any = None
_alive = True  # False at exit: releasing handles then could call into a torn-down Dawn
_keep: list[Any] = []  # ctypes callbacks Dawn may call for the life of the process
_releases: Any = None  # the engine's lock (gpu/release.py), once a Gpu set it (engine.guard_releases)


def release(drop: Any, obj: Any) -> None:
    """``drop(obj)``, a ``wgpu*Release``, from a finalizer: at once if this
    thread can take the engine's lock (free, or its own), else left to the
    thread holding it, which runs it as it lets go (gpu/release.py). A
    finalizer runs wherever the last reference goes, or wherever the garbage
    collector runs; on Vulkan, Dawn is called from any thread, and a release
    there under another thread's submits and maps is where a six-thread run
    once aborted ("free(): invalid pointer", tests/process/test_api_threads.py)."""
    lock = _releases
    if lock is None:
        drop(obj)
    elif lock.acquire(blocking=False):
        try:
            drop(obj)
        finally:
            lock.release()
    else:
        lock.later(drop, obj)


@atexit.register
def _at_exit() -> None:
    global _alive
    _alive = False


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
