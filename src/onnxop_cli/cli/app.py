"""The typer app, the ``command`` decorator every command registers with, and
the options given before a command. It imports no command: main.py does.

Start-up matters (``onnxop --help`` must stay fast), so numpy, wgpu, onnx and
rich are imported inside the commands that need them, never at module level.
"""

from __future__ import annotations

import functools
import sys
from typing import Annotated, Optional

import typer

from ..errors import ExitCode, Interrupted
from .help import OnnxopCommand, OnnxopGroup
from .options import BackendOpt, DebugOpt, EngineOpt, JsonOpt, QuietOpt, _on_command_line

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

# ------------------------------------------------------------------ commands


def command(**kwargs):
    """``app.command`` that turns Ctrl-C inside the command into Interrupted
    (typer would otherwise exit 130 without a word). Its ``--help`` option
    has an example too (help.OnnxopCommand)."""
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


def _wants_json(argv: list[str]) -> bool:
    """--json anywhere before a ``--`` (errors can come before parsing ends)."""
    args = argv[: argv.index("--")] if "--" in argv else argv
    return "--json" in args
