"""``onnxop --help``: commands grouped by panel, each with one example.

typer groups commands into panels (``rich_help_panel``) only when it renders
help with rich, and importing rich costs more start-up time than the whole
rest of ``onnxop --help``. So the panels are drawn here with click's plain
formatter: same grouping, no rich import. Every command and option carries
"Example: ..." in its help (tests/cli/test_help.py walks the tree to check), and
the listing shows each command's example under its summary.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand, TyperGroup

from .repeats import RefuseRepeats

OPERATORS = "Operators"
TENSOR_OPERATORS = "Operators of several tensors"
TENSORS = "Tensors"
CHECKS = "Checks"
ADAPTER = "Adapter"
PANELS = (OPERATORS, TENSOR_OPERATORS, TENSORS, CHECKS, ADAPTER)
OTHER = "Other commands"
LISTING_COLUMNS = 80

COMPLETION_HELP = {
    "install_completion": "Install tab completion for your shell (bash, zsh, fish, PowerShell); "
    "open a new shell to use it. Example: onnxop --install-completion",
    "show_completion": "Print the completion script, to install it by hand. "
    "Example: onnxop --show-completion >> ~/.bashrc",
}


def example_of(help_text: str | None) -> str | None:
    """The text after the first ``Example:`` of a help text."""
    for line in (help_text or "").splitlines():
        head, sep, rest = line.partition("Example:")
        if sep:
            return rest.strip()
    return None


def _help_with_example(option: Any, path: str) -> Any:
    if option is not None:
        option.help = f"Show this help and exit. Example: {path} --help"
    return option


class OnnxopCommand(RefuseRepeats, TyperCommand):
    """A command whose ``--help`` option, like every other, has an example,
    whose options refuse a second, different value (repeats.py), and whose
    usage line writes an argument that takes several values as ``FILE...``
    (typer writes ``{FILE}``, which reads as one)."""

    def get_help_option(self, ctx: Any) -> Any:
        return _help_with_example(super().get_help_option(ctx), f"onnxop {self.name}")

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            many = param.param_type_name == "argument" and param.nargs != 1
            pieces += [_many(p) if many else p for p in param.get_usage_pieces(ctx)]
        return pieces


def _many(piece: str) -> str:
    """``{FILE}`` -> ``FILE...``, ``[PAGE]`` -> ``[PAGE]...``."""
    if piece.startswith("{") and piece.endswith("}"):
        piece = piece[1:-1]
    return piece if piece.endswith("...") else piece + "..."


class OnnxopGroup(RefuseRepeats, TyperGroup):
    """The root: plain-text panels of commands, one example each."""

    def get_params(self, ctx: Any) -> list[Any]:
        # typer appends its completion options after the group is built
        params = super().get_params(ctx)
        for param in params:
            if param.name in COMPLETION_HELP:
                param.help = COMPLETION_HELP[param.name]
        return params

    def get_help_option(self, ctx: Any) -> Any:
        return _help_with_example(super().get_help_option(ctx), "onnxop")

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        panels: dict[str, list[tuple[str, Any]]] = {}
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is None or cmd.hidden:
                continue
            panel = getattr(cmd, "rich_help_panel", None) or OTHER
            panels.setdefault(panel, []).append((name, cmd))
        if not panels:
            return
        # one column for every panel but TENSOR_OPERATORS, whose long names (constant-of-shape) push
        # every other example past 80 columns: it takes its own
        shared = max(len(name) for p, cmds in panels.items() if p != TENSOR_OPERATORS for name, _ in cmds)
        order = [p for p in PANELS if p in panels] + [p for p in panels if p not in PANELS]
        for panel in order:
            width = max(len(name) for name, _ in panels[panel]) if panel == TENSOR_OPERATORS else shared
            with formatter.section(panel):
                for name, cmd in panels[panel]:
                    pad = " " * formatter.current_indent
                    # the listing fits 80 columns: a summary too long is cut (click adds "..."),
                    # an example too long for the column starts nearer the margin
                    room = max(20, LISTING_COLUMNS - len(pad) - width - 2)
                    summary = cmd.get_short_help_str(200)
                    if len(summary) > room:
                        summary = summary[: room - 3].rstrip() + "..."
                    formatter.write(f"{pad}{name.ljust(width)}  {summary}\n")
                    example = example_of(cmd.help)
                    if example:
                        line = f"{pad}{' ' * width}  Example: {example}"
                        if len(line) > LISTING_COLUMNS:
                            line = f"{pad}  Example: {example}"
                        formatter.write(line + "\n")
