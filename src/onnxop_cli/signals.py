"""SIGINT, SIGTERM and SIGHUP end a run the way Ctrl-C does, and never lie.

``install()`` (the console entry point calls it; the Python API does not)
makes each of the three raise :class:`Interrupted` in the main thread, so
every ``finally`` on the way out runs: temporary files are removed and an
existing output is left as it was. The exit code is 128 + the signal number
(130, 143, 129). ``timeout``, ``docker stop``, systemd and CI cancels send
SIGTERM; a closed terminal sends SIGHUP.

Two ways to hold a signal instead of raising it at once:

- ``held()``: for a block that must not be cut in half (removing a temporary
  file). A signal that arrives inside is raised when the block ends.
- ``commit()``: called, inside ``held()``, just before an output is renamed
  into place. From then on a signal is only recorded, until the next
  ``checkpoint()`` (the start of a batch's next job) raises it. If no further
  work starts, the run ends with the code of what it did: exit code 0 means
  every output is in place, and a non-zero code means the output being written
  when the signal came is untouched.

Python runs signal handlers between bytecodes in the main thread, so holding
is a flag the handler reads; the rename itself is one system call.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

from .errors import Interrupted

TERMINATING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_depth = 0  # nesting of held() blocks
_until_checkpoint = False  # an output was committed: hold until the next job starts
_pending: int | None = None  # the first signal that arrived while held


def _handler(signum: int, frame) -> None:
    global _pending
    if _depth or _until_checkpoint:
        if _pending is None:
            _pending = signum
        return
    raise Interrupted.by(signum)


def install() -> None:
    """Route the terminating signals to Interrupted (main thread only). A
    signal that was ignored when onnxop started (``nohup`` ignores SIGHUP)
    stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in TERMINATING:
        if signal.getsignal(signum) is signal.SIG_IGN:
            continue
        signal.signal(signum, _handler)


@contextmanager
def held() -> Iterator[None]:
    """Hold terminating signals for the block; one that came is raised after it
    (unless ``commit()`` was called inside: then at the next checkpoint)."""
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if not _depth and not _until_checkpoint:
            _deliver()


def commit() -> None:
    """An output is about to be renamed into place: from now on hold signals
    until ``checkpoint()``, so none can report failure for work that is done."""
    global _until_checkpoint
    _until_checkpoint = True


def checkpoint() -> None:
    """Before new work starts: raise a signal held since the last commit."""
    global _until_checkpoint
    _until_checkpoint = False
    if not _depth:
        _deliver()


def pending() -> int | None:
    """The signal being held, if any."""
    return _pending


def _deliver() -> None:
    global _pending
    if _pending is not None:
        signum, _pending = _pending, None
        raise Interrupted.by(signum)


def reset() -> None:
    """Forget held state (the in-process CLI runs many commands in one process)."""
    global _depth, _until_checkpoint, _pending
    _depth, _until_checkpoint, _pending = 0, False, None
