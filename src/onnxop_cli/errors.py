"""The project's exceptions and the exit codes they map to.

The core raises these; only the CLI turns them into messages and exit codes.
Every message is one line that names the problem and the values involved.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes, named in one place (httpie's ``ExitStatus`` shape)."""

    SUCCESS = 0
    ERROR = 1  # runtime or GPU failure
    USAGE = 2  # bad arguments or invalid input the user can fix
    HANGUP = 129  # SIGHUP (128 + signal number, as shells report it)
    INTERRUPTED = 130  # Ctrl-C (SIGINT)
    READER_LEFT = 141  # stdout's reader stopped reading (| head): quiet, as cat's 128 + SIGPIPE
    TERMINATED = 143  # SIGTERM


class OnnxopError(Exception):
    """Base class: a failure with a one-line message and an exit code."""

    exit_code: ExitCode = ExitCode.ERROR
    status = "error"  # the --json document's status

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def reworded(self, message: str) -> OnnxopError:
        """The same error with ``message`` (a file or node named in front):
        a copy, so what the class carries besides the words (a signal's exit
        code, OutOfScope's reason, OtherNodes' counts) is kept, where
        ``type(e)(message)`` would reset it."""
        new = type(self).__new__(type(self))  # not copy.copy: it calls the class with the words only
        new.__dict__.update(self.__dict__)
        Exception.__init__(new, message)
        new.message = message
        return new


class UsageError(OnnxopError):
    """Arguments that cannot work: a bad axis, an unknown format, a missing file."""

    exit_code = ExitCode.USAGE


class InputError(OnnxopError):
    """A tensor file that cannot be read as what it claims to be."""

    exit_code = ExitCode.USAGE


class OpError(UsageError):
    """Operator semantics rejected the request (axis out of range, duplicate axes...)."""


class OutOfScope(OpError):
    """A case the operator's rules allow that onnxop does not run (float
    arithmetic, whose WGSL results are not correctly rounded): conformance
    reports it as skipped, the CLI as an error. ``reason``: what is out of
    scope, without node or input names ("float16 inputs", "mode 'linear'"),
    for summaries that say it once per operator; None: the message says it."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason


class GpuError(OnnxopError):
    """WebGPU failed: shader, validation, out of memory, device lost."""

    exit_code = ExitCode.ERROR


class NoAdapterError(GpuError):
    """No WebGPU adapter could be found for the requested backend."""


class Mismatch(OnnxopError):
    """A check ran and found a difference (run --check, run --verify): the --json document's status is
    "failed", as compare's and doc-examples --check's are (docs/json.md), not "error"."""

    status = "failed"


class OutputError(OnnxopError):
    """The result could not be written (disk full, permission...)."""

    exit_code = ExitCode.ERROR


class Interrupted(OnnxopError):
    """Ctrl-C, SIGTERM or SIGHUP: whatever was being written has been removed.
    The exit code is 128 + the signal's number, as shells report it."""

    exit_code = ExitCode.INTERRUPTED

    def __init__(self, message: str = "interrupted", signum: int = 2) -> None:
        super().__init__(message)
        self.signum = signum
        code = 128 + signum  # a name for the common three; 138 (SIGUSR1), 152 (SIGXCPU)... as numbers
        self.exit_code = ExitCode(code) if code in ExitCode._value2member_map_ else code  # type: ignore[assignment]

    @classmethod
    def by(cls, signum: int) -> Interrupted:
        """The error for a signal: Ctrl-C reads "interrupted", the others name themselves."""
        import signal

        if signum == signal.SIGINT:
            return cls()
        try:
            name = signal.Signals(signum).name
        except ValueError:  # a real-time signal: SIGRTMIN+n
            name = f"SIGRTMIN+{signum - signal.SIGRTMIN}"
        return cls(f"interrupted by {name}", signum)


def interruption(e: BaseException | None) -> Interrupted | None:
    """The Interrupted behind ``e``, if a signal caused it: Python 3.11 wraps
    an exception raised while a class body runs ``__set_name__`` (a
    dataclass being defined as a module loads) in a RuntimeError, so the
    signal can arrive as another exception's cause."""
    seen = 0
    while e is not None and seen < 16:
        if isinstance(e, Interrupted):
            return e
        e = e.__cause__ or e.__context__
        seen += 1
    return None

