"""The entry point: run the app with the commands registered, and map every
failure to one line on stderr and an exit code (httpie's raw_main shape).
The only module that imports the commands."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from typing import Optional

import typer

from ..errors import ExitCode, OnnxopError, interruption
from . import tools as cli_tools  # noqa: F401 - show, info and the checks (before the operators, for --help's order)
from . import ops as cli_ops  # noqa: F401 - one command per operator, from the registry
from . import show as cli_show  # noqa: F401 - show
from . import compare as cli_compare  # noqa: F401 - compare
from . import run as cli_run  # noqa: F401 - run MODEL: a whole graph (core/graph.py)
from .app import _ARGV, _wants_json, app
from .console import error_line


def main(argv: Optional[list[str]] = None) -> int:
    """Console entry point: every error is one line on stderr and an exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or bool(os.environ.get("ONNXOP_DEBUG"))
    from ..core import onnx_lazy, signals

    onnx_lazy.install()  # `import onnx` without its helpers and ml_dtypes until a command uses them (~1 CPU-second)
    from ..io import stdio

    stdio.guard_standard_fds()  # before any file is opened: a closed fd 1 must not become an output
    signals.install()
    from ..core import sigbus

    sigbus.install()
    try:
        code = run(argv, debug)
    except Exception as e:  # a signal just as run() started or returned: it ends the run all the same
        stopped = interruption(e)
        if stopped is None:
            raise
        code = _fail(stopped.message, stopped.exit_code, argv, _wants_json(argv))
    signals.settle()  # the outcome is decided: a signal from here on cannot change it
    stdio.settle_stdout()
    sys.exit(code)


def run(argv: list[str], debug: bool = False) -> int:
    """Run onnxop with ``argv``; every failure becomes one line on stderr (and,
    with --json, an error document on stdout) and an exit code."""
    from ..core import signals
    from ..core.batch import BatchFailed

    as_json = _wants_json(argv)
    _ARGV[:] = argv
    signals.reset()
    from ..core.files import forget_reads

    forget_reads()  # (the in-process tests run many commands in one process)
    try:
        with _only_command(argv):
            rv = app(args=argv, prog_name="onnxop", standalone_mode=False)
        return int(rv) if isinstance(rv, int) else ExitCode.SUCCESS
    except typer.Exit as e:
        return e.exit_code
    except SystemExit as e:
        # click's own exit: completion exits 0; a reader that went away while
        # click itself wrote (its help text) stops with 1, stdout wrapped
        if type(sys.stdout).__name__ == "PacifyFlushWrapper":
            sys.stdout, sys.stderr = sys.stdout.wrapped, getattr(sys.stderr, "wrapped", sys.stderr)
            return ExitCode.READER_LEFT  # quiet, as cat is
        return e.code if isinstance(e.code, int) else int(e.code is not None)
    except (Exception, KeyboardInterrupt) as e:
        batch = e if isinstance(e, BatchFailed) else None
        cause = batch.cause if batch else e
        if debug and not isinstance(cause, (KeyboardInterrupt, typer.Abort)):
            raise
        from ..io.stdio import reader_left

        if reader_left(interruption(cause) or cause):
            # `| head`: the reader has what it wanted. No message (as cat); 141
            # (as cat's SIGPIPE) says stdout did not get everything; an -o file
            # was written whole or not at all (the atomic writer), as always.
            return ExitCode.READER_LEFT
        if type(cause).__name__ == "NoArgsIsHelpError":  # bare `onnxop`: the help, not a squashed line
            cause.show()  # (matched by name, as typer does: the class lives in its vendored click)
            return ExitCode.USAGE
        message, code = _describe(cause, argv)
        if batch:
            from ..render.json import batch_failure

            failed = batch_failure(batch.written, batch.job.src, batch.job.output)
            return _fail(batch.line(message), code, argv, as_json, failed)
        return _fail(message, code, argv, as_json, status=getattr(cause, "status", "error"))
    finally:
        atomic = sys.modules.get("onnxop_cli.io.atomic")
        if atomic is not None:  # a temporary file whose own cleanup a second error cut short
            atomic.remove_leftovers()
        sniff = sys.modules.get("onnxop_cli.io.sniff")
        if sniff is not None:  # stdin archives spooled for this run
            sniff.close_spools()


@contextlib.contextmanager
def _only_command(argv: list[str]):
    """When ``argv`` starts with a command's name, typer builds that command
    alone: building all of them (click parameters from each signature) was a
    good part of a small run's start-up (docs/performance.md). Its --help,
    errors and run are the same; ``onnxop --help``, a name typed after an
    option, an unknown name (click's "did you mean") and shell completion
    still see every command."""
    full = app.registered_commands
    named = [info for info in full if argv and _name(info) == argv[0]]
    if not named or any(k.startswith("_ONNXOP") and k.endswith("_COMPLETE") for k in os.environ):
        yield
        return
    app.registered_commands = named
    try:
        yield
    finally:
        app.registered_commands = full


def _name(info) -> str:
    return info.name or info.callback.__name__.replace("_", "-")


def _describe(e: BaseException, argv: list[str]) -> tuple[str, int]:
    """The one line and the exit code for any failure (httpie's raw_main shape)."""
    e = interruption(e) or e  # a signal, even wrapped by Python in another exception
    if isinstance(e, OnnxopError):
        return e.message, e.exit_code
    if isinstance(e, typer.TyperException):  # click's usage errors
        code = ExitCode.USAGE if getattr(e, "exit_code", 2) == 2 else e.exit_code
        return _usage_line(e, argv), code
    if isinstance(e, (KeyboardInterrupt, typer.Abort)):
        return "interrupted", ExitCode.INTERRUPTED
    if isinstance(e, MemoryError):
        detail = str(e) or "an allocation failed"
        return f"out of memory: {detail}", ExitCode.ERROR
    if isinstance(e, OSError):
        where = f"{e.filename}: " if e.filename else ""
        user_fixable = e.errno in (errno.ENOENT, errno.EACCES, errno.EISDIR, errno.ENOTDIR, errno.EPERM)
        code = ExitCode.USAGE if user_fixable else ExitCode.ERROR
        return f"{where}{e.strerror or e}", code
    # the last line of defence: no traceback
    return f"internal error: {type(e).__name__}: {e} (run with --debug for the traceback)", ExitCode.ERROR


def _fail(message: str, code: int, argv: list[str], as_json: bool, extra: Optional[dict] = None,
          status: str = "error") -> int:
    """The one error line on stderr; with --json also the error document on
    stdout (plus ``extra``: what a stopped batch had written). If stdout
    cannot take the document, the error line said it all: the exit code
    stays the failure's own."""
    error_line(message)
    if as_json:
        from ..render import json as report
        from ..io.stdio import StdoutError, write_text

        try:
            write_text(report.dumps(report.error(_command_in(argv), message, code, status) | (extra or {})) + "\n")
        except StdoutError:
            pass
    return int(code)


def _command_in(argv: list[str]) -> Optional[str]:
    """The command named in ``argv`` (None when there is none, or it is unknown)."""
    names = {_name(info) for info in app.registered_commands}
    return next((a for a in argv if a in names), None)


def _usage_line(e: Exception, argv: list[str]) -> str:
    ctx = getattr(e, "ctx", None)
    # click's parser raises some errors ("requires an argument") without a context
    command = _command_in(argv)
    where = ctx.command_path if ctx is not None else f"onnxop {command}" if command else "onnxop"
    format_message = getattr(e, "format_message", None)
    text = format_message() if callable(format_message) else str(e)
    message = " ".join(str(text).split())
    return f"{message} (see '{where} --help')"
