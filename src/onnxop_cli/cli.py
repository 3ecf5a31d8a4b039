"""The typer app: parse, call the core, render, map errors to exit codes.

Start-up matters (``onnxop --help`` must stay fast), so numpy, wgpu, onnx and
rich are imported inside the commands that need them, never at module level.
"""

from __future__ import annotations

import errno
import functools
import itertools
import os
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Iterable, Optional

import typer

from .cli_help import ADAPTER, CHECKS, TENSORS, OnnxopCommand, OnnxopGroup
from .errors import ExitCode, Interrupted, OnnxopError, UsageError

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


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def emit(text: str, *, styled: bool = True, escaped: bool = False) -> None:
    """Result text to stdout: rich colour on a terminal, the exact text when piped
    (control characters from names in files escaped, newlines kept; ``escaped``
    text, a table from tables.py, is written as it is, colour codes included)."""
    from .render import printable

    if escaped:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
        return
    text = printable(text, keep="\n\t")
    if styled and sys.stdout.isatty():
        from .render import stylize

        _console().print(stylize(text))
    else:
        from .io.stdio import write_text

        write_text(text + "\n")


def error_line(message: str) -> None:
    from .render import printable  # one line, whatever a file or path name holds

    _stderr_line(f"onnxop: error: {printable(message)}")


def _stderr_line(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr is gone too: the exit code still tells
        pass


@dataclass
class Out:
    """Where a command's output goes. Results go to stdout, as text or (with
    --json) as one document; when stdout carries a tensor (-o -) every human
    line goes to stderr instead; --quiet drops the 'wrote' lines and the
    progress bars."""

    json: bool = False
    quiet: bool = False
    data_on_stdout: bool = False
    lost: Optional[str] = None  # why the 'wrote' lines stopped reaching stdout

    def result(self, text: str, *, styled: bool = True, escaped: bool = False) -> None:
        """The command's printed result (a node, a table, a tensor)."""
        if self.json:
            return
        if self.data_on_stdout:
            from .render import printable

            sys.stderr.write(printable(text, keep="\n") + "\n")
        else:
            emit(text, styled=styled, escaped=escaped)

    def stream(self, lines: Iterable[str]) -> None:
        """A long result (``--full``) written line by line as it is made, so a
        reader (``| head``) sees the first lines at once and memory stays bounded."""
        if self.json:
            return
        from .render import printable

        to = sys.stderr if self.data_on_stdout else sys.stdout
        for line in lines:
            to.write(printable(line, keep="\t") + "\n")
        to.flush()

    def note(self, text: str) -> None:
        """A line saying what was done ('... wrote b.npy'). It only reports:
        if stdout cannot take it, the work goes on (see ``warn_lost``)."""
        from .io.stdio import StdoutError

        if self.json or self.quiet or self.lost:
            return
        try:
            self.result(text, styled=False)
        except StdoutError as e:
            self.lost = e.message

    def warn_lost(self) -> None:
        """One line on stderr if 'wrote' lines were lost; the exit code stays the work's."""
        if self.lost:
            _stderr_line(f"onnxop: warning: {self.lost}; the 'wrote' lines were not printed, the outputs were written")

    def document(self, doc: dict) -> None:
        from . import report
        from .io.stdio import write_text

        if self.json:
            write_text(report.dumps(doc) + "\n")


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
        from . import report

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
    from .gpu.calibrate import force  # no wgpu at import: --help stays light

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
    from .gpu.device import gpu_key, resolve

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
    from . import batch, report
    from .gpu import get_gpu

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


@command(
    rich_help_panel=CHECKS,
    short_help="Run ONNX's backend node tests of the operators onnxop runs.",
    help=(
        "Run ONNX backend node tests (folders with model.onnx and test_data_set_*/*.pb) "
        "through onnxop; other operators are skipped. With no DIR, onnx's own node tests "
        "of every operator onnxop runs are built from the installed onnx package and run. "
        "Exits 1 if any case fails.\n\n"
        "Example: onnxop conformance"
    ),
)
def conformance(
    ctx: typer.Context,
    dirs: Annotated[
        Optional[list[Path]],
        typer.Argument(
            help="Node-test folders, or folders holding many (default: onnx's own node tests, "
            "built offline). Example: node/test_flatten_axis0",
            show_default=False,
            metavar="DIR",
        ),
    ] = None,
    backend: BackendOpt = None,
    engine: EngineOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    debug: DebugOpt = False,
) -> int:
    from . import conformance as conf
    from . import report

    out = _out(ctx, json_out, quiet)
    results = conf.run_all(dirs or [], _backend(ctx, backend, engine))
    failed = any(r.status == "failed" for r in results)
    code = ExitCode.ERROR if failed else ExitCode.SUCCESS
    out.result(conf.render(results), escaped=True)
    out.document(report.conformance_document(results, code) | {"kernel": _kernel_used(_backend(ctx, backend, engine))})
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
            help="Tensor files (.npy, .npz, .pb, or an .onnx model's initializers); - reads stdin "
            "(any of those but .onnx). Example: a.npy",
            show_default=False,
            metavar="FILE",
        ),
    ],
    full: FullOpt = False,
    hist: Annotated[
        bool,
        typer.Option("--hist", help="Also print a histogram of each tensor's values (10 bins). Example: --hist"),
    ] = False,
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
    for i, (path, tensors) in enumerate(io.releasing(found)):
        label = STDIN_NAME if is_stdio(path) else path
        entries, histograms = [], []
        for tensor in tensors:
            with progress.tracked(tensor.data, f"reading {label}", quiet=out.quiet) as data:
                values = replace(tensor, data=data).to_numpy()
            entries.append((tensor, values, shown.stats(values, tensor.dtype)))
            if hist:
                from .histogram import histogram

                histograms.append(histogram(values, tensor.dtype))
        documents.append((path, [(t, s) for t, _, s in entries], histograms))
        if full:  # every value: streamed line by line, not built first
            lines = shown.file_lines(label, entries, full=True, histograms=histograms)
            out.stream(itertools.chain([""] * bool(i), lines))
        else:
            out.result(("\n" if i else "") + shown.render_file(label, entries, histograms=histograms))
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
    engine: EngineOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    debug: DebugOpt = False,
) -> None:
    from .gpu import get_gpu, list_adapters
    from .gpu.device import gpu_key, resolve
    from .gpu.portability import survey
    from .gpu.calibrate import choice

    engine, name = resolve(_backend(ctx, backend, engine))
    gpu = get_gpu(name, engine)  # creates the WebGPU instance for this backend, unless one exists
    adapters = list_adapters(engine)
    seen, kernels = survey(name)
    lines = [f"Adapters found ({'all backends' if name == 'auto' else name}):"]
    lines += [f"  - {a}  driver: {a.driver or '?'}" for a in adapters] or ["  (none)"]
    out = _out(ctx, json_out, quiet)
    if out.json:
        from . import report

        doc = report.info_document(gpu_key(engine, name), adapters, gpu, engine=engine, kernels=kernels)
        out.document(doc | {"kernel": choice(gpu).document()})
        return
    lines += ["", f"Chosen ({name}): {gpu.name}", f"Engine: {engine}", f"Copy kernel: {choice(gpu).describe()}"]
    lines += ["", "Limits:"]
    lines += [f"  {k} = {v}" for k, v in sorted(gpu.limits.items())]
    lines += ["", "Features:"]
    lines += [f"  {f}" for f in gpu.info.features] or ["  (none)"]
    lines += ["", "Kernels, and the adapters of each engine that can run them:"]
    for kernel, need, able in kernels:
        lines.append(f"  {kernel.name} ({kernel.shader}; needs {', '.join(need.features) or 'no feature'}):")
        for eng, found in seen.items():
            names = found if isinstance(found, str) else ", ".join(str(a) for a in able if a.engine == eng) or "none"
            lines.append(f"    {eng}: {names}")
    emit("\n".join(lines), styled=False)


@command(
    name="doc-examples",
    rich_help_panel=CHECKS,
    short_help="List or check the examples of the ONNX operator pages.",
    help=(
        "List the examples of the ONNX operator pages (the Flatten and Unsqueeze pages "
        "shipped with onnxop, the PAGE files given, or with --op the official examples of "
        "any operator onnxop runs); --check runs each through the GPU kernels and compares "
        "it with the page and with a reference (numpy, or onnx's reference evaluator).\n\n"
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
    op: Annotated[
        Optional[str],
        typer.Option(
            "--op",
            help="Use the official examples of this operator (onnx's expect() cases, built from the "
            "installed onnx) instead of pages. Example: --op Transpose",
            show_default=False,
            metavar="OP",
        ),
    ] = None,
    full: FullOpt = False,
    backend: BackendOpt = None,
    engine: EngineOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    debug: DebugOpt = False,
) -> int:
    from . import doccheck, docreport

    if op is not None and pages:
        raise UsageError("give PAGE files or --op, not both")
    examples = docreport.select_or_fail(docreport.load_examples(pages, op), name)
    backend = _backend(ctx, backend, engine)
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
    """A doc-examples table to stdout (tables.py: rich on a terminal, plain when piped)."""
    from . import tables

    cols = tables.columns(headers, names=("page", "example"), status=("result",))
    emit(tables.render(cols, rows), escaped=True)


@command(
    rich_help_panel=CHECKS,
    short_help="Measure copy bandwidth: kernels vs copy_buffer_to_buffer.",
    help=(
        "Measure copy bandwidth on the adapter: each copy kernel, copy_buffer_to_buffer, "
        "upload, readback and numpy memcpy, in GB/s, with the ratios kernel/copy and "
        "kernel/memcpy, in interleaved rounds, with the CPU time other processes took in "
        "each. Runs wgpu and Dawn side by side when both are installed (--engine: one). "
        "Every kernel's output is verified byte for byte. Needs about 2.5x the "
        "largest size in memory per engine; by default the sizes are those the free memory holds.\n\n"
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
    engine: EngineOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    debug: DebugOpt = False,
) -> None:
    from .bench import bench_document, parse_sizes, render_table, run_bench

    out = _out(ctx, json_out, quiet)
    chosen = parse_sizes(sizes) if sizes is not None else None
    pinned = bool(engine or (ctx.obj or {}).get("engine"))  # else every installed engine
    result = run_bench(
        _backend(ctx, backend, engine), chosen, repeats=repeats, warmup=warmup, tune=tune, pinned=pinned
    )
    out.result(render_table(result), escaped=True)
    out.document(bench_document(result))


from . import cli_ops  # noqa: E402,F401 - one command per operator, from the registry

# ------------------------------------------------------------------ entry


def main(argv: Optional[list[str]] = None) -> int:
    """Console entry point: every error is one line on stderr and an exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or bool(os.environ.get("ONNXOP_DEBUG"))
    from . import signals
    from .io import stdio

    stdio.guard_standard_fds()  # before any file is opened: a closed fd 1 must not become an output
    signals.install()
    try:
        code = run(argv, debug)
    except Interrupted as e:  # came just as run() returned: it ends the run all the same
        code = _fail(e.message, e.exit_code, argv, _wants_json(argv))
    signals.settle()  # the outcome is decided: a signal from here on cannot change it
    stdio.settle_stdout()
    sys.exit(code)


def run(argv: list[str], debug: bool = False) -> int:
    """Run onnxop with ``argv``; every failure becomes one line on stderr (and,
    with --json, an error document on stdout) and an exit code."""
    from . import signals
    from .batch import BatchFailed

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
        from . import report
        from .io.stdio import StdoutError, write_text

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
