"""``onnxop compare A B``: the command; the comparison is core/compare.py's,
the report render/compare.py's.

Exit codes: 0 the same, 1 different (or nothing paired), 2 unusable (a file
that cannot be read, a bad option): as ``cmp`` and ``diff`` have them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .app import command
from .options import _input_argument, _out
from .help import TENSORS
from ..errors import ExitCode, OnnxopError


@command(
    name="compare",
    rich_help_panel=TENSORS,
    short_help="Compare two tensor files or folders, element by element.",
    help=(
        "Compare A with B: exact by default (every element's bits, so NaN payloads and -0.0 "
        "count), or with --rtol/--atol or --ulp for floating types. A and B may be any "
        "formats onnxop reads (.pb against .npy, an .npz member against a file with -m), or "
        "two folders, whose .npy and .pb files are paired by file stem or by tensor name "
        "(a run's outputs against test_data_set_0/); a name without a partner is a "
        "difference unless --paired-only. Prints the count and the first "
        "differing elements with their indices, values and bits, and for floating types the "
        "largest |a-b|, relative error |a-b|/|b| and ulp distance. Exits 0 when the same, "
        "1 when different or when nothing was paired, 2 when a file cannot be used. The "
        "comparison runs on the host, in chunks of both files (it moves no data, so it needs "
        "no GPU).\n\n"
        "Example: onnxop compare out/y.npy test_data_set_0/output_0.pb\n\n"
        "Example: onnxop compare out/ test_data_set_0/ --paired-only"
    ),
)
def compare_cmd(
    ctx: typer.Context,
    a: Annotated[Path, typer.Argument(help="A tensor file or folder; - reads stdin. Example: y.npy",
                                      show_default=False, metavar="A", parser=lambda raw: _input_argument(raw))],
    b: Annotated[Path, typer.Argument(help="The tensor file or folder to compare A with. "
                                      "Example: output_0.pb", show_default=False, metavar="B",
                                      parser=lambda raw: _input_argument(raw))],
    member: Annotated[
        Optional[list[str]],
        typer.Option("--member", "-m", help="Compare only these tensors of an .npz, .onnx or folder "
                     "(a name or a glob; repeatable). Example: -m 'conv*'", show_default=False, metavar="NAME"),
    ] = None,
    rtol: Annotated[
        Optional[float],
        typer.Option("--rtol", help="Relative tolerance for floating types, as numpy.isclose "
                     "(|a-b| <= atol + rtol*|b|; NaN equals NaN). Example: --rtol 1e-5", show_default=False,
                     metavar="X"),
    ] = None,
    atol: Annotated[
        Optional[float],
        typer.Option("--atol", help="Absolute tolerance for floating types. Example: --atol 1e-8",
                     show_default=False, metavar="X"),
    ] = None,
    ulp: Annotated[
        Optional[int],
        typer.Option("--ulp", help="Accept real floats at most N representable values apart "
                     "(+0.0 and -0.0 are one; NaN equals NaN). Example: --ulp 1", show_default=False, metavar="N"),
    ] = None,
    paired_only: Annotated[
        bool,
        typer.Option("--paired-only", help="Folders and archives: compare the tensors that pair up by "
                     "name and count the others without failing on them (the last line says how many on "
                     "each side; nothing paired still exits 1). Example: onnxop compare out/ ds/ --paired-only"),
    ] = False,
    first: Annotated[
        int,
        typer.Option("--first", help="How many differing elements to list per pair. Example: --first 20",
                     metavar="N"),
    ] = 5,
) -> int:
    from ..core import compare as cmp
    from ..render import compare as comparetext
    from ..io.stdio import is_stdio

    from ..errors import UsageError

    out = _out(ctx)
    if is_stdio(a) and is_stdio(b):
        raise UsageError("compare: stdin can be read once; give - for A or for B, not both")
    if first < 0:
        raise UsageError(f"compare: --first must be >= 0, got {first}")
    rule = cmp.Rule(rtol=rtol, atol=atol, ulp=ulp)
    try:
        outcome = cmp.compare(a, b, rule, members=member or [], first=first, paired_only=paired_only)
    except OnnxopError as e:  # a file that cannot be used: 2, whatever the failure's own code
        e.exit_code = ExitCode.USAGE
        raise
    code = ExitCode.SUCCESS if outcome.same else ExitCode.ERROR
    out.result(comparetext.render(outcome))
    out.document(comparetext.document(outcome, code))
    return code
