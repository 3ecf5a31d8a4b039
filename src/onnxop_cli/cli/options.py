"""The options the commands share (one Annotated type each, so every command
spells and documents them alike) and the steps every operator command takes:
the output console, the backend from both sides of the command, the batch.

No command is defined here; app.py has the typer app, main.py imports the
commands.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import UsageError
from . import op_results
from .console import Out
from .op_results import _kernels_used  # noqa: F401 - for --json, also imported from here


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
        help="WebGPU implementation: wgpu (default; env ONNXOP_ENGINE), dawn "
        "(pip install 'onnxop[dawn]') or browser (headless Chromium; pip install 'onnxop[browser]'). "
        "Example: --engine dawn",
        show_default=False,
        metavar="NAME",
        autocompletion=lambda: ["wgpu", "dawn", "browser"],
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
        parser=lambda raw: _output_argument(raw),  # the raw text: "" and a trailing / are refused
        metavar="PATH",
    ),
]


def _output_argument(raw: str, folder_ok: bool = False) -> Path:
    from ..io.atomic import output_argument

    return output_argument(raw, folder_ok)


PartsOutputOpt = Annotated[  # operators of several tensors, whose -o may be a new folder of parts
    Optional[Path],
    typer.Option(
        "--output",
        "-o",
        help="Write the result here (.npy, .npz or .pb); for several outputs a folder (parts/, made if "
        "need be: parts/x_0.npy, ...) or an .npz; - writes a .npy stream to stdout (--format: another "
        "format). Without it the node is printed. Example: -o parts/",
        parser=lambda raw: _output_argument(raw, folder_ok=True),
        metavar="PATH",
    ),
]


def _input_argument(raw: str) -> Path:
    from ..io.atomic import input_argument

    return input_argument(raw)


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
        parser=lambda raw: _input_argument(raw),
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
        "(schema in docs/json.md). Example: --json",
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
FormatOpt = Annotated[
    Optional[str],
    typer.Option(
        "--format",
        help="The format -o - writes to stdout (npy by default; pb carries every type: bfloat16, "
        "float8, 2- and 4-bit, strings), or of each file written into -o FOLDER "
        "(a.npy -> FOLDER/a.pb). Example: -o - --format pb",
        show_default=False,
        metavar="npy|npz|pb",
        autocompletion=lambda: ["npy", "npz", "pb"],
    ),
]

KeepGoingOpt = Annotated[
    bool,
    typer.Option(
        "--keep-going",
        "-k",
        help="In a batch, set aside the inputs that are refused (unreadable, a type the opset "
        "excludes), run the others, list the refused ones and exit 2. Example: --keep-going",
    ),
]

AnyTypeOpt = Annotated[
    bool,
    typer.Option(
        "--any-type",
        help="Run the operator's index map on a type its opset's type list excludes (float8, "
        "2- and 4-bit types in Slice, Tile, Expand, ...): the bytes move the same whatever the "
        "type. Said in the output and the JSON; never used by conformance. Example: --any-type",
    ),
]

RefusedAnyTypeOpt = Annotated[  # operators with tensor inputs: not offered, and refused in one line if given
    bool, typer.Option("--any-type", hidden=True, help=AnyTypeOpt.__metadata__[0].help),
]

KernelOpt = Annotated[
    Optional[str],
    typer.Option(
        "--kernel",
        envvar="ONNXOP_KERNEL",  # (a command's option filled from it is not typed: _merge_globals skips it)
        help="Force a copy kernel (storage, storage64, or one of their runs and unroll: onnxop info lists them) "
        "instead of the one measured fastest on this adapter. Example: onnxop --kernel storage flatten a.npy",
        show_default=False,
        metavar="NAME",
    ),
]



def _out(ctx: typer.Context, json_out: bool = False, quiet: bool = False) -> Out:
    """--json/--quiet, given before the command or after it (app.GLOBALS)."""
    obj = ctx.obj or {}
    return Out(json=json_out or obj.get("json", False), quiet=quiet or obj.get("quiet", False))


def _on_command_line(ctx: typer.Context, name: str) -> bool:
    """The option was typed, not taken from its environment variable or default."""
    return getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE"


def _backend(ctx: typer.Context, backend: Optional[str] = None, engine: Optional[str] = None) -> Optional[str]:
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
    fmt: Optional[str] = None,
    keep_going: bool = False,
) -> int:
    """Apply ``node`` to each input; -o is a file for one input, a folder for
    several, or - for stdout. An .npz input without --member contributes every
    member: into an .npz output (names kept) or to the printout; a single-array
    output refuses it. The batch is planned whole before anything is written
    (core/batch.py). Prints a line per tensor, the node (without -o), or one JSON
    document for all of them."""
    from ..core import batch

    started = time.perf_counter()
    op_results.refuse_full(full, output, out)
    _check_stdio(inputs, output, out)
    refused: Optional[list] = [] if keep_going else None
    jobs = batch.plan(node, inputs, output, member, parents=parents, backend=backend, fmt=fmt, refused=refused)
    runs = batch.run(jobs, batch.view_jobs(node, backend=backend, member=member, track=_tracker(out), full=full),
                     parents=parents)
    done = op_results.said(node, runs, out, full=full, titled=len(jobs) > 1)
    return op_results.finish(out, command, node, opset, done, backend, started, refused)


def _tracker(out: Out):
    """Progress bars on stderr for the batch's transfers (progress.py decides when)."""
    from . import progress

    return lambda source, label: progress.tracked(source, label, quiet=out.quiet)


def _check_stdio(inputs: list[Path], output: Optional[Path], out: Out) -> None:
    """What - (stdin, stdout) allows: one tensor each way, stdout not shared."""
    from ..io.stdio import is_stdio

    if any(is_stdio(p) for p in inputs) and len(inputs) > 1:
        raise UsageError(f"-: stdin must be the only input (got {len(inputs)} inputs)")
    if is_stdio(output) and len(inputs) > 1:
        raise UsageError(f"-o -: stdout takes one tensor, got {len(inputs)} inputs; use -o FOLDER")
    stdout_for_data(output, out)


def stdout_for_data(output, out: Out) -> None:
    """-o - makes stdout the tensor's, for every command that writes one: a
    --json document cannot share it, and the human lines go to stderr."""
    from ..io.stdio import is_stdio

    if is_stdio(output):
        if out.json:
            raise UsageError("-o - and --json both write to stdout; write the tensor to a file, or drop --json")
        out.data_on_stdout = True
