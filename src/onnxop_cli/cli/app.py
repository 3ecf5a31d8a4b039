"""The typer app: parse, call the core, render, map errors to exit codes.

Start-up matters (``onnxop --help`` must stay fast), so numpy, wgpu, onnx and
rich are imported inside the commands that need them, never at module level.
"""

from __future__ import annotations

import errno
import functools
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from .help import OnnxopCommand, OnnxopGroup
from ..errors import ExitCode, Interrupted, OnnxopError, UsageError, interruption
from .console import Out, error_line

LATEST_OPSET = 28  # kept equal to ops.LATEST_OPSET (tested); ops is not imported at start-up

app = typer.Typer(
    name="onnxop",
    help=(
        "Apply ONNX's data-movement operators (Transpose, Slice, Expand, Tile, Reshape, ...) "
        "to tensor files by running WGSL copy and gather kernels on a WebGPU adapter.\n\n"
        "Example: onnxop flatten a.npy --axis -2 -o b.npy"
    ),
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    cls=OnnxopGroup,
)

# ------------------------------------------------------------------ options

BackendOpt = Annotated[
    Optional[str],
    typer.Option(
        "--backend",
        "-b",
        envvar="ONNXOP_BACKEND",
        help="WebGPU backend: auto (default), vulkan, metal, d3d12 or gl. Example: --backend gl",
        show_default=False,
        metavar="NAME",
        autocompletion=lambda: ["auto", "vulkan", "metal", "d3d12", "gl"],
    ),
]
EngineOpt = Annotated[
    Optional[str],
    typer.Option(
        "--engine",
        # $ONNXOP_ENGINE is read by gpu.device.resolve, below both options:
        # as a typer envvar it would fill the command's option and override
        # an --engine given before the command.
        help="WebGPU implementation: wgpu (default; env ONNXOP_ENGINE) or dawn "
        "(pip install 'onnxop[dawn]'). Example: --engine dawn",
        show_default=False,
        metavar="NAME",
        autocompletion=lambda: ["wgpu", "dawn"],
    ),
]
OpsetOpt = Annotated[
    int,
    typer.Option("--opset", help="ONNX opset whose rules apply. Example: --opset 13", metavar="N"),
]
OutputOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--output",
        "-o",
        help="Write the result here (.npy, .npz or .pb); a folder when several inputs are given; "
        "- writes a .npy stream to stdout. Without it the node is printed. Example: -o b.npy",
        dir_okay=True,
        metavar="PATH",
    ),
]
FullOpt = Annotated[
    bool, typer.Option("--full", help="Print every value instead of a summary. Example: --full")
]
DebugOpt = Annotated[
    bool, typer.Option("--debug", help="Show tracebacks on errors. Example: --debug")
]
InputsArg = Annotated[
    list[Path],
    typer.Argument(
        help="Input tensor files (.npy, .npz, .pb, or an .onnx model's initializers); - reads "
        "stdin (any of those but .onnx, recognised by content). "
        "Example: a.npy",
        show_default=False,
        metavar="FILE",
    ),
]
MemberOpt = Annotated[
    Optional[str],
    typer.Option(
        "--member",
        "-m",
        help="The array of an .npz input, or the initializer of an .onnx model, to use. Without it "
        "an .npz or .onnx written to an .npz has every one processed. Example: --member weights",
        show_default=False,
        metavar="NAME",
    ),
]
JsonOpt = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Print one JSON document on stdout instead of text, errors included "
        "(schema in README). Example: --json",
    ),
]
ParentsOpt = Annotated[
    bool,
    typer.Option(
        "--parents",
        help="With -o FOLDER, write each result under the input's own path, as cp --parents "
        "does (p/input_0.pb -> FOLDER/p/input_0.pb), so same-named inputs stay apart; "
        "a leading / is dropped, '..' is refused. Example: --parents -o out",
    ),
]
QuietOpt = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        help="No progress bars and no 'wrote' lines; errors still go to stderr. Example: -q",
    ),
]


# ------------------------------------------------------------------ output


def _out(ctx: typer.Context, json_out: bool, quiet: bool) -> Out:
    """Per-command --json/--quiet, or the ones given before the command."""
    obj = ctx.obj or {}
    return Out(json=json_out or obj.get("json", False), quiet=quiet or obj.get("quiet", False))


# ------------------------------------------------------------------ commands


def command(**kwargs):
    """``app.command`` that turns Ctrl-C inside the command into Interrupted
    (typer would otherwise exit 130 without a word). Its ``--help`` option
    has an example too (cli_help.OnnxopCommand)."""
    kwargs.setdefault("cls", OnnxopCommand)

    def wrap(fn):
        @functools.wraps(fn)
        def inner(*a, **kw):
            try:
                return fn(*a, **kw)
            except KeyboardInterrupt:
                raise Interrupted() from None

        return app.command(**kwargs)(inner)

    return wrap


def _print_version(value: bool) -> None:
    """``--version``: eager, so it answers before any command is needed."""
    if not value:
        return
    from . import version

    found = version.versions()
    if _wants_json(_ARGV):
        from ..render import json as report

        sys.stdout.write(report.dumps(version.document(found)) + "\n")
    else:
        sys.stdout.write(version.text(found) + "\n")
    sys.stdout.flush()
    raise typer.Exit(ExitCode.SUCCESS)


_ARGV: list[str] = []  # the arguments of the current run (--version --json reads them)


@app.callback()
def _global(
    ctx: typer.Context,
    backend: BackendOpt = None,
    engine: EngineOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    debug: DebugOpt = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the versions of onnxop, wgpu-native and the Python packages, and exit "
            "(with --json, as a document). Example: onnxop --version",
            is_eager=True,
            callback=_print_version,
        ),
    ] = False,
    kernel: Annotated[
        Optional[str],
        typer.Option(
            "--kernel",
            envvar="ONNXOP_KERNEL",
            help="Force a copy kernel (storage, storage64) instead of the one measured fastest "
            "on this adapter. Example: onnxop --kernel storage flatten a.npy",
            show_default=False,
            metavar="NAME",
        ),
    ] = None,
) -> None:
    """Options given before the command apply to it: onnxop --backend gl flatten a.npy"""
    from ..gpu.choose import force  # no wgpu at import: --help stays light

    force(kernel)  # every run sets it, so one in-process run does not leak into the next
    given = backend if _on_command_line(ctx, "backend") else None
    ctx.obj = {"backend": given, "env_backend": backend, "engine": engine, "json": json_out, "quiet": quiet}


def _on_command_line(ctx: typer.Context, name: str) -> bool:
    """The option was typed, not taken from its environment variable or default."""
    return getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE"


def _backend(ctx: typer.Context, backend: Optional[str], engine: Optional[str] = None) -> Optional[str]:
    """--backend after the command, or before it (both typed: they must
    agree), else $ONNXOP_BACKEND; as one string naming its engine when that
    is not the default (``dawn-gl``): the core and the checks pass it to get_gpu."""
    from .repeats import agree

    obj = ctx.obj or {}
    if _on_command_line(ctx, "backend"):
        backend = agree("--backend", obj.get("backend"), backend)
    else:
        backend = obj.get("backend") or backend or obj.get("env_backend")
    engine = agree("--engine", obj.get("engine"), engine) if engine else obj.get("engine")
    if not engine:
        return backend
    from ..gpu.device import gpu_key, resolve

    return gpu_key(*resolve(backend, engine))


def _run_many(
    command: str,
    node,
    opset: int,
    inputs: list[Path],
    output: Optional[Path],
    backend,
    full: bool,
    out: Out,
    member: Optional[str] = None,
    parents: bool = False,
) -> None:
    """Apply ``node`` to each input; -o is a file for one input, a folder for
    several, or - for stdout. An .npz input without --member contributes every
    member: into an .npz output (names kept) or to the printout; a single-array
    output refuses it. The batch is planned whole before anything is written
    (batch.py). Prints a line per tensor, the node (without -o), or one JSON
    document for all of them."""
    from ..core import batch
    from ..render import json as report
    from ..gpu import get_gpu

    started = time.perf_counter()
    if full and (output is not None or out.json):
        given = "-o" if output is not None else "--json"
        raise UsageError(f"--full prints every value of the printed node, and with {given} no node is printed; "
                         f"drop --full or {given}")
    _check_stdio(inputs, output, out)
    jobs = batch.plan(node, inputs, output, member, parents=parents, backend=backend)
    done = batch.run(node, jobs, backend=backend, out=out, full=full, parents=parents, member=member)
    out.warn_lost()
    if out.json:
        adapters = [r.adapter for r, _ in done if r.adapter != "host"]
        gpu = get_gpu(backend)
        out.document(
            report.op_document(
                command, node, opset, [report.run_entry(r, src) for r, src in done],
                backend=gpu.info.our_backend, adapter=adapters[-1] if adapters else gpu.name,
                total=time.perf_counter() - started,
            )
            | {"kernel": _kernel_used(backend)}
        )


def _kernel_used(backend) -> Optional[dict]:
    """For --json: the flat copy kernel that ran on ``backend``'s adapter in
    this process and why, or None if none did."""
    from ..gpu.device import opened

    gpu = opened(backend)
    return gpu.kernel_used.document() if gpu is not None and gpu.kernel_used else None


def _check_stdio(inputs: list[Path], output: Optional[Path], out: Out) -> None:
    """What - (stdin, stdout) allows: one tensor each way, stdout not shared."""
    from ..io.stdio import is_stdio

    if any(is_stdio(p) for p in inputs) and len(inputs) > 1:
        raise UsageError(f"-: stdin must be the only input (got {len(inputs)} inputs)")
    if is_stdio(output):
        if len(inputs) > 1:
            raise UsageError(f"-o -: stdout takes one tensor, got {len(inputs)} inputs; use -o FOLDER")
        if out.json:
            raise UsageError("-o - and --json both write to stdout; write the tensor to a file, or drop --json")
        out.data_on_stdout = True


from . import tools as cli_tools  # noqa: E402,F401 - show, info and the checks (before the operators, for --help's order)

from . import ops as cli_ops  # noqa: E402,F401 - one command per operator, from the registry
from . import run as cli_run  # noqa: E402,F401 - run MODEL: a whole graph (core/graph.py)

# ------------------------------------------------------------------ entry


def main(argv: Optional[list[str]] = None) -> int:
    """Console entry point: every error is one line on stderr and an exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or bool(os.environ.get("ONNXOP_DEBUG"))
    from ..core import signals
    from ..io import stdio

    stdio.guard_standard_fds()  # before any file is opened: a closed fd 1 must not become an output
    signals.install()
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
    try:
        rv = app(args=argv, prog_name="onnxop", standalone_mode=False)
        return int(rv) if isinstance(rv, int) else ExitCode.SUCCESS
    except typer.Exit as e:
        return e.exit_code
    except SystemExit as e:
        # click's own exit: completion exits 0; a reader that went away while
        # click itself wrote (its help text) stops with 1, stdout wrapped
        if type(sys.stdout).__name__ == "PacifyFlushWrapper":
            sys.stdout, sys.stderr = sys.stdout.wrapped, getattr(sys.stderr, "wrapped", sys.stderr)
            return _fail("stdout: broken pipe (the reader stopped reading)", ExitCode.ERROR, argv, False)
        return e.code if isinstance(e.code, int) else int(e.code is not None)
    except (Exception, KeyboardInterrupt) as e:
        batch = e if isinstance(e, BatchFailed) else None
        cause = batch.cause if batch else e
        if debug and not isinstance(cause, (KeyboardInterrupt, typer.Abort)):
            raise
        if type(cause).__name__ == "NoArgsIsHelpError":  # bare `onnxop`: the help, not a squashed line
            cause.show()  # (matched by name, as typer does: the class lives in its vendored click)
            return ExitCode.USAGE
        message, code = _describe(cause, argv)
        if batch:
            return _fail(batch.line(message), code, argv, as_json, batch.fields())
        return _fail(message, code, argv, as_json)
    finally:
        atomic = sys.modules.get("onnxop_cli.io.atomic")
        if atomic is not None:  # a temporary file whose own cleanup a second error cut short
            atomic.remove_leftovers()


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


def _fail(message: str, code: int, argv: list[str], as_json: bool, extra: Optional[dict] = None) -> int:
    """The one error line on stderr; with --json also the error document on
    stdout (plus ``extra``: what a stopped batch had written). If stdout
    cannot take the document, the error line said it all: the exit code
    stays the failure's own."""
    error_line(message)
    if as_json:
        from ..render import json as report
        from ..io.stdio import StdoutError, write_text

        try:
            write_text(report.dumps(report.error(_command_in(argv), message, code) | (extra or {})) + "\n")
        except StdoutError:
            pass
    return int(code)


def _wants_json(argv: list[str]) -> bool:
    """--json anywhere before a ``--`` (errors can come before parsing ends)."""
    args = argv[: argv.index("--")] if "--" in argv else argv
    return "--json" in args


def _command_in(argv: list[str]) -> Optional[str]:
    """The command named in ``argv`` (None when there is none, or it is unknown)."""
    names = {info.name or info.callback.__name__.replace("_", "-") for info in app.registered_commands}
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
