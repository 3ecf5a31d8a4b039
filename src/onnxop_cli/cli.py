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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Optional

import typer

from .cli_help import ADAPTER, CHECKS, OPERATORS, TENSORS, OnnxopCommand, OnnxopGroup
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
        help="Input tensor files (.npy, .npz or .pb); - reads a .npy stream from stdin. "
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
        help="The array of an .npz input to use. Without it an .npz written to an .npz has "
        "every member processed. Example: --member weights",
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
QuietOpt = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        help="No progress bars and no 'wrote' lines; errors still go to stderr. Example: -q",
    ),
]


# ------------------------------------------------------------------ output


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def emit(text: str, *, styled: bool = True) -> None:
    """Result text to stdout: rich colour on a terminal, the exact text when piped
    (control characters from names in files escaped, newlines kept)."""
    from .render import printable

    text = printable(text, keep="\n\t")
    if styled and sys.stdout.isatty():
        from .render import stylize

        _console().print(stylize(text))
    else:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def error_line(message: str) -> None:
    from .render import printable  # one line, whatever a file or path name holds

    sys.stderr.write(f"onnxop: error: {printable(message)}\n")
    sys.stderr.flush()


@dataclass
class Out:
    """Where a command's output goes. Results go to stdout, as text or (with
    --json) as one document; when stdout carries a tensor (-o -) every human
    line goes to stderr instead; --quiet drops the 'wrote' lines and the
    progress bars."""

    json: bool = False
    quiet: bool = False
    data_on_stdout: bool = False

    def result(self, text: str, *, styled: bool = True) -> None:
        """The command's printed result (a node, a table, a tensor)."""
        if self.json:
            return
        if self.data_on_stdout:
            from .render import printable

            sys.stderr.write(printable(text, keep="\n") + "\n")
        else:
            emit(text, styled=styled)

    def note(self, text: str) -> None:
        """A line saying what was done ('... wrote b.npy')."""
        if not (self.json or self.quiet):
            self.result(text, styled=False)

    def document(self, doc: dict) -> None:
        from . import report

        if self.json:
            sys.stdout.write(report.dumps(doc) + "\n")
            sys.stdout.flush()


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


@app.callback()
def _global(
    ctx: typer.Context,
    backend: BackendOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    debug: DebugOpt = False,
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
    from .gpu.calibrate import force  # no wgpu at import: --help stays light

    force(kernel)  # every run sets it, so one in-process run does not leak into the next
    ctx.obj = {"backend": backend, "json": json_out, "quiet": quiet}


def _backend(ctx: typer.Context, backend: Optional[str]) -> Optional[str]:
    return backend or (ctx.obj or {}).get("backend")


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
) -> None:
    """Apply ``node`` to each input; -o is a file for one input, a folder for
    several, or - for stdout. An .npz input without --member contributes every
    member: into an .npz output (names kept) or to the printout; a single-array
    output refuses it. Prints a line per tensor, the node (without -o), or one
    JSON document for all of them."""
    from . import core, io, progress, report
    from .gpu import get_gpu
    from .io.stdio import is_stdio, stdio_label
    from .render import Shown, render_node
    from .tensor import MemoryBytes, StreamBytes

    started = time.perf_counter()
    _check_stdio(inputs, output, out)
    if len(inputs) > 1 and output is not None and not output.is_dir():
        raise UsageError(
            f"{output}: with {len(inputs)} inputs, -o must be an existing folder"
        )
    jobs = []
    for src in inputs:
        to_folder = output is not None and not is_stdio(output) and output.is_dir()
        target = output / src.name if to_folder else output
        many = target is None or io.is_archive(target)
        jobs.append((src, io.read_tensors(src, member) if many else [io.read_tensor(src, member)], target))
    # Refuse everything that can be refused before the GPU is touched.
    for _, tensors, target in jobs:
        for tensor in tensors:
            core.check(node, tensor, where=tensor.source or tensor.name)
            if target is not None:
                io.check_output(target, tensor.dtype, nbytes=tensor.nbytes)

    runs, adapter = [], ""

    def run_one(tensor, **kw):
        with progress.tracked(tensor.data, f"{node.op_type} {tensor.name}", quiet=out.quiet) as data:
            return core.apply(node, replace(tensor, data=data), backend=backend, **kw)

    for src, tensors, target in jobs:
        if target is None:
            blocks = []
            for tensor in tensors:
                if isinstance(tensor.data, StreamBytes):
                    # stdin can be read once: keep it to print the input as well
                    with progress.tracked(tensor.data, f"reading {tensor.name}", quiet=out.quiet) as data:
                        tensor = replace(tensor, data=MemoryBytes(data.to_array()))
                result = run_one(tensor, spill=True)  # printed: a large result is not kept in memory
                adapter = result.adapter if result.adapter != "host" else adapter
                runs.append(report.run_entry(result, src))
                if not out.json:
                    res = result.output
                    shown_in = Shown(tensor.name, tensor.shape, tensor.dtype.name, tensor.to_numpy())
                    shown_out = Shown(res.name, res.shape, res.dtype.name, res.to_numpy(), note=result.note)
                    blocks.append(render_node(node, [shown_in], [shown_out], full=full))
            if blocks:
                out.result("\n\n".join(blocks))
            continue
        with io.open_writer(target) as writer:
            results = [
                run_one(
                    t,
                    writer=writer,
                    out_path=None if is_stdio(target) else target,
                    out_name=node.op.outputs[0] if is_stdio(target) else io.output_name(t, target),
                )
                for t in tensors
            ]
        for result in results:
            tensor, res = result.input, result.output
            adapter = result.adapter if result.adapter != "host" else adapter
            runs.append(report.run_entry(result, src))
            note = f" ({result.note})" if result.note else ""
            out.note(
                f"{node.op_type}: {tensor.name} {_shape(tensor.shape)} {tensor.dtype} -> "
                f"{res.name} {_shape(res.shape)} {res.dtype}, wrote {stdio_label(target)}{note}"
            )
    if out.json:
        gpu = get_gpu(backend)
        out.document(
            report.op_document(
                command, node, opset, runs, backend=gpu.info.our_backend, adapter=adapter or gpu.name,
                total=time.perf_counter() - started,
            )
            | {"kernel": _kernel_used(backend)}
        )


def _kernel_used(backend) -> Optional[dict]:
    """For --json: the flat copy kernel that ran on ``backend``'s adapter in
    this process and why, or None if none did."""
    from .gpu.device import opened

    gpu = opened(backend)
    return gpu.kernel_used.document() if gpu is not None and gpu.kernel_used else None


def _check_stdio(inputs: list[Path], output: Optional[Path], out: Out) -> None:
    """What - (stdin, stdout) allows: one tensor each way, stdout not shared."""
    from .io.stdio import is_stdio

    if any(is_stdio(p) for p in inputs) and len(inputs) > 1:
        raise UsageError(f"-: stdin must be the only input (got {len(inputs)} inputs)")
    if is_stdio(output):
        if len(inputs) > 1:
            raise UsageError(f"-o -: stdout takes one tensor, got {len(inputs)} inputs; use -o FOLDER")
        if out.json:
            raise UsageError("-o - and --json both write to stdout; write the tensor to a file, or drop --json")
        out.data_on_stdout = True


def _shape(shape) -> str:
    return str(tuple(shape))


@command(
    rich_help_panel=OPERATORS,
    short_help="Flatten tensors to 2-D at --axis (ONNX Flatten).",
    help=(
        "Flatten each input to 2-D at --axis: (d0*...*d[axis-1], d[axis]*...*dn). "
        "Without -o the node is printed as the ONNX docs print examples.\n\n"
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
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    debug: DebugOpt = False,
    member: MemberOpt = None,
) -> None:
    from .ops import flatten_node

    node = flatten_node(parse_axis(axis), opset)
    _run_many(
        "flatten", node, opset, inputs, output, _backend(ctx, backend), full, _out(ctx, json_out, quiet), member
    )


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
    rich_help_panel=OPERATORS,
    short_help="Insert size-1 dimensions at --axes (ONNX Unsqueeze).",
    help=(
        "Insert size-1 dimensions at --axes of the output. "
        "Without -o the node is printed as the ONNX docs print examples.\n\n"
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
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    debug: DebugOpt = False,
    member: MemberOpt = None,
) -> None:
    from .ops import unsqueeze_node

    node = unsqueeze_node(parse_axes(axes), opset)
    _run_many(
        "unsqueeze", node, opset, inputs, output, _backend(ctx, backend), full, _out(ctx, json_out, quiet), member
    )


@command(
    rich_help_panel=CHECKS,
    short_help="Run ONNX backend node tests of Flatten and Unsqueeze.",
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
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    debug: DebugOpt = False,
) -> int:
    from . import conformance as conf
    from . import report

    out = _out(ctx, json_out, quiet)
    results = conf.run_all(dirs, _backend(ctx, backend))
    failed = any(r.status == "failed" for r in results)
    code = ExitCode.ERROR if failed else ExitCode.SUCCESS
    out.result(conf.render(results), styled=False)
    out.document(report.conformance_document(results, code) | {"kernel": _kernel_used(_backend(ctx, backend))})
    return code


@command(
    name="show",
    rich_help_panel=TENSORS,
    short_help="Print tensor files as the ONNX docs do, with min/max/mean.",
    help=(
        "Print every tensor of each FILE in the ONNX docs' layout (name, shape, dtype, "
        "values summarised above 100 elements) with min, max and mean for numeric types; "
        "no GPU needed.\n\n"
        "Example: onnxop show a.npy"
    ),
)
def show(
    ctx: typer.Context,
    files: Annotated[
        list[Path],
        typer.Argument(
            help="Tensor files (.npy, .npz or .pb); - reads a .npy stream from stdin. Example: a.npy",
            show_default=False,
            metavar="FILE",
        ),
    ],
    full: FullOpt = False,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    debug: DebugOpt = False,
) -> None:
    from . import io, progress, report
    from . import show as shown
    from .io.stdio import STDIN_NAME, is_stdio

    out = _out(ctx, json_out, quiet)
    if sum(is_stdio(f) for f in files) > 1:
        raise UsageError("-: stdin can be read once; give - only once")
    # Every header is read (and refused) before any value is loaded or printed.
    found = [(str(f), io.read_tensors(f)) for f in files]
    documents = []
    for i, (path, tensors) in enumerate(found):
        label = STDIN_NAME if is_stdio(path) else path
        entries = []
        for tensor in tensors:
            with progress.tracked(tensor.data, f"reading {label}", quiet=out.quiet) as data:
                values = replace(tensor, data=data).to_numpy()
            entries.append((tensor, values, shown.stats(values, tensor.dtype)))
        documents.append((path, [(t, s) for t, _, s in entries]))
        out.result(("\n" if i else "") + shown.render_file(label, entries, full=full))
    out.document(report.show_document(documents))


@command(
    rich_help_panel=ADAPTER,
    short_help="List the WebGPU adapters, the one chosen, its limits.",
    help="List the WebGPU adapters found, the one chosen, its limits and features.\n\n"
    "Example: onnxop info --backend vulkan",
)
def info(
    ctx: typer.Context,
    backend: BackendOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    debug: DebugOpt = False,
) -> None:
    from .gpu import get_gpu, list_adapters, resolve_backend
    from .gpu.calibrate import choice

    name = resolve_backend(_backend(ctx, backend))
    gpu = get_gpu(name)  # creates the WebGPU instance for this backend, unless one exists
    adapters = list_adapters()
    lines = [f"Adapters found ({'all backends' if name == 'auto' else name}):"]
    lines += [f"  - {a}  driver: {a.driver or '?'}" for a in adapters] or ["  (none)"]
    out = _out(ctx, json_out, quiet)
    if out.json:
        from . import report

        out.document(report.info_document(name, adapters, gpu) | {"kernel": choice(gpu).document()})
        return
    lines += ["", f"Chosen ({name}): {gpu.name}", f"Copy kernel: {choice(gpu).describe()}", "", "Limits:"]
    lines += [f"  {k} = {v}" for k, v in sorted(gpu.limits.items())]
    lines += ["", "Features:"]
    lines += [f"  {f}" for f in gpu.info.features] or ["  (none)"]
    emit("\n".join(lines), styled=False)


@command(
    name="doc-examples",
    rich_help_panel=CHECKS,
    short_help="List or check the examples of the ONNX operator pages.",
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
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    debug: DebugOpt = False,
) -> int:
    from . import doccheck, docreport

    examples = docreport.select_or_fail(docreport.load_examples(pages), name)
    backend = _backend(ctx, backend)
    out = _out(ctx, json_out, quiet)
    if out.json:
        return _doc_examples_json(out, examples, backend, check=check, show=show, full=full, contain=not debug)
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


def _doc_examples_json(out: Out, examples, backend, *, check: bool, show: bool, full: bool, contain: bool) -> int:
    from . import doccheck, report

    shown = {}
    if show:
        for ex in examples:
            try:
                shown[id(ex)] = doccheck.rendered(ex, backend, full=full)
            except (doccheck.Skip, doccheck.Fail) as e:
                shown[id(ex)] = f"(not run: {e})"
    outcomes = doccheck.check_all(examples, backend, contain=contain) if check else None
    doc = report.doc_examples_document(examples, outcomes, shown) | {"kernel": _kernel_used(backend)}
    out.document(doc)
    return doc["exit_code"]


def _emit_table(headers: list[str], rows: list[list[str]]) -> None:
    """A table to stdout: rich on a terminal, plain aligned text when piped."""
    from . import docreport

    if sys.stdout.isatty():
        _console().print(docreport.rich_table(headers, rows))
    else:
        emit(docreport.plain_table(headers, rows), styled=False)


@command(
    rich_help_panel=CHECKS,
    short_help="Measure copy bandwidth: kernels vs copy_buffer_to_buffer.",
    help=(
        "Measure copy bandwidth on the adapter: each copy kernel, copy_buffer_to_buffer, "
        "upload, readback and numpy memcpy, in GB/s, with the ratios kernel/copy and "
        "kernel/memcpy, in interleaved rounds, with the CPU time other processes took in "
        "each. Every kernel's output is verified byte for byte. Needs about 2.5x the "
        "largest size in memory; by default the sizes are those the free memory holds.\n\n"
        "Example: onnxop bench --sizes 16M,256M --json"
    ),
)
def bench(
    ctx: typer.Context,
    sizes: Annotated[
        Optional[str],
        typer.Option(
            "--sizes",
            help="Comma-separated sizes (K, M, G = KiB, MiB, GiB); default 1M,16M,256M,1G, less "
            "what free memory cannot hold. Example: --sizes 1M,16M",
            metavar="LIST",
            show_default=False,
        ),
    ] = None,
    repeats: Annotated[int, typer.Option("--repeats", help="Timed rounds. Example: --repeats 9", metavar="N")] = 5,
    warmup: Annotated[int, typer.Option("--warmup", help="Untimed runs first. Example: --warmup 2", metavar="N")] = 1,
    tune: Annotated[
        bool,
        typer.Option(
            "--tune",
            help="Measure which copy kernel is fastest again and rewrite the cached choice. "
            "Example: onnxop bench --tune --sizes 16M",
        ),
    ] = False,
    backend: BackendOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    debug: DebugOpt = False,
) -> None:
    from .bench import bench_document, parse_sizes, render_table, run_bench

    out = _out(ctx, json_out, quiet)
    chosen = parse_sizes(sizes) if sizes is not None else None
    result = run_bench(_backend(ctx, backend), chosen, repeats=repeats, warmup=warmup, tune=tune)
    out.result(render_table(result), styled=False)
    out.document(bench_document(result))


# ------------------------------------------------------------------ entry


def main(argv: Optional[list[str]] = None) -> int:
    """Console entry point: every error is one line on stderr and an exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or bool(os.environ.get("ONNXOP_DEBUG"))
    code = run(argv, debug)
    sys.exit(code)


def run(argv: list[str], debug: bool = False) -> int:
    """Run onnxop with ``argv``; every failure becomes one line on stderr (and,
    with --json, an error document on stdout) and an exit code."""
    as_json = _wants_json(argv)
    try:
        rv = app(args=argv, prog_name="onnxop", standalone_mode=False)
        return int(rv) if isinstance(rv, int) else ExitCode.SUCCESS
    except OnnxopError as e:
        if debug:
            raise
        return _fail(e.message, e.exit_code, argv, as_json)
    except typer.TyperException as e:  # click's usage errors
        if debug:
            raise
        if type(e).__name__ == "NoArgsIsHelpError":  # bare `onnxop`: the help, not a squashed line
            e.show()  # (matched by name, as typer does: the class lives in its vendored click)
            return ExitCode.USAGE
        code = ExitCode.USAGE if getattr(e, "exit_code", 2) == 2 else e.exit_code
        return _fail(_usage_line(e, argv), code, argv, as_json)
    except (KeyboardInterrupt, typer.Abort):
        return _fail("interrupted", ExitCode.INTERRUPTED, argv, as_json)
    except typer.Exit as e:
        return e.exit_code
    except SystemExit as e:
        # click's own exit: a reader that went away (onnxop show a.npy | head)
        # stops quietly with 1, as Unix tools do on SIGPIPE; completion exits 0.
        return e.code if isinstance(e.code, int) else int(e.code is not None)
    except OSError as e:
        if debug:
            raise
        where = f"{e.filename}: " if e.filename else ""
        user_fixable = e.errno in (errno.ENOENT, errno.EACCES, errno.EISDIR, errno.ENOTDIR, errno.EPERM)
        code = ExitCode.USAGE if user_fixable else ExitCode.ERROR
        return _fail(f"{where}{e.strerror or e}", code, argv, as_json)
    except Exception as e:  # noqa: BLE001 - the last line of defence: no traceback
        if debug:
            raise
        message = f"internal error: {type(e).__name__}: {e} (run with --debug for the traceback)"
        return _fail(message, ExitCode.ERROR, argv, as_json)


def _fail(message: str, code: int, argv: list[str], as_json: bool) -> int:
    """The one error line on stderr; with --json also the error document on stdout."""
    error_line(message)
    if as_json:
        from . import report

        sys.stdout.write(report.dumps(report.error(_command_in(argv), message, code)) + "\n")
        sys.stdout.flush()
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
