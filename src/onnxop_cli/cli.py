"""The typer app: parse, call the core, render, map errors to exit codes.

Start-up matters (``onnxop --help`` must stay fast), so numpy, wgpu, onnx and
rich are imported inside the commands that need them, never at module level.
"""

from __future__ import annotations

import errno
import functools
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from .errors import ExitCode, Interrupted, OnnxopError, UsageError

LATEST_OPSET = 25  # kept equal to ops.LATEST_OPSET (tested); ops is not imported at start-up

app = typer.Typer(
    name="onnxop",
    help=(
        "Apply the ONNX operators Flatten and Unsqueeze to tensor files by running "
        "WGSL copy kernels on a WebGPU adapter.\n\n"
        "Example: onnxop flatten a.npy --axis -2 -o b.npy"
    ),
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
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
        help="Write the result here (.npy, .npz or .pb); a folder when several inputs are given. "
        "Without it the node is printed. Example: -o b.npy",
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
        help="Input tensor files (.npy, .npz or .pb). Example: a.npy", show_default=False, metavar="FILE"
    ),
]
MemberOpt = Annotated[
    Optional[str],
    typer.Option(
        "--member",
        "-m",
        help="The array of an .npz input to use. Without it an .npz written to an .npz has "
        "every member processed. Example: --member weights",
        show_default=False,
        metavar="NAME",
    ),
]


# ------------------------------------------------------------------ output


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def emit(text: str, *, styled: bool = True) -> None:
    """Result text to stdout: rich colour on a terminal, the exact text when piped."""
    if styled and sys.stdout.isatty():
        from .render import stylize

        _console().print(stylize(text))
    else:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def error_line(message: str) -> None:
    sys.stderr.write(f"onnxop: error: {message}\n")
    sys.stderr.flush()


# ------------------------------------------------------------------ commands


def command(**kwargs):
    """``app.command`` that turns Ctrl-C inside the command into Interrupted
    (typer would otherwise exit 130 without a word)."""

    def wrap(fn):
        @functools.wraps(fn)
        def inner(*a, **kw):
            try:
                return fn(*a, **kw)
            except KeyboardInterrupt:
                raise Interrupted() from None

        return app.command(**kwargs)(inner)

    return wrap


@app.callback()
def _global(
    ctx: typer.Context,
    backend: BackendOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Options given before the command apply to it: onnxop --backend gl flatten a.npy"""
    ctx.obj = {"backend": backend}


def _backend(ctx: typer.Context, backend: Optional[str]) -> Optional[str]:
    return backend or (ctx.obj or {}).get("backend")


def _run_many(
    node, inputs: list[Path], output: Optional[Path], backend, full: bool, member: Optional[str] = None
) -> None:
    """Apply ``node`` to each input; -o is a file for one input, a folder for several.
    An .npz input without --member contributes every member: into an .npz
    output (names kept) or to the printout; a single-array output refuses it."""
    from . import core, io
    from .render import Shown, render_node

    if len(inputs) > 1 and output is not None and not output.is_dir():
        raise UsageError(
            f"{output}: with {len(inputs)} inputs, -o must be an existing folder"
        )
    jobs = []
    for src in inputs:
        target = output / src.name if output is not None and output.is_dir() else output
        many = target is None or io.is_archive(target)
        jobs.append((io.read_tensors(src, member) if many else [io.read_tensor(src, member)], target))
    # Refuse everything that can be refused before the GPU is touched.
    for tensors, target in jobs:
        for tensor in tensors:
            core.check(node, tensor)
            if target is not None:
                io.check_output(target, tensor.dtype, nbytes=tensor.nbytes)

    for tensors, target in jobs:
        if target is None:
            blocks = []
            for tensor in tensors:
                result = core.apply(node, tensor, backend=backend)
                out = result.output
                shown_in = Shown(tensor.name, tensor.shape, tensor.dtype.name, tensor.to_numpy())
                shown_out = Shown(out.name, out.shape, out.dtype.name, out.to_numpy(), note=result.note)
                blocks.append(render_node(node, [shown_in], [shown_out], full=full))
            emit("\n\n".join(blocks))
            continue
        with io.open_writer(target) as writer:
            results = [
                core.apply(node, t, backend=backend, writer=writer, out_name=io.output_name(t, target))
                for t in tensors
            ]
        for result in results:
            tensor, out = result.input, result.output
            note = f" ({result.note})" if result.note else ""
            emit(
                f"{node.op_type}: {tensor.name} {_shape(tensor.shape)} {tensor.dtype} -> "
                f"{out.name} {_shape(out.shape)} {out.dtype}, wrote {target}{note}",
                styled=False,
            )


def _shape(shape) -> str:
    return str(tuple(shape))


@command(
    help=(
        "Flatten each input to 2-D at --axis: (d0*...*d[axis-1], d[axis]*...*dn).\n\n"
        "Example: onnxop flatten a.npy --axis -2 -o b.npy"
    ),
)
def flatten(
    ctx: typer.Context,
    inputs: InputsArg,
    axis: Annotated[
        Optional[str],
        typer.Option(
            "--axis",
            "-a",
            help="Split point, in [-r, r] for an input of rank r (default 1). Example: --axis -2",
            show_default=False,
            metavar="INT",
        ),
    ] = None,
    output: OutputOpt = None,
    opset: OpsetOpt = LATEST_OPSET,
    backend: BackendOpt = None,
    full: FullOpt = False,
    debug: DebugOpt = False,
    member: MemberOpt = None,
) -> None:
    from .ops import flatten_node

    node = flatten_node(parse_axis(axis), opset)
    _run_many(node, inputs, output, _backend(ctx, backend), full, member)


def parse_axis(text: Optional[str]) -> Optional[int]:
    """``"-2"`` -> -2; None stays None (the default, 1, is not shown as an attribute)."""
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        raise UsageError(f"Flatten: --axis must be an integer, got {text!r} (example: --axis -2)") from None


def parse_axes(text: str) -> list[int]:
    """``"2,4,-1"`` -> [2, 4, -1]; a clear error for anything else."""
    parts = [p.strip() for p in text.split(",")]
    if parts == [""]:
        raise UsageError("Unsqueeze: axes must not be empty (example: --axes 0,2)")
    try:
        return [int(p) for p in parts]
    except ValueError:
        raise UsageError(
            f"Unsqueeze: --axes must be comma-separated integers, got {text!r} (example: --axes 0,2)"
        ) from None


@command(
    help=(
        "Insert size-1 dimensions at --axes of the output.\n\n"
        "Example: onnxop unsqueeze x.npy --axes 2,4,5"
    ),
)
def unsqueeze(
    ctx: typer.Context,
    inputs: InputsArg,
    axes: Annotated[
        str,
        typer.Option(
            "--axes",
            help="Comma-separated output axes, each in [-r_out, r_out - 1] where "
            "r_out = rank + number of axes. Example: --axes 2,4,5",
            show_default=False,
            metavar="LIST",
        ),
    ],
    output: OutputOpt = None,
    opset: OpsetOpt = LATEST_OPSET,
    backend: BackendOpt = None,
    full: FullOpt = False,
    debug: DebugOpt = False,
    member: MemberOpt = None,
) -> None:
    from .ops import unsqueeze_node

    node = unsqueeze_node(parse_axes(axes), opset)
    _run_many(node, inputs, output, _backend(ctx, backend), full, member)


@command(
    help=(
        "Run ONNX backend node tests (folders with model.onnx and test_data_set_*/*.pb) "
        "of Flatten and Unsqueeze through onnxop; other operators are skipped. "
        "Exits 1 if any case fails.\n\n"
        "Example: onnxop conformance onnx/backend/test/data/node"
    ),
)
def conformance(
    ctx: typer.Context,
    dirs: Annotated[
        list[Path],
        typer.Argument(
            help="Node-test folders, or folders holding many. Example: node/test_flatten_axis0",
            show_default=False,
            metavar="DIR",
        ),
    ],
    backend: BackendOpt = None,
    debug: DebugOpt = False,
) -> int:
    from . import conformance as conf

    results = conf.run_all(dirs, _backend(ctx, backend))
    emit(conf.render(results), styled=False)
    failed = any(r.status == "failed" for r in results)
    return ExitCode.ERROR if failed else ExitCode.SUCCESS


@command(help="List the WebGPU adapters found, the one chosen, its limits and features.\n\nExample: onnxop info --backend vulkan")
def info(ctx: typer.Context, backend: BackendOpt = None, debug: DebugOpt = False) -> None:
    from .gpu import get_gpu, init_instance, list_adapters, resolve_backend

    name = resolve_backend(_backend(ctx, backend))
    init_instance([] if name == "auto" else [name])
    adapters = list_adapters()
    lines = [f"Adapters found ({'all backends' if name == 'auto' else name}):"]
    lines += [f"  - {a}  driver: {a.driver or '?'}" for a in adapters] or ["  (none)"]
    gpu = get_gpu(name)
    lines += ["", f"Chosen ({name}): {gpu.name}", "", "Limits:"]
    lines += [f"  {k} = {v}" for k, v in sorted(gpu.limits.items())]
    lines += ["", "Features:"]
    lines += [f"  {f}" for f in gpu.info.features] or ["  (none)"]
    emit("\n".join(lines), styled=False)


@command(
    name="doc-examples",
    help=(
        "List the examples of the ONNX operator pages (the Flatten and Unsqueeze pages "
        "shipped with onnxop, or the PAGE files given); --check runs each through the "
        "GPU kernels and compares it with the page and with numpy's reshape/expand_dims.\n\n"
        "Example: onnxop doc-examples --check"
    ),
)
def doc_examples(
    ctx: typer.Context,
    pages: Annotated[
        Optional[list[Path]],
        typer.Argument(
            help="ONNX operator pages (.rst source or saved web text); default: the shipped "
            "Flatten-25 and Unsqueeze-13 pages. Example: Flatten-11.rst",
            show_default=False,
            metavar="PAGE",
        ),
    ] = None,
    check: Annotated[
        bool,
        typer.Option("--check", help="Run every example on the GPU and compare with the page. Example: --check"),
    ] = False,
    name: Annotated[
        Optional[str],
        typer.Option(
            "--name",
            "-n",
            help="Select examples by name: a glob, or a substring when it has no * ? [. "
            "Example: --name 'test_cc_*'",
            metavar="PATTERN",
        ),
    ] = None,
    show: Annotated[
        bool, typer.Option("--show", help="Print each example as onnxop renders it. Example: --show")
    ] = False,
    full: FullOpt = False,
    backend: BackendOpt = None,
    debug: DebugOpt = False,
) -> int:
    from . import doccheck, docreport

    examples = docreport.select_or_fail(docreport.load_examples(pages), name)
    backend = _backend(ctx, backend)
    if not (check or show):
        _emit_table(*docreport.listing(examples))
        return ExitCode.SUCCESS
    if show:
        for i, ex in enumerate(examples):
            try:
                block = doccheck.rendered(ex, backend, full=full)
            except (doccheck.Skip, doccheck.Fail) as e:
                block = f"(not run: {e})"
            emit(("\n" if i else "") + docreport.show_title(ex), styled=False)
            emit(block)
    if not check:
        return ExitCode.SUCCESS
    if show:
        emit("", styled=False)
    outcomes = doccheck.check_all(examples, backend, contain=not debug)
    _emit_table(*docreport.results(outcomes))
    details = docreport.failure_details(outcomes)
    if details:
        emit("\n" + details, styled=False)
    emit(doccheck.summary_line(outcomes), styled=False)
    return ExitCode.SUCCESS if doccheck.all_passed(outcomes) else ExitCode.ERROR


def _emit_table(headers: list[str], rows: list[list[str]]) -> None:
    """A table to stdout: rich on a terminal, plain aligned text when piped."""
    from . import docreport

    if sys.stdout.isatty():
        _console().print(docreport.rich_table(headers, rows))
    else:
        emit(docreport.plain_table(headers, rows), styled=False)


@command(
    help=(
        "Measure copy bandwidth on the adapter: each copy kernel, copy_buffer_to_buffer, "
        "upload, readback and numpy memcpy, in GB/s, with the ratios kernel/copy and "
        "kernel/memcpy. Every kernel's output is verified byte for byte. Needs about "
        "2.5x the largest size in memory.\n\n"
        "Example: onnxop bench --sizes 16M,256M --json"
    ),
)
def bench(
    ctx: typer.Context,
    sizes: Annotated[
        str,
        typer.Option("--sizes", help="Comma-separated sizes (K, M, G = KiB, MiB, GiB). Example: --sizes 1M,16M", metavar="LIST"),
    ] = "1M,16M,256M,1G",
    repeats: Annotated[int, typer.Option("--repeats", help="Timed runs of each measure. Example: --repeats 9", metavar="N")] = 5,
    warmup: Annotated[int, typer.Option("--warmup", help="Untimed runs first. Example: --warmup 2", metavar="N")] = 1,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table. Example: --json")] = False,
    backend: BackendOpt = None,
    debug: DebugOpt = False,
) -> None:
    from .bench import parse_sizes, render_json, render_table, run_bench

    report = run_bench(_backend(ctx, backend), parse_sizes(sizes), repeats=repeats, warmup=warmup)
    emit(render_json(report) if json_out else render_table(report), styled=False)


# ------------------------------------------------------------------ entry


def main(argv: Optional[list[str]] = None) -> int:
    """Console entry point: every error is one line on stderr and an exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or bool(os.environ.get("ONNXOP_DEBUG"))
    code = run(argv, debug)
    sys.exit(code)


def run(argv: list[str], debug: bool = False) -> int:
    try:
        rv = app(args=argv, prog_name="onnxop", standalone_mode=False)
        return int(rv) if isinstance(rv, int) else ExitCode.SUCCESS
    except OnnxopError as e:
        if debug:
            raise
        error_line(e.message)
        return e.exit_code
    except typer.TyperException as e:  # click's usage errors
        if debug:
            raise
        error_line(_usage_line(e))
        return ExitCode.USAGE if getattr(e, "exit_code", 2) == 2 else e.exit_code
    except (KeyboardInterrupt, typer.Abort):
        error_line("interrupted")
        return ExitCode.INTERRUPTED
    except typer.Exit as e:
        return e.exit_code
    except OSError as e:
        if debug:
            raise
        where = f"{e.filename}: " if e.filename else ""
        error_line(f"{where}{e.strerror or e}")
        user_fixable = e.errno in (errno.ENOENT, errno.EACCES, errno.EISDIR, errno.ENOTDIR, errno.EPERM)
        return ExitCode.USAGE if user_fixable else ExitCode.ERROR
    except Exception as e:  # noqa: BLE001 - the last line of defence: no traceback
        if debug:
            raise
        error_line(f"internal error: {type(e).__name__}: {e} (run with --debug for the traceback)")
        return ExitCode.ERROR


def _usage_line(e: Exception) -> str:
    ctx = getattr(e, "ctx", None)
    where = ctx.command_path if ctx is not None else "onnxop"
    format_message = getattr(e, "format_message", None)
    text = format_message() if callable(format_message) else str(e)
    message = " ".join(str(text).split())
    return f"{message} (see '{where} --help')"
