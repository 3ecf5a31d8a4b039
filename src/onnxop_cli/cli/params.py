"""An operator's parameters as command-line options: the option each Param
becomes, how its text is parsed into the value make_node takes, the options
every operator command shares, and the command's signature built from its
spec (``register``). Used by ops.py (one command per spec) and tensor_ops.py
(the multi-input operators)."""

from __future__ import annotations

import inspect
from typing import Annotated, Optional

import typer

from . import options as cli
from ..errors import UsageError
from ..ops import LATEST_OPSET, OpSpec, Param
from .repeats import joined

INT64_RANGE = (-(1 << 63), (1 << 63) - 1)  # every ONNX integer attribute, and the int64 inputs options give
METAVARS = {"int": "INT", "ints": "LIST", "str": "NAME", "float": "NUMBER", "tensor": "LIST|FILE",
            "value": "NUMBER|FILE"}  # the last three: operators with tensor inputs (tensor_ops.py)


def parse(spec: OpSpec, param: Param, text: Optional[str]) -> object:
    """The option's text as the value make_node takes; None stays None."""
    if text is None:
        return None
    hint = f"(example: {param.option} {param.example})"
    if param.kind == "str":
        value = text.strip()
        if param.choices and value not in param.choices:
            raise UsageError(f"{spec.op_type}: {param.option} must be one of {', '.join(param.choices)}, got {text!r}")
        return value
    if param.kind == "int":
        try:
            return _in_int64(spec, param, int(text.strip()))
        except ValueError:
            if param.type_name:
                return _type_option(spec, param, text)
            raise UsageError(f"{spec.op_type}: {param.option} must be an integer, got {text!r} {hint}") from None
    text = joined(text)
    parts = [p.strip() for p in text.split(",")]
    if parts == [""]:
        if param.empty_ok:
            return []
        raise UsageError(f"{spec.op_type}: {param.name} must not be empty {hint}")
    number, noun = (float, "numbers") if param.kind == "floats" else (int, "integers")
    try:
        values = [number(p) for p in parts]
    except ValueError:
        raise UsageError(
            f"{spec.op_type}: {param.option} must be comma-separated {noun}, got {text!r} {hint}"
        ) from None
    return values if number is float else [_in_int64(spec, param, v) for v in values]


def _in_int64(spec: OpSpec, param: Param, value: int) -> int:
    """``value``, refused past int64, which every ONNX integer attribute and index is: a model could not
    hold it, and the plan would take it in one place and fail to print it in another."""
    lo, hi = INT64_RANGE
    if not lo <= value <= hi:
        raise UsageError(f"{spec.op_type}: {param.option} {value} is out of range [{lo}, {hi}] for int64")
    return value


def _type_option(spec: OpSpec, param: Param, text: str) -> int:
    """A type's TensorProto number from its name: ONNX's (float, bfloat16,
    float8e4m3fn) or numpy's and ml_dtypes' (float32, float8_e4m3fn)."""
    from ..core.tensor import type_number

    found = type_number(text)
    if found is None:
        raise UsageError(f"{spec.op_type}: {param.option} must be a type name or a TensorProto number, got "
                         f"{text!r} (example: {param.option} bfloat16, or {param.option} 16)")
    return found


def _choices(choices: tuple[str, ...]):
    return lambda: list(choices)


def required(spec: OpSpec, param: Param) -> bool:
    """Required by every version of the operator: then click says it is missing."""
    return all(param.name in v.params() and param.name not in v.optional for v in spec.versions)


def _option(spec: OpSpec, param: Param) -> inspect.Parameter:
    names = [param.option] + ([param.short] if param.short else [])
    kw = {"autocompletion": _choices(param.choices)} if param.choices else {}
    option = typer.Option(
        *names, help=param.help_text, show_default=False, metavar=METAVARS[param.kind], **kw
    )
    need = required(spec, param)
    # a list given twice accumulates (--axes 0 --axes 1); a single value must agree (repeats.py)
    kind = list[str] if param.kind == "ints" else str
    annotation = Annotated[kind if need else Optional[kind], option]
    default = inspect.Parameter.empty if need else None
    return inspect.Parameter(f"p_{param.name}", inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def _tensor_option(spec: OpSpec, param: Param) -> inspect.Parameter:
    """An option of an operator with tensor inputs (cli/tensor_ops.py): its text is
    read when the command runs (a list, a number or a file), so every one is
    an optional string, given once; ``--constant-value``, ``--x``."""
    kw = {"autocompletion": _choices(param.choices)} if param.choices else {}
    option = typer.Option(param.option, help=param.help_text, show_default=False, metavar=METAVARS[param.kind], **kw)
    annotation = Annotated[Optional[str], option]
    return inspect.Parameter(f"p_{param.name}", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)


def register(spec: OpSpec, run_op, *, panel: str, option=_option, common: Optional[dict] = None) -> None:
    """Make ``run_op(ctx, inputs, *, <spec's options>, <common options>)``
    the command of ``spec``: its signature (what typer reads: FILE..., an
    ``option(spec, param)`` per parameter as ``p_<name>``, then the shared
    options, each one named in ``common`` annotated as given there), name,
    help and panel, all from the spec."""
    from .app import command

    common = common or {}

    params = [
        inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context),
        inspect.Parameter("inputs", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=cli.InputsArg),
        *(option(spec, p) for p in spec.params),
        *(p.replace(annotation=common.get(p.name, p.annotation)) for p in _common()),
    ]
    run_op.__signature__ = inspect.Signature(params)
    run_op.__annotations__ = {p.name: p.annotation for p in params}
    run_op.__name__ = run_op.__qualname__ = spec.python_name
    run_op.__doc__ = spec.description
    command(
        name=spec.command,
        rich_help_panel=panel,
        short_help=spec.summary,
        help=f"{spec.description} Without -o the node is printed as the ONNX docs print examples.\n\n"
        f"Example: {spec.example}",
    )(run_op)


def _common() -> list[inspect.Parameter]:
    kw = inspect.Parameter.KEYWORD_ONLY
    return [
        inspect.Parameter("output", kw, default=None, annotation=cli.OutputOpt),
        inspect.Parameter("opset", kw, default=LATEST_OPSET, annotation=cli.OpsetOpt),
        inspect.Parameter("full", kw, default=False, annotation=cli.FullOpt),
        inspect.Parameter("member", kw, default=None, annotation=cli.MemberOpt),
        inspect.Parameter("parents", kw, default=False, annotation=cli.ParentsOpt),
        inspect.Parameter("fmt", kw, default=None, annotation=cli.FormatOpt),
        inspect.Parameter("keep_going", kw, default=False, annotation=cli.KeepGoingOpt),
        inspect.Parameter("any_type", kw, default=False, annotation=cli.AnyTypeOpt),
    ]
