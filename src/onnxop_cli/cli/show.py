"""``onnxop show``: tensor files as the ONNX docs print them, filtered with
-m, as a one-line-per-tensor table with --brief, and a model's graph with
--graph (render/graph.py). Needs no GPU: it only reads."""

from __future__ import annotations

import fnmatch
import itertools
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Optional

import typer

from .app import command
from .options import FullOpt, _input_argument, _out
from .help import TENSORS
from ..errors import UsageError
from ..render.node import quote  # names and paths from files, in a line of text


@command(
    name="show",
    rich_help_panel=TENSORS,
    short_help="Print tensor files as the ONNX docs do, with min/max/mean.",
    help=(
        "Print every tensor of each FILE in the ONNX docs' layout (name, shape, dtype, "
        "values summarised above 100 elements) with min, max and mean for numeric types; "
        "-m picks tensors by name, --brief prints one line each, --graph an .onnx model's "
        "inputs, outputs and nodes. No GPU needed.\n\n"
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
            parser=lambda raw: _input_argument(raw),  # "" and a trailing / refused, as for every input
        ),
    ],
    full: FullOpt = False,
    hist: Annotated[
        bool,
        typer.Option("--hist", help="Also print a histogram of each tensor's values (10 bins). Example: --hist"),
    ] = False,
    member: Annotated[
        Optional[list[str]],
        typer.Option("--member", "-m", help="Only the tensors with this name (an .npz member, an initializer, "
                     "a .pb's tensor; a glob; repeatable). Example: -m 'conv*.weight'", show_default=False,
                     metavar="NAME"),
    ] = None,
    brief: Annotated[
        bool,
        typer.Option("--brief", help="One line per tensor: name, shape, dtype, min, max, mean. Example: --brief"),
    ] = False,
    precision: Annotated[
        Optional[int],
        typer.Option("--precision", help="Digits of the floating values printed, as numpy's print option "
                     "(default 8). Example: --precision 3", show_default=False, metavar="N"),
    ] = None,
    edgeitems: Annotated[
        Optional[int],
        typer.Option("--edgeitems", help="Values printed at each end of a summarised axis, as numpy's "
                     "print option (default 3). Example: --edgeitems 5", show_default=False, metavar="N"),
    ] = None,
    graph: Annotated[
        bool,
        typer.Option("--graph", help="For an .onnx model: its inputs, outputs (shape, dtype) and nodes "
                     "(operator, opset, attributes) instead of its initializers. Example: --graph"),
    ] = False,
) -> None:
    from .. import io
    from . import progress
    from ..render import graph as graphview
    from ..render import json as report
    from ..core.sources import MAP_THRESHOLD, FileBytes
    from ..render import show as shown
    from ..io.onnxmodel import NoInitializers, load_model
    from ..io.stdio import STDIN_NAME, is_stdio

    out = _out(ctx)
    _refuse_combinations(full=full, hist=hist, brief=brief, precision=precision, edgeitems=edgeitems, graph=graph,
                         member=member)
    if sum(is_stdio(f) for f in files) > 1:
        raise UsageError("-: stdin can be read once; give - only once")
    # Every header is read (and refused) before any value is loaded or printed.
    found = []  # (path, tensors, graph document or None)
    for f in files:
        if graph:
            if is_stdio(f) or Path(f).suffix.lower() != ".onnx":
                raise UsageError(f"{f}: --graph shows an ONNX model's graph; give an .onnx file")
            found.append((str(f), [], graphview.describe(load_model(f))))
            continue
        try:
            tensors = io.read_tensors(f)
        except NoInitializers as e:  # nothing to print but what the model takes and gives
            found.append((str(f), [], graphview.describe(e.model)))
            continue
        found.append((str(f), _select(tensors, member), None))
    if member and not any(t or g for _, t, g in found):
        raise UsageError(f"-m {' '.join(member)}: no tensor of {', '.join(map(str, files))} has such a name")
    found = [entry for entry in found if entry[1] or entry[2] is not None]
    if edgeitems is not None and not brief:
        for path, tensors, _ in found:
            for t in tensors:
                _refuse_a_summary_too_large(t, edgeitems, STDIN_NAME if is_stdio(path) else path)
    documents, graphs = [], []
    for i, (path, tensors, model) in enumerate(io.releasing(found)):
        label = STDIN_NAME if is_stdio(path) else path
        graphs.append(model)
        if model is not None:
            note = "" if graph else "\n  (no initializers: the model's inputs and outputs)"
            out.result(("\n" if i else "") + graphview.render(label, model, nodes=graph) + note)
            documents.append((path, [], []))
            continue
        entries, histograms = [], []
        for tensor in tensors:
            # a large file's tensor is mapped for what is printed, and its statistics (and --hist's two passes)
            # are read slice by slice, not through the map: the bar counts those reads, and the map is not
            # read through the bar (which would read the whole file into memory)
            large = isinstance(tensor.data, FileBytes) and tensor.data.nbytes >= MAP_THRESHOLD
            reads = 1 + 2 * bool(hist and large)
            with progress.tracked(tensor.data, f"reading {label}", quiet=out.quiet, reads=reads) as data:
                # printed: no copy of a big-endian file
                values = replace(tensor, data=tensor.data if large else data).to_numpy(native=False)
                statistics = shown.file_stats(tensor, data) if large else shown.stats(values, tensor.dtype)
                if hist:
                    from ..render.histogram import histogram

                    parts = (lambda: shown.file_slices(tensor, data)) if large else None
                    histograms.append(histogram(values, tensor.dtype, parts=parts))
            entries.append((tensor, values, statistics))
        documents.append((path, [(t, s) for t, _, s in entries], histograms))
        if brief:
            from . import tables

            cols = tables.columns(shown.BRIEF_HEADERS, names=("name",), right=("min", "max", "mean"))
            text = tables.render(cols, shown.brief_rows(entries))
            out.result(("\n" if i else "") + f"{quote(label)}:\n" + text, escaped=True)
        elif full:  # every value: streamed line by line, not built first
            lines = shown.file_lines(label, entries, full=True, histograms=histograms)
            out.stream(itertools.chain([""] * bool(i), lines))
        else:
            text = shown.render_file(label, entries, histograms=histograms, precision=precision, edgeitems=edgeitems)
            out.result(("\n" if i else "") + text)
    doc = report.show_document(documents)
    for entry, model in zip(doc["files"], graphs):
        if model is not None:
            entry["graph"] = model
    out.document(doc)


def _select(tensors: list, patterns: Optional[list[str]]) -> list:
    """The tensors whose name matches one of the globs (all without any)."""
    if not patterns:
        return tensors
    kept = [t for t in tensors if any(fnmatch.fnmatchcase(t.name, p) for p in patterns)]
    for t in tensors:
        if t not in kept:
            t.close()
    return kept


SHOWN_LIMIT = 1 << 18  # values a summary prints at once: numpy builds its text whole, ~500 bytes a value


def _refuse_a_summary_too_large(tensor, edgeitems: int, label) -> None:
    """--edgeitems N as large as a big tensor's axes printed it whole through
    numpy's array2string, which builds the text at once: 10**7 float32s
    (--edgeitems 10000000) took 4.6 GB and minutes before it was stopped."""
    import math

    from ..render.node import quote
    from ..render.values import SUMMARY_THRESHOLD

    shape = tensor.shape
    count = math.prod(shape)
    shown = math.prod(min(d, 2 * edgeitems) for d in shape) if count > SUMMARY_THRESHOLD else count
    if shown > SHOWN_LIMIT:
        raise UsageError(f"{quote(str(label))}: --edgeitems {edgeitems} would print {shown} values of "
                         f"{quote(tensor.name)} at once (at most {SHOWN_LIMIT}); --full prints every value, "
                         f"streamed")


def _refuse_combinations(*, full, hist, brief, precision, edgeitems, graph, member) -> None:
    for name, value in (("--precision", precision), ("--edgeitems", edgeitems)):
        if value is not None and value < 0:
            raise UsageError(f"{name} must be >= 0, got {value}")
        if value is not None and full:
            raise UsageError(f"{name} shapes the summary, and --full prints every value as numpy's defaults do; "
                             f"drop one")
    if brief and (full or hist):
        raise UsageError(f"--brief prints one line per tensor; drop {'--full' if full else '--hist'}")
    if graph and (full or hist or brief or member):
        given = "--full" if full else "--hist" if hist else "--brief" if brief else "-m"
        raise UsageError(f"--graph prints a model's graph, not its tensors; drop {given}")
