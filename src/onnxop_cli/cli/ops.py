"""One command per operator, generated from the op registry (``ops.SPECS``).

An operator's parameters become options (``--perm 2,0,1``); whether each is
an attribute or an input at the chosen opset is the registry's business
(``ops.make_node``). Every command takes the same files, -o, --opset and
output options and runs through ``cli._run_many``; its help (with an example
per option) and its JSON come from the spec, so an operator is added in one
place: its module in ``ops/``.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import options as cli
from .app import command
from .help import OPERATORS
from ..errors import UsageError
from ..ops import LATEST_OPSET, SPECS, OpSpec, Param
from .params import METAVARS, _choices, _common, _option, parse, required  # noqa: F401 - also imported from here

def add_command(spec: OpSpec) -> None:
    def run_op(
        ctx: typer.Context, inputs, *, output, opset, full, member, parents, fmt, keep_going, any_type,
        **given,
    ):
        from ..ops import make_node

        values = {p.name: parse(spec, p, given[f"p_{p.name}"]) for p in spec.params}
        node = make_node(spec.op_type, opset, **values)
        if any_type:
            from dataclasses import replace

            node = replace(node, any_type=True)
        out = cli._out(ctx)
        return cli._run_many(
            spec.command, node, opset, inputs, output, cli._backend(ctx), full, out, member, parents, fmt, keep_going
        )

    params = [
        inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context),
        inspect.Parameter("inputs", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=cli.InputsArg),
        *(_option(spec, p) for p in spec.params),
        *_common(),
    ]
    run_op.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run_op.__annotations__ = {p.name: p.annotation for p in params}
    run_op.__name__ = run_op.__qualname__ = spec.python_name
    run_op.__doc__ = spec.description
    command(
        name=spec.command,
        rich_help_panel=OPERATORS,
        short_help=spec.summary,
        help=f"{spec.description} Without -o the node is printed as the ONNX docs print examples.\n\n"
        f"Example: {spec.example}",
    )(run_op)


def _is_family(spec: OpSpec) -> bool:
    from ..ops.family import TensorOp

    return issubclass(spec.versions[0], TensorOp)


for _spec in SPECS.values():
    if _is_family(_spec):  # tensor inputs and several outputs: cli_family.py
        from . import family as cli_family

        cli_family.add_command(_spec)
    else:
        add_command(_spec)


@command(
    name="run",
    rich_help_panel=OPERATORS,
    short_help="Apply the node of a one-node ONNX model to tensor files.",
    help=(
        "Apply the one node of MODEL (any operator and opset onnxop runs) to tensor files: "
        "its attributes, its opset and its initializers come from the model, one INPUT file "
        "per graph input (in the model's order). Without -o the node is printed.\n\n"
        "Example: onnxop run model.onnx x.npy -o y.npy"
    ),
)
def run_model(
    ctx: typer.Context,
    model_path: Annotated[
        Path,
        typer.Argument(help="A one-node ONNX model. Example: model.onnx", show_default=False, metavar="MODEL",
                       parser=lambda raw: cli._input_argument(raw)),
    ],
    inputs: Annotated[
        Optional[list[Path]],
        typer.Argument(
            help="One tensor file (.npy, .npz or .pb) per graph input, in order; - reads stdin. "
            "Example: x.npy shape.npy",
            show_default=False,
            metavar="INPUT",
            parser=lambda raw: cli._input_argument(raw),
        ),
    ] = None,
    output: cli.OutputOpt = None,
    full: cli.FullOpt = False,
    member: cli.MemberOpt = None,
    fmt: cli.FormatOpt = None,
) -> int:
    from ..ops import model as onnx_model

    from ..errors import OnnxopError

    out = cli._out(ctx)
    model = onnx_model.load(model_path)
    try:
        node_proto, opset = onnx_model.the_node(model)
    except OnnxopError as e:
        raise type(e)(f"{model_path}: {e.message}") from None
    spec = SPECS.get(node_proto.op_type)
    if spec is not None and _is_family(spec):  # tensor inputs and several outputs: cli/family.py
        from . import family as cli_family

        names = onnx_model.graph_inputs(model)
        files = list(inputs or [])
        if len(files) != len(names):
            raise UsageError(
                f"{model_path}: the model has {len(names)} input(s) ({', '.join(names) or 'none'}), "
                f"{len(files)} file(s) were given"
            )
        cli_family.run_model(model, model_path, node_proto, opset, dict(zip(names, files)), output,
                             cli._backend(ctx), out, full)
        return 0
    node, opset, data = onnx_model.node_with_files(model_path, list(inputs or []))
    return cli._run_many("run", node, opset, [data], output, cli._backend(ctx), full, out, member, fmt=fmt)
