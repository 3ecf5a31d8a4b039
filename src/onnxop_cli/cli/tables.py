"""One table style for every command (doc-examples, conformance, bench).

Piped or redirected, a table is plain text: columns padded with spaces, the
same bytes on every machine, so scripts and the README can rely on them. On a
terminal it is a rich table, coloured by result. Either way a *name* column
(an example, a case, a page) is never truncated nor wrapped: when the
terminal is narrow the other columns wrap at spaces (folding a long word),
and when even the names do not fit, the table is drawn wider than the
terminal (which wraps the lines) rather than cut. Cells are printed with
control characters escaped (``render.printable``). Returns text; never prints.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Sequence

from ..render.node import printable  # names come from files: no control characters reach the terminal

# A result cell is coloured by its first word.
STATUS_STYLE = {"passed": "green", "FAILED": "bold red", "failed": "bold red", "failed:": "bold red",
                "skipped": "yellow", "skipped:": "yellow"}
BORDERS = 3  # per column: a space of padding each side and a line (plus one line at the end)


@dataclass(frozen=True)
class Column:
    header: str
    right: bool = False  # numbers: aligned right
    name: bool = False  # names: never truncated nor wrapped
    status: bool = False  # results: coloured by STATUS_STYLE


def columns(headers: Sequence[str], *, names: Sequence[str] = (), right: Sequence[str] = (),
            status: Sequence[str] = ()) -> list[Column]:
    """Columns from header names; ``names``, ``right`` and ``status`` pick headers."""
    return [Column(h, right=h in right, name=h in names, status=h in status) for h in headers]


def render(cols: Sequence[Column], rows: Sequence[Sequence[str]], *, terminal: bool | None = None,
           width: int | None = None) -> str:
    """The table as text: rich (with colour codes) when ``terminal`` (default:
    stdout is a terminal), plain aligned text otherwise."""
    if terminal is None:
        terminal = sys.stdout.isatty()
    return rich_text(cols, rows, width=width) if terminal else plain(cols, rows)


def plain(cols: Sequence[Column], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded with spaces, two between them; trailing spaces dropped."""
    table = [[c.header for c in cols], *[[printable(str(v)) for v in r] for r in rows]]
    widths = [max(len(r[i]) for r in table) for i in range(len(cols))]
    lines = []
    for r in table:
        cells = [v.rjust(w) if c.right else v.ljust(w) for c, v, w in zip(cols, r, widths)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def rich_text(cols: Sequence[Column], rows: Sequence[Sequence[str]], *, width: int | None = None) -> str:
    """The rich table rendered for the terminal (colour codes included)."""
    from rich.markup import escape
    from rich.table import Table

    from .console import rich_console

    console = rich_console(highlight=False)
    width = width or console.width
    table = Table(header_style="bold")
    for i, c in enumerate(cols):
        longest = max([len(c.header), *(len(printable(str(r[i]))) for r in rows)])
        if c.name:
            table.add_column(c.header, no_wrap=True, min_width=longest, justify="right" if c.right else "left")
        else:
            table.add_column(c.header, overflow="fold", justify="right" if c.right else "left")
    for r in rows:
        cells = []
        for c, v in zip(cols, r):
            v = escape(printable(str(v)))
            style = STATUS_STYLE.get(v.split(" ", 1)[0]) if c.status and v else None
            cells.append(f"[{style}]{v}[/]" if style else v)
        table.add_row(*cells)
    # The names and the narrowest sensible other columns must fit, or the
    # table is drawn wider than the terminal: names are never cut.
    needed = sum(
        max([len(c.header), *(len(str(r[i])) for r in rows)]) if c.name else 1 for i, c in enumerate(cols)
    ) + BORDERS * len(cols) + 1
    console = rich_console(highlight=False, width=max(width, needed), color_system=console.color_system,
                      force_terminal=console.is_terminal)
    with console.capture() as captured:
        console.print(table, crop=False)
    return captured.get().rstrip("\n")
