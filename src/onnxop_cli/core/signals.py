"""Every signal that would end the process ends a run the way Ctrl-C does, and never lies.

``install()`` (the console entry point calls it; the Python API does not)
makes SIGINT, SIGTERM, SIGHUP -- and every other catchable signal whose
default action ends the process (SIGQUIT, SIGALRM, SIGUSR1/2, SIGXCPU from
``ulimit -t``, SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO, SIGPWR, real-time ones: see
TERMINATING) -- raise :class:`Interrupted` in the main thread, so every
``finally`` on the way out runs: temporary files and locks are removed and an
existing output is left as it was. The exit code is 128 + the signal number
(130, 143, 129, 138 ...). ``timeout``, ``docker stop``, systemd and CI cancels
send SIGTERM; a closed terminal sends SIGHUP.

Two ways to hold a signal instead of raising it at once:

- ``held()``: for a block that must not be cut in half (removing a temporary
  file). A signal that arrives inside is raised when the block ends.
- ``commit()``: called inside the ``held()`` block that renames an output
  into place. From then on a signal is only recorded, until the next
  ``checkpoint()`` (the start of a batch's next job, or of the run's next
  output file: io/atomic.py) raises it. If no further
  work starts, the run ends with the code of what it did: exit code 0 means
  every output is in place, and a non-zero code means the output being written
  when the signal came is untouched.
- ``settle()``: the run's exit code is known; signals are ignored from then
  on, through Python's shutdown.

Once one signal has been raised, the run is already unwinding: a second one
is only recorded, so it cannot cut the cleanup short (the exit code is the
first one's). A third forces the signal's default action at once, as a second
Ctrl-C does in many tools: that can leave a temporary file, as SIGKILL can.

Python runs signal handlers between bytecodes in the main thread, so holding
is a flag the handler reads; the rename itself is one system call. Where an
exception would be swallowed rather than unwind the run (a wgpu callback, a
``__del__``), the signal waits and is looked at again 5 ms later. Where the
handler cannot tell (a callback Python runs from C with no mark on its frame,
such as importlib's module-lock weakref callback), the swallowed Interrupted
reaches ``sys.unraisablehook``: it is not printed, and the signal is taken
back as held and raised 5 ms later, as above. A signal
that comes before ``install()`` (while Python starts) has its default action:
nothing has been written yet.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from ..errors import Interrupted

ASKED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # the ones a user or a supervisor sends


def _ends_the_process() -> tuple[int, ...]:
    """Every signal whose default action ends the process and that can be
    caught, as GNU sort cleans up on: the three above, and SIGQUIT, SIGALRM,
    SIGUSR1/2, SIGXCPU (``ulimit -t``), SIGXFSZ (``ulimit -f``), SIGVTALRM,
    SIGPROF, SIGIO, SIGPWR, SIGSTKFLT and the real-time signals. Not: SIGKILL
    (cannot be caught), SIGPIPE and SIGXFSZ (Python ignores them: a write
    gets EPIPE or EFBIG, an error that unwinds the run the same way), and
    the faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS),
    which a Python handler cannot run after."""
    names = ("SIGQUIT", "SIGALRM", "SIGUSR1", "SIGUSR2", "SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF",
             "SIGIO", "SIGPWR", "SIGSTKFLT")
    found = [getattr(signal, n) for n in names if hasattr(signal, n)]
    if hasattr(signal, "SIGRTMIN"):
        found += list(range(signal.SIGRTMIN, signal.SIGRTMAX + 1))
    return tuple(dict.fromkeys(int(n) for n in (*ASKED, *found)))


TERMINATING = _ends_the_process()

_depth = 0  # nesting of held() blocks
_until_checkpoint = False  # an output was committed: hold until the next job starts
_pending: int | None = None  # the first signal that arrived while held
_raised = False  # an Interrupted is on its way out: later signals only count
_ignored = 0  # signals that came after that


def _handler(signum: int, frame) -> None:
    global _pending, _raised, _ignored
    if _raised:
        if signum in _REPEATING:
            return  # the kernel repeats it every second of CPU: not the user insisting
        _ignored += 1
        if _ignored >= 2:  # the user insists: die now, by the signal
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        return
    if _depth or _until_checkpoint or _swallowed_in(frame):
        if _pending is None:
            _pending = signum
        if not (_depth or _until_checkpoint):
            _retry_soon()
        return
    _raised = True
    raise Interrupted.by(signum)


def _swallowed_in(frame) -> bool:
    """Whether an exception raised here would be swallowed, not unwind the
    run: inside wgpu or Dawn (their cffi and ctypes callbacks print it and go
    on, and the engine then fails), a ``__del__`` or a weakref callback ("Exception
    ignored in ...")."""
    while frame is not None:
        code = frame.f_code
        name = code.co_filename
        if code.co_name == "__del__" or name.endswith(_SWALLOWING) or name.startswith(tuple(_CALLBACK_CODE)):
            return True
        frame = frame.f_back
    return False


# Folders of code that runs callbacks from C (an engine's cffi or ctypes
# callbacks: an exception raised there is printed and the call goes on).
# Each engine names its own when it loads (callback_code).
_CALLBACK_CODE: set[str] = set()
_SWALLOWING = ("weakref.py", "_weakrefset.py", "atexit.py")  # callbacks whose errors are printed, not raised
RETRY_S = 0.005


def callback_code(folder: str) -> None:
    """Code under ``folder`` runs callbacks from C: a signal there is
    delivered once the main thread has left it."""
    _CALLBACK_CODE.add(os.path.join(os.path.abspath(folder), ""))


_REPEATING = tuple(getattr(signal, n) for n in ("SIGXCPU",) if hasattr(signal, n))
_retry_due = False  # our own SIGALRM timer is set (a SIGALRM from elsewhere ends the run)


def _retry_soon() -> None:
    """Look again in a moment (SIGALRM), when the main thread has left the
    code that would swallow the exception."""
    global _retry_due
    _retry_due = True
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, RETRY_S)


def _on_alarm(signum: int, frame) -> None:
    global _retry_due
    if not _retry_due:  # not our timer: someone sent SIGALRM, which ends the run as any other
        _handler(signum, frame)
        return
    _retry_due = False
    if _pending is None or _raised or _depth or _until_checkpoint:
        return  # delivered, or held: the block's end delivers it
    if _swallowed_in(frame):
        _retry_soon()
        return
    _deliver()


def _unraisable(hook: Any) -> Any:
    """A ``sys.unraisablehook`` that takes back an Interrupted Python swallowed
    ("Exception ignored in ..."): the signal it carried is held again and
    raised once the main thread is out of that code. Anything else goes to
    ``hook``."""

    def unraisable(info: Any) -> None:
        global _pending, _raised
        if isinstance(info.exc_value, Interrupted) and threading.current_thread() is threading.main_thread():
            if _raised and _pending is None:
                _raised = False
                _pending = info.exc_value.signum
                if not (_depth or _until_checkpoint):
                    _retry_soon()
            return
        hook(info)

    unraisable.onnxop = True  # type: ignore[attr-defined]
    return unraisable


def install() -> None:
    """Route the terminating signals to Interrupted (main thread only). A
    signal that was ignored when onnxop started (``nohup`` ignores SIGHUP)
    stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return
    if not getattr(sys.unraisablehook, "onnxop", False):
        sys.unraisablehook = _unraisable(sys.unraisablehook)
    for signum in TERMINATING:
        try:
            if signal.getsignal(signum) is signal.SIG_IGN:
                continue
            signal.signal(signum, _on_alarm if signum == signal.SIGALRM else _handler)
        except (OSError, ValueError):
            continue  # a signal this platform reserves


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


def settle() -> None:
    """The run's outcome is decided (its exit code is known): from now on the
    terminating signals are ignored. Not merely recorded: Python's shutdown
    puts every signal it handles back to its default action (death) while
    the device is still being torn down, and a signal then would end with
    128+n a run whose output is in place. An ignored one it leaves alone."""
    global _raised
    _raised = True
    if threading.current_thread() is threading.main_thread():
        signal.setitimer(signal.ITIMER_REAL, 0)  # a retry still due would kill as well
        for signum in TERMINATING:
            try:
                signal.signal(signum, signal.SIG_IGN)
            except (OSError, ValueError):
                pass


def pending() -> int | None:
    """The signal being held, if any."""
    return _pending


def _deliver() -> None:
    global _pending, _raised
    global _retry_due
    if _pending is not None and not _raised:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _retry_due = False
        signum, _pending = _pending, None
        _raised = True
        raise Interrupted.by(signum)


def reset() -> None:
    """Forget held state (the in-process CLI runs many commands in one process)."""
    global _depth, _until_checkpoint, _pending, _raised, _ignored, _retry_due
    _depth, _until_checkpoint, _pending, _raised, _ignored, _retry_due = 0, False, None, False, 0, False
