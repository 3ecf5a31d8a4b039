"""An operator's parameters as command-line options: the option each Param
becomes, how its text is parsed into the value make_node takes, and the
options every operator command shares. Used by ops.py (one command per
spec) and family.py (the multi-input operators)."""

from __future__ import annotations

import inspect
from typing import Annotated, Optional

import typer

from . import options as cli
from ..errors import UsageError
from ..ops import LATEST_OPSET, OpSpec, Param
from .repeats import joined

METAVARS = {"int": "INT", "ints": "LIST", "str": "NAME"}


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
            return int(text.strip())
        except ValueError:
            raise UsageError(f"{spec.op_type}: {param.option} must be an integer, got {text!r} {hint}") from None
    text = joined(text)
    parts = [p.strip() for p in text.split(",")]
    if parts == [""]:
        if param.empty_ok:
            return []
        raise UsageError(f"{spec.op_type}: {param.name} must not be empty {hint}")
    try:
        return [int(p) for p in parts]
    except ValueError:
        raise UsageError(
            f"{spec.op_type}: {param.option} must be comma-separated integers, got {text!r} {hint}"
        ) from None


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
