"""The commands that are not operators: info, conformance, doc-examples
and bench (show is cli/show.py's, compare cli/compare.py's). They register
on cli's app when cli imports this module (before the operator commands of
cli_ops.py), so ``--help`` lists them as before.

Start-up matters here as in app.py: numpy, wgpu, onnx and rich are imported
inside the commands that need them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .app import command
from .options import (
    _input_argument,
    _backend,
    _kernels_used,
    _out,
    FullOpt,
)
from .help import ADAPTER, CHECKS
from ..errors import ExitCode, UsageError
from ..render.node import quote
from .console import Out, emit


@command(
    rich_help_panel=CHECKS,
    short_help="Run ONNX's backend node tests of the operators onnxop runs.",
    help=(
        "Run ONNX backend node tests (folders with model.onnx and test_data_set_*/*.pb) "
        "through onnxop; other operators are skipped. With no DIR, onnx's own node tests "
        "of every operator onnxop runs are built from the installed onnx package and run. "
        "Prints a line per case, a summary per operator and the total. "
        "--runtime runs the same cases through another runtime (onnxruntime, any onnx.backend module, "
        "onnxruntime-web's WebGPU provider in headless Chromium). "
        "Exits 1 if any case is wrong, no_error or error, or if none ran.\n\n"
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
            parser=lambda raw: _input_argument(raw),
        ),
    ] = None,
    op: Annotated[
        Optional[str],
        typer.Option("--op", help="Only the cases of this operator (Constant: its own, graph: several "
                     "nodes). Example: --op Reshape", show_default=False, metavar="NAME"),
    ] = None,
    runtime: Annotated[
        Optional[str],
        typer.Option("--runtime", help="What runs the cases: onnxop (the default), onnxruntime or "
                     "onnxruntime:PROVIDER, backend:MODULE (an onnx.backend module), ort-web or "
                     "ort-web-jsep (onnxruntime-web's WebGPU provider, C++ or JavaScript kernels, in "
                     "headless Chromium). Example: --runtime onnxruntime", show_default=False, metavar="NAME"),
    ] = None,
    ort_web: Annotated[
        Optional[Path],
        typer.Option("--ort-web", help="The onnxruntime-web package folder the ort-web runtimes load "
                     "(default: $ONNXOP_ORT_WEB). Example: --ort-web ort/node_modules/onnxruntime-web",
                     show_default=False, metavar="DIR"),
    ] = None,
) -> int:
    from ..docs import conformance as conf
    from ..render import json as report

    out = _out(ctx)
    quiet = out.quiet  # the global -q: here, only the failed cases and the total
    rt = conf.resolve(runtime, _backend(ctx), None if ort_web is None else str(ort_web))
    results = conf.run_all(dirs or [], _backend(ctx), op, rt)
    failed = any(r.status == "failed" for r in results)
    ran = any(r.status != "skipped" for r in results)
    code = ExitCode.ERROR if failed or not ran else ExitCode.SUCCESS
    about = getattr(rt, "about", "")  # the ort-web runtimes: versions, bundle, provider, adapter
    head = "" if rt.name == conf.DEFAULT else f"runtime: {rt.name}{f' ({about})' if about else ''}\n"
    why = None if ran else _nothing_ran(results, op, rt.name == conf.DEFAULT)
    out.result(head + _conformance_table(results, quiet=quiet) + (f"\n{why}" if why else ""), escaped=True)
    kernels = _kernels_used(_backend(ctx)) if rt.name == conf.DEFAULT else {"kernel": None, "schedules": {}}
    out.document(report.conformance_document(results, code, rt.name, conf.OUTCOMES) | kernels
                 | ({"runtime_about": about} if about else {}) | ({"message": why} if why else {}))
    return code


def _nothing_ran(results: list, op: str | None, onnxop_runs: bool) -> str:
    """Why a conformance run that ran no case fails, and what it looks for."""
    if not results:
        return f"nothing ran: none of the node tests found is a case of --op {quote(op)}"
    expected = ("conformance runs node tests: a folder holding model.onnx of operators onnxop runs and "
                "test_data_set_*/ with input_*.pb and output_*.pb (docs/commands.md); a model of other "
                "operators runs with onnxop run MODEL --others onnxruntime" if onnxop_runs else
                "the runtime ran none of them")
    return f"nothing ran: every case found was skipped ({len(results)}); {expected}"


@command(
    rich_help_panel=CHECKS,
    short_help="Write the edge-case corpus as node-test folders.",
    help=(
        "Write onnxop's edge-case corpus (indices at and past every edge, Concat and Split past 8 "
        "bindings, Pad in every mode, ranks 5 to 8, zero-size axes, NaN payloads and -0.0 in every "
        "float type, odd lengths of the packed types) into DIR, a new folder, as ordinary node-test "
        "folders: model.onnx and test_data_set_0/input_N.pb with output_N.pb, or expected_error.json "
        "where the spec requires an error. Run them with onnxop conformance DIR --runtime NAME. "
        "ACTION is write, or list (the cases' names and classes).\n\n"
        "Example: onnxop cases write edge-cases"
    ),
)
def cases(
    ctx: typer.Context,
    action: Annotated[str, typer.Argument(help="write or list. Example: write", metavar="ACTION")],
    folder: Annotated[
        Optional[Path],
        typer.Argument(help="Where write puts the case folders: a new folder. Example: edge-cases",
                       show_default=False, metavar="DIR"),
    ] = None,
    big: Annotated[
        bool,
        typer.Option("--big", help="Add the big cases: tensors past one 128 MiB binding, dispatches past "
                     "65,535 workgroups (about 1 GB on disk). Example: --big"),
    ] = False,
) -> int:
    from ..docs import cases as corpus
    from ..render import json as report

    out = _out(ctx)
    if action == "list":
        if folder is not None:
            raise UsageError("cases list takes no DIR")
        chosen = corpus.corpus(big)
        out.result("\n".join(f"{c.name}  {c.klass}  {c.op}{'  (error)' if c.error else ''}" for c in chosen),
                   escaped=True)
        out.document(report.base("cases") | {"cases": [corpus.entry(c) for c in chosen]})
        return ExitCode.SUCCESS
    if action != "write":
        raise UsageError(f"cases {action!r}: the actions are write and list")
    if folder is None:
        raise UsageError("cases write: give the folder to write into (e.g. onnxop cases write edge-cases)")
    written = corpus.write_atomic(folder, big)
    out.result(f"wrote {len(written)} cases to {str(folder)!r}", escaped=True)
    out.document(report.base("cases") | {"folder": str(folder), "written": [p.name for p in written]})
    return ExitCode.SUCCESS


@command(
    rich_help_panel=ADAPTER,
    short_help="List the WebGPU adapters, the one chosen, its limits.",
    help="List the WebGPU adapters found, the one chosen, its limits and features.\n\n"
    "Example: onnxop info --backend vulkan",
)
def info(
    ctx: typer.Context,
) -> None:
    from ..gpu import get_gpu, list_adapters
    from ..gpu.device import gpu_key, resolve
    from ..gpu.kernels import survey
    from ..gpu.choose import QUESTIONS, ask, choice

    engine, name = resolve(_backend(ctx))
    gpu = get_gpu(name, engine)  # creates the WebGPU instance for this backend, unless one exists
    adapters = list_adapters(engine)
    seen, kernels = survey(name, engine)
    lines = [f"Adapters found ({'all backends' if name == 'auto' else name}):"]
    lines += [f"  - {a}  driver: {a.driver or '?'}" for a in adapters] or ["  (none)"]
    out = _out(ctx)
    if out.json:
        from ..render import json as report

        doc = report.info_document(gpu_key(engine, name), adapters, gpu, engine=engine, kernels=kernels)
        schedules = {q: ask(gpu, q).document() for q in QUESTIONS}
        out.document(doc | {"kernel": choice(gpu).document(), "schedules": schedules})
        return
    lines += ["", f"Chosen ({name}): {gpu.name}", f"Engine: {engine}", f"Copy kernel: {choice(gpu).describe()}"]
    lines += ["Schedules:"] + [f"  {q}: {ask(gpu, q).describe()}" for q in QUESTIONS]
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
            parser=lambda raw: _input_argument(raw),
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
            help="Use the official examples of these operators (onnx's expect() cases, built from the "
            "installed onnx) instead of pages: a name, names separated by commas, or all. "
            "Example: --op Concat,Gather",
            show_default=False,
            metavar="OP",
        ),
    ] = None,
    full: FullOpt = False,
) -> int:
    from ..docs import check as doccheck, report as docreport

    if op is not None and pages:
        raise UsageError("give PAGE files or --op, not both")
    examples = docreport.select_or_fail(docreport.load_examples(pages, op), name)
    backend = _backend(ctx)
    out = _out(ctx)
    if out.json:
        return _doc_examples_json(out, examples, backend, check=check, show=show, full=full, contain=not (ctx.obj or {}).get("debug"))
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
    outcomes = doccheck.check_all(examples, backend, contain=not (ctx.obj or {}).get("debug"))
    _emit_table(*docreport.results(outcomes))
    details = docreport.failure_details(outcomes)
    if details:
        emit("\n" + details, styled=False)
    per_op = docreport.per_operator(outcomes)
    if op is not None and len(per_op) > 1:
        emit("\n".join(per_op), styled=False)
    emit(doccheck.summary_line(outcomes), styled=False)
    return ExitCode.SUCCESS if doccheck.all_passed(outcomes) else ExitCode.ERROR


def _doc_examples_json(out: Out, examples, backend, *, check: bool, show: bool, full: bool, contain: bool) -> int:
    from ..docs import check as doccheck, report as docreport

    shown = {}
    if show:
        for ex in examples:
            try:
                shown[id(ex)] = doccheck.rendered(ex, backend, full=full)
            except (doccheck.Skip, doccheck.Fail) as e:
                shown[id(ex)] = f"(not run: {e})"
    outcomes = doccheck.check_all(examples, backend, contain=contain) if check else None
    doc = docreport.doc_examples_document(examples, outcomes, shown) | _kernels_used(backend)
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
            help="Measure again which copy kernel and which schedules (the transpose kernel, ...) "
            "are fastest, and rewrite the cached choices. "
            "Example: onnxop bench --tune --sizes 16M",
        ),
    ] = False,
) -> None:
    from .bench import parse_sizes, run_bench
    from .bench_report import bench_document, render_table

    out = _out(ctx)
    chosen = parse_sizes(sizes) if sizes is not None else None
    pinned = bool((ctx.obj or {}).get("engine"))  # else every installed engine
    result = run_bench(
        _backend(ctx), chosen, repeats=repeats, warmup=warmup, tune=tune, pinned=pinned
    )
    out.result(render_table(result), escaped=True)
    out.document(bench_document(result))


def _conformance_table(results: list, *, terminal: bool | None = None, quiet: bool = False) -> str:
    """The table (tables.py: rich on a terminal, plain when piped), one
    summary line per operator and the ``N passed, M failed, K skipped`` line;
    a value not known is ``-``. ``quiet``: only the failed cases and the total."""
    from ..docs.conformance import per_operator, summary
    from . import tables

    if quiet:
        lines = [f"{r.name}: {r.operator or '-'}: {r.outcome}: {r.detail}" for r in results if r.status == "failed"]
        return "\n".join([*lines, summary(results)])

    header = ["case", "operator", "opset", "data sets", "result"]
    rows = [
        [r.name, _cell(r.operator), _cell(r.opset), _cell(r.data_sets), r.outcome + (f": {r.detail}" if r.detail else "")]
        for r in results
    ]
    cols = tables.columns(header, names=("case", "operator"), right=("opset", "data sets"), status=("result",))
    return "\n".join([tables.render(cols, rows, terminal=terminal), "", *per_operator(results), "", summary(results)])


def _cell(value: object) -> str:
    return "-" if value is None else str(value)
