"""One command per operator, generated from the op registry (``ops.SPECS``).

An operator's parameters become options (``--perm 2,0,1``); whether each is
an attribute or an input at the chosen opset is the registry's business
(``ops.make_node``). Every command takes the same files, -o, --opset and
output options and runs through ``cli._run_many``; its help (with an example
per option) and its JSON come from the spec, so an operator is added in one
place: its module in ``ops/``.
"""

from __future__ import annotations

import typer

from . import options as cli
from .help import OPERATORS
from ..ops import SPECS, OpSpec
from ..ops.tensor_nodes import is_tensor_op
from .params import METAVARS, _choices, _common, _option, parse, register, required  # noqa: F401 - also imported from here


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

    register(spec, run_op, panel=OPERATORS)


for _spec in SPECS.values():
    if is_tensor_op(_spec.versions[0]):  # tensor inputs and several outputs: cli/tensor_ops.py
        from . import tensor_ops

        tensor_ops.add_command(_spec)
    else:
        add_command(_spec)
