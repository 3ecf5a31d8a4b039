"""An engine's lock (``Gpu.lock``), which is also the only place its objects are released.

wgpu-py releases a native object in the Python finalizer (``__del__``) of
its wrapper, and a finalizer runs wherever the last reference goes -- or,
for an object in a reference cycle, in whichever thread the garbage
collector happens to run: the copy's writer thread, wgpu-py's poll thread,
a user's thread. wgpu-native does not expect a release there while another
thread works with the engine: on GL, releasing another device's objects from
the writer thread while the main thread submitted aborted the process
("BadAccess" in wgpu-hal's EGL context lock; tests/process/test_gc_release.py
provokes it). So the engine's finalizers are routed through its lock
(``engines/wgpu_native.guard_releases``): a thread that can take the lock
(free, or already its own) releases at once; any other thread leaves the
object here, and the thread holding the lock releases it as it lets go of
the lock (its outermost ``release``), still holding it.
"""

from __future__ import annotations

import threading
from typing import Any, Callable


class EngineLock:
    """A reentrant lock, as ``threading.RLock``, with a list of releases
    deferred to its holder."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0  # changed only by the thread holding _lock
        self._later: list[tuple[Callable[[Any], None], Any]] = []  # append/pop: atomic under the GIL

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        got = self._lock.acquire(blocking, timeout)
        if got:
            self._depth += 1
        return got

    def release(self) -> None:
        outermost = self._depth == 1
        if outermost:
            self._drain()  # still held: the deferred releases run under the lock
        self._depth -= 1
        self._lock.release()
        if outermost and self._later and self.acquire(blocking=False):  # left between the drain and the release
            self.release()

    def __enter__(self) -> EngineLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def later(self, release: Callable[[Any], None], obj: Any) -> None:
        """Run ``release(obj)`` when the holder lets go of the lock."""
        self._later.append((release, obj))

    def owned(self) -> bool:
        """Whether the calling thread holds the lock."""
        return self._lock._is_owned()  # type: ignore[attr-defined] - CPython's RLock has it

    @property
    def pending(self) -> int:
        return len(self._later)

    def _drain(self) -> None:
        while self._later:
            release, obj = self._later.pop()
            try:
                release(obj)
            except Exception:  # noqa: BLE001 - a finalizer's errors are ignored, as Python ignores them
                pass
            del obj
