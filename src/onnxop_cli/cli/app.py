"""The typer app, the ``command`` decorator every command registers with, and
the options given before a command. It imports no command: main.py does.

Start-up matters (``onnxop --help`` must stay fast), so numpy, wgpu, onnx and
rich are imported inside the commands that need them, never at module level.
"""

from __future__ import annotations

import functools
import inspect
import sys
from typing import Annotated

import typer

from ..errors import ExitCode, Interrupted
from .help import OnnxopCommand, OnnxopGroup
from .options import BackendOpt, DebugOpt, EngineOpt, JsonOpt, KernelOpt, QuietOpt, _on_command_line

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

# The options every command takes, before or after its name: one definition
# each (above); the callback takes them before the command, and ``command``
# adds them to every command (onnxop transpose x.npy -o y.npy --kernel storage).
GLOBALS: dict[str, tuple[object, object]] = {
    "backend": (BackendOpt, None),
    "engine": (EngineOpt, None),
    "json_out": (JsonOpt, False),
    "quiet": (QuietOpt, False),
    "debug": (DebugOpt, False),
    "kernel": (KernelOpt, None),
}


# ------------------------------------------------------------------ commands


def command(**kwargs):
    """``app.command`` that adds the global options (GLOBALS) to the command
    and merges what was typed after the command with what was typed before
    it (``ctx.obj``, read by options._out and options._backend), and turns
    Ctrl-C inside the command into Interrupted (typer would otherwise exit 130
    without a word). Its ``--help`` option has an example too
    (help.OnnxopCommand)."""
    kwargs.setdefault("cls", OnnxopCommand)

    def wrap(fn):
        signature = inspect.signature(fn, eval_str=True)
        added = [name for name in GLOBALS if name not in signature.parameters]
        extra = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=GLOBALS[name][1], annotation=GLOBALS[name][0])
            for name in added
        ]

        @functools.wraps(fn)
        def inner(*a, **kw):
            _merge_globals(_current_context(), {name: kw.pop(name) for name in added})
            try:
                return fn(*a, **kw)
            except KeyboardInterrupt:
                raise Interrupted() from None

        params = list(signature.parameters.values())
        inner.__signature__ = signature.replace(parameters=params + extra)  # type: ignore[attr-defined]
        inner.__annotations__ = {p.name: p.annotation for p in params + extra}
        return app.command(**kwargs)(inner)

    return wrap


def _current_context() -> typer.Context:
    from typer.main import get_current_context  # typer's own click (vendored), whose context runs the command

    return get_current_context()


def _merge_globals(ctx: typer.Context, after: dict) -> None:
    """The global options typed after the command joined to those typed
    before it: flags add up, values must agree (repeats.agree)."""
    from ..gpu.choose import force  # no wgpu at import: --help stays light
    from .repeats import agree

    obj = ctx.obj = dict(ctx.obj or {})
    typed = {name for name in after if _on_command_line(ctx, name)}
    for flag, key in (("json_out", "json"), ("quiet", "quiet"), ("debug", "debug")):
        obj[key] = bool(obj.get(key)) or bool(after.get(flag))
    for name in ("backend", "engine", "kernel"):
        if name in typed:
            obj[name] = agree(f"--{name}", obj.get(name), after[name])
    if "kernel" in typed:
        force(obj["kernel"])  # (the callback forced the one before the command, or $ONNXOP_KERNEL's)


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
    kernel: KernelOpt = None,
) -> None:
    """Options given before the command apply to it: onnxop --backend gl flatten a.npy"""
    from ..gpu.choose import force  # no wgpu at import: --help stays light

    force(kernel)  # every run sets it, so one in-process run does not leak into the next
    given = backend if _on_command_line(ctx, "backend") else None
    ctx.obj = {"backend": given, "env_backend": backend, "engine": engine, "json": json_out, "quiet": quiet,
               "debug": debug, "kernel": kernel if _on_command_line(ctx, "kernel") else None}


def _wants_json(argv: list[str]) -> bool:
    """--json anywhere before a ``--`` (errors can come before parsing ends)."""
    args = argv[: argv.index("--")] if "--" in argv else argv
    return "--json" in args
