"""``onnxop run MODEL``: a whole ONNX graph on one device (graph.py).

Inputs are files in graph-input order, ``--input NAME=FILE``, or a node
test's ``test_data_set_N/`` folder. Outputs keep the model's names: printed,
in ``--json``, inside the files written (``-o FILE`` for one output,
``-o DIR/`` for ``DIR/<name>.npy``, ``-o X.npz`` for members by name).
``--check test_data_set_N/`` compares with its ``output_*.pb`` bit for bit.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Optional

import typer

from . import options as cli
from .app import command
from ..errors import OnnxopError, UsageError
from .help import OPERATORS
from ..ops.nodekinds import OtherNodes, refused_nodes
from ..render.node import quote  # names and paths from files, in a line of text
from . import run_files
from .run_options import DumpOpt, OthersOpt, VerifyOpt

InputOpt = Annotated[
    Optional[list[str]],
    typer.Option("--input", "-i", help="A graph input by name (repeatable). Example: --input x=x.npy",
                 show_default=False, metavar="NAME=FILE"),
]
RunOutputOpt = Annotated[
    Optional[str],
    typer.Option("--output", "-o", help="Write the outputs, named as in the model: a file (.npy, .pb) for a "
                 "graph of one output, DIR/ for DIR/<name>.npy (.pb for types numpy lacks), X.npz for members "
                 "by name; - writes a .npy stream to stdout (--format: another format). Without it the graph is "
                 "printed. Example: -o out/",
                 show_default=False, metavar="PATH"),
]
CheckOpt = Annotated[
    Optional[Path],
    typer.Option("--check", help="Compare the outputs bit for bit with a node test's output_*.pb, or a "
                 "folder's <name>.npy/.pb files (exit 1 on a difference, naming the first element). "
                 "Example: --check test_data_set_0", show_default=False, metavar="DIR"),
]
@command(
    name="run",
    rich_help_panel=OPERATORS,
    short_help="Run the graph of an ONNX model on tensor files.",
    help=(
        "Run the graph of MODEL (any nodes onnxop runs, at the model's opset) on one device: "
        "chains of view operators are composed into one gather, intermediates stay on the GPU. "
        "Inputs are files in graph-input order, --input NAME=FILE, or a node test's "
        "test_data_set_N folder. Without -o the node (or graph) is printed.\n\n"
        "Example: onnxop run model.onnx x.npy -o y.npy"
    ),
)
def run_model(
    ctx: typer.Context,
    model_path: Annotated[
        Path, typer.Argument(help="An ONNX model. Example: model.onnx", show_default=False, metavar="MODEL",
                             parser=lambda raw: cli._input_argument(raw)),
    ],
    inputs: Annotated[
        Optional[list[Path]],
        typer.Argument(
            help="One tensor file (.npy, .npz or .pb) per graph input, in order, one .npz whose "
            "members are named by the inputs, or one test_data_set_N folder; - reads stdin. Example: x.npy shape.npy",
            show_default=False, metavar="INPUT", parser=lambda raw: cli._input_argument(raw),
        ),
    ] = None,
    named: InputOpt = None,
    output_text: RunOutputOpt = None,
    check: CheckOpt = None,
    full: cli.FullOpt = False,
    member: cli.MemberOpt = None,
    fmt: cli.FormatOpt = None,
    others: OthersOpt = None,
    verify: VerifyOpt = False,
    dump: DumpOpt = None,
) -> None:
    from ..core import graph
    from ..ops import model as onnx_model

    started = time.perf_counter()
    to_folder = output_text is not None and output_text.endswith("/")
    output = None if output_text is None else Path(output_text) if to_folder else cli._output_argument(output_text)
    out = cli._out(ctx)
    gpu_backend = cli._backend(ctx)
    cli.stdout_for_data(output, out)
    if fmt is not None:  # as every command that writes: what -o - writes, the files' suffix in -o DIR/
        from ..core.pack import check_format

        check_format(fmt, Path(".") if to_folder else output)
    m = onnx_model.load(model_path)
    if others is not None and others not in ("onnxruntime", "reference"):
        raise UsageError(f"--others takes onnxruntime or reference, got {others!r}")
    mixed = others is not None or verify or dump is not None
    if not mixed:  # the nodes onnxop does not run, by operator and type (float Add is not onnxop's): counted
        refused = refused_nodes(m)
        if refused is not None:
            from .run_mixed import refusal

            raise refusal(model_path, refused)
    try:
        if mixed:  # (the graph executor checks the names of a model it runs whole)
            from ..core.partition import check_values

            check_values(m)
        g = SimpleNamespace(inputs=onnx_model.graph_inputs(m)) if mixed else onnx_model.load_graph(m, model_path.parent)
    except OtherNodes as e:
        from .run_mixed import refusal

        raise refusal(model_path, e) from None
    except OnnxopError as e:
        raise e.reworded(f"{model_path}: {e.message}") from None
    if check is not None and output is not None:
        raise UsageError("--check compares the outputs and writes nothing; drop -o or --check")
    if full and (output is not None or out.json):
        raise UsageError("--full prints every value, and with -o or --json nothing is printed; drop --full")
    try:
        defaults = {v.name for v in m.graph.input} & {t.name for t in m.graph.initializer}
        files = run_files.input_files(g, list(inputs or []), named or [], defaults, by_member=member is None)
    except OnnxopError as e:
        raise e.reworded(f"{model_path}: {e.message}") from None
    # one file given for every input, one input or several (not a test_data_set folder's files, one an input)
    one_for_all = not named and len(inputs or []) == 1 and {str(p) for p in files.values()} == {str(inputs[0])}
    feeds = run_files.input_feeds(files, member, one_for_all=one_for_all, named=bool(named))
    if mixed:
        from .run_mixed import run_mixed

        return run_mixed(ctx, m, model_path, files, feeds, output=output, to_folder=to_folder, check=check,
                         full=full, others=others, verify=verify, dump=dump, started=started, fmt=fmt)
    try:
        # printed (no -o, --check or --full): no large value is made whole, only what is shown
        shown = output is None and check is None and (out.json or not full)
        p = graph.plan(g, feeds, backend=gpu_backend, shown=shown)
        declared = {v.name: v for v in m.graph.output}
        for v in p.outputs:  # as declared: before any output is opened
            graph.check_output(declared.get(v.name), v.dtype, v.shape)
    except OnnxopError as e:
        raise e.reworded(f"{model_path}: {e.message}") from None
    if check is not None:
        results, traffic = graph.run_to_memory(p, backend=gpu_backend)
        compared = run_files.check(g, results, check)  # the files' kind, not the inputs' files _document reads
        out.note(f"{_what(p)}: {len(results)} output(s) equal {quote(check)}'s {compared}, bit for bit")
        written = {}
    elif output is None:  # printed: a large output's summary is made, not the output (core/summary.py)
        from ..core.sources import MAP_THRESHOLD
        from ..core.summary import EDGE_ITEMS

        if full and not out.json:  # every value: a large output spilled to a mapped scratch file
            results, traffic = graph.run_to_memory(p, backend=gpu_backend, spill=True)
            shown = [(t.name, t.to_numpy(), False) for t in results]
        else:
            summaries, traffic = graph.run_to_summaries(p, threshold=MAP_THRESHOLD, edge=EDGE_ITEMS,
                                                         backend=gpu_backend)
            shown = [(v.name, values, summarised) for v, values, summarised in summaries]
        results = []
        if full and not out.json:  # every value: streamed line by line (a reader that leaves stops it at once)
            out.stream(_printed(p, feeds, shown, full))
        elif not out.json:
            out.result("\n".join(_printed(p, feeds, shown, full)))
        written = {}
    else:
        results, traffic, written = _write(p, output, gpu_backend, out, to_folder, fmt)
    if out.json:
        out.document(_document(p, files, feeds, results, written, traffic, gpu_backend,
                               time.perf_counter() - started))


# ------------------------------------------------------------------ outputs


def _write(p, output: Path, backend, out, to_folder: bool, fmt: Optional[str] = None):
    from contextlib import ExitStack

    from .. import io
    from ..core import graph

    kind, targets = run_files.targets(p.outputs, output, to_folder, fmt)
    run_files.prepare(kind, targets, p.outputs, output, fmt)
    if kind == "stdout":
        out.data_on_stdout = True
    written: dict[str, Path] = {}

    def wrote(v) -> None:
        from ..io.stdio import stdio_label

        out.note(f"{_what(p)}: {_described(p.graph, p)} -> {quote(v.name)} {tuple(v.shape)} {v.dtype}, "
                 f"wrote {quote(stdio_label(targets[v.name]))}")

    with ExitStack() as stack:
        shared = stack.enter_context(io.open_writer(output, fmt=fmt)) if kind in ("npz", "file", "stdout") else None

        def write(v, fill) -> None:
            with ExitStack() as own:
                writer = shared or own.enter_context(io.open_writer(targets[v.name]))
                if v.dtype.is_string:
                    writer.strings(v.name, v.base.strings, v.text_dtype)
                else:
                    with writer.tensor(v.name, v.shape, v.dtype) as sink:
                        fill(sink)
            written[v.name] = targets[v.name]
            if shared is None:  # in place now: said at once, so a run a signal ends names what it wrote
                wrote(v)

        traffic = graph.execute(p, write, backend=backend)
    if shared is not None:
        for v in p.outputs:
            wrote(v)
    return [], traffic, written


def _what(p) -> str:
    ops = [gn for gn in p.graph.nodes]
    if len(ops) == 1 and ops[0].op is not None:
        return ops[0].op.op_type
    return f"graph of {len(ops)} nodes"


def _described(g, p) -> str:
    """The data inputs of the line: a one-node model's data input, else every graph input."""
    values = {v.name: v for v in p.outputs}
    names = g.inputs
    if len(g.nodes) == 1 and g.nodes[0].op is not None:
        names = [g.nodes[0].proto.input[0]]
    feeds = p.feeds
    parts = []
    for n in names:
        t = feeds.get(n) or values.get(n)
        parts.append(f"{quote(n)} {tuple(t.shape)} {t.dtype}" if t is not None else quote(n))
    return ", ".join(parts)


# ------------------------------------------------------------------ printing and checking


def _printed(p, feeds, shown, full: bool):
    """The printout's lines, made as they are asked for. ``shown``: (name,
    values, summarised) per output, values being only a summary's elements
    when summarised (graph.run_to_summaries)."""
    from ..ops.tensor_nodes import is_tensor_op
    from ..render.node import Shown, node_lines, tensor_lines

    shown_out = [Shown(name, tuple(v.shape), v.dtype.name, values, summarised=summarised)
                 for v, (name, values, summarised) in zip(p.outputs, shown)]
    g = p.graph
    if len(g.nodes) == 1 and g.nodes[0].op is not None:
        proto, node = g.nodes[0].proto, p.nodes[0]
        if is_tensor_op(node.op):  # every tensor input, as the operator's own command prints them
            shown_in = [Shown(n, t.shape, t.dtype.name, t.to_numpy(native=False))
                        for n in proto.input if n for t in [_node_input(p, n)]]
            yield from node_lines(node, shown_in, shown_out, full=full)
            return
        if proto.input[0] in feeds:
            data = feeds[proto.input[0]]
            names = dict(zip(node.op.inputs[1:], proto.input[1:]))
            yield from node_lines(node, [Shown(proto.input[0], data.shape, data.dtype.name, data.to_numpy(native=False))],
                                  shown_out, full=full, names=names)
            return
    yield f"Graph: {len(g.nodes)} nodes, opset {g.opset}"
    for gn in g.nodes:
        yield (f"  {gn.label}: ({', '.join(map(quote, gn.proto.input))}) -> "
               f"({', '.join(map(quote, gn.proto.output))})")
    yield from ["", "Inputs:"]
    for name in g.inputs:
        t = feeds[name]
        yield from tensor_lines(Shown(name, t.shape, t.dtype.name, t.to_numpy(native=False)), full=full)
    yield from ["", "Outputs:"]
    for s in shown_out:
        yield from tensor_lines(s, full=full)


def _node_input(p, name: str):
    """A graph input's or an initializer's tensor, by name."""
    from ..io.tensorproto import tensor_from_proto

    if name in p.feeds:
        return p.feeds[name]
    g = p.graph
    return tensor_from_proto(g.initializers[name], g.folder, f"initializer {name!r}", name)


def _document(p, files, feeds, results, written, traffic, backend, total: float) -> dict:
    from ..gpu.device import opened
    from ..render import json as report

    g = p.graph
    single = len(g.nodes) == 1 and g.nodes[0].op is not None
    gpu = opened(backend)
    entries_in = [report.tensor_entry(feeds[n], files.get(n)) | {"name": n} for n in g.inputs]
    outs = [{"name": v.name, "path": str(written[v.name]) if v.name in written else None,
             "shape": list(v.shape), "dtype": v.dtype.name} for v in p.outputs]
    return report.base("run") | {
        "op": g.nodes[0].op.op_type if single else "graph",
        "opset": g.opset,
        "attributes": dict(p.nodes[0].attributes) if single else {},
        "backend": gpu.info.our_backend if gpu is not None else "host",
        "adapter": gpu.name if gpu is not None else "host",
        "runs": [{"inputs": entries_in, "outputs": outs, "timings": {"total": round(total, 6)}}],
        "timings": {"total": round(total, 6)},
        **cli._kernels_used(backend),
        "nodes": [{"name": gn.proto.name, "op": gn.proto.op_type,
                   "inputs": list(gn.proto.input), "outputs": list(gn.proto.output)} for gn in g.nodes],
        "gathers": len([s for s in p.steps if s.source is not None and (s.readers or s in p.runtime.made)])
        + p.runtime.input_gathers
        + sum(not v.dtype.is_string for v in p.outputs),
        "transfers": {"uploaded": traffic.uploaded, "read_back": traffic.read_back},
        # values a later node needed on the host (a shape from Shape/Concat), by name: bytes, within read_back
        "host_values": dict(traffic.host_values),
        "kernels": list(p.runtime.kernels),
    }
