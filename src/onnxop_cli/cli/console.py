"""Where a command's text goes: results to stdout (rich colour on a terminal,
the exact text when piped), one-line errors and warnings to stderr, and
the ``Out`` each command writes through (--json, --quiet, -o -)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Optional

if TYPE_CHECKING:
    from rich.text import Text


STREAM_BATCH = 1 << 16  # characters of a streamed result written at a time


def _console(stderr: bool = False):
    return rich_console(stderr=stderr, highlight=False, soft_wrap=True)


def rich_console(**options):
    """rich's Console, with a COLUMNS or LINES of 0 read as unset (the
    terminal's size, else 80 x 24): rich takes COLUMNS=0 for a width of 0
    and then prints nothing at all, so every value shown on a terminal was
    lost and the command still exited 0. Every Console onnxop makes is this."""
    import os
    import shutil

    from rich.console import Console

    for key, option in (("COLUMNS", "width"), ("LINES", "height")):
        value = os.environ.get(key, "")
        if option not in options and value.isdigit() and int(value) == 0:
            size = shutil.get_terminal_size()  # ignores a 0 in the environment too
            options[option] = size.columns if option == "width" else size.lines
    return Console(**options)


def emit(text: str, *, styled: bool = True, escaped: bool = False) -> None:
    """Result text to stdout: rich colour on a terminal, the exact text when piped
    (control characters from names in files escaped, newlines kept; ``escaped``
    text, a table from tables.py, is written as it is, colour codes included)."""
    from ..io.stdio import write_text
    from ..render.node import printable

    if escaped:
        write_text(text + "\n")
        return
    text = printable(text, keep="\n\t")
    if styled and sys.stdout.isatty():
        _console().print(stylize(text))
    else:
        write_text(text + "\n")


def error_line(message: str) -> None:
    from ..render.node import printable  # one line, whatever a file or path name holds

    _stderr_line(f"onnxop: error: {printable(message)}")


def _stderr_line(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr is gone too: the exit code still tells
        pass


@dataclass
class Out:
    """Where a command's output goes. Results go to stdout, as text or (with
    --json) as one document; when stdout carries a tensor (-o -) every human
    line goes to stderr instead; --quiet drops the 'wrote' lines and the
    progress bars."""

    json: bool = False
    quiet: bool = False
    data_on_stdout: bool = False
    lost: Optional[str] = None  # why the 'wrote' lines stopped reaching stdout

    def result(self, text: str, *, styled: bool = True, escaped: bool = False) -> None:
        """The command's printed result (a node, a table, a tensor)."""
        if self.json:
            return
        if self.data_on_stdout:
            from ..render.node import printable

            # the product is on stdout: a stderr that cannot take the line
            # (/dev/full, closed) loses a report, not the work
            _stderr_line(printable(text, keep="\n"))
        else:
            emit(text, styled=styled, escaped=escaped)

    def stream(self, lines: Iterable[str]) -> None:
        """A long result (``--full``) written line by line as it is made, so a
        reader (``| head``) sees the first lines at once and memory stays bounded."""
        if self.json:
            return
        from ..io.stdio import write_text
        from ..render.node import printable

        if self.data_on_stdout:
            for line in lines:
                sys.stderr.write(printable(line, keep="\t") + "\n")
            sys.stderr.flush()
            return
        batch: list[str] = []
        size = 0
        for line in lines:  # to stdout in batches, each written whole or failing (write_text)
            batch.append(printable(line, keep="\t") + "\n")
            size += len(batch[-1])
            if size >= STREAM_BATCH:
                write_text("".join(batch))
                batch, size = [], 0
        write_text("".join(batch))

    def note(self, text: str) -> None:
        """A line saying what was done ('... wrote b.npy'). It only reports:
        if stdout cannot take it, the work goes on (see ``warn_lost``)."""
        from ..io.stdio import StdoutError, reader_left

        if self.json or self.quiet or self.lost is not None:
            return
        try:
            self.result(text, styled=False)
        except StdoutError as e:
            # a reader that stopped reading (| head) chose to: no warning for it
            self.lost = "" if reader_left(e) else e.message

    def refused(self, text: str) -> None:
        """A job that --keep-going set aside: one line on stderr, as an error is
        (the --json document lists them too)."""
        from ..render.node import printable

        _stderr_line(f"onnxop: {printable(text)}")

    def warn_lost(self) -> None:
        """One line on stderr if 'wrote' lines were lost; the exit code stays the work's."""
        if self.lost:
            _stderr_line(f"onnxop: warning: {self.lost}; the 'wrote' lines were not printed, the outputs were written")

    def document(self, doc: dict) -> None:
        from ..render import json as report
        from ..io.stdio import write_text

        if self.json:
            write_text(report.dumps(doc) + "\n")


def stylize(text: str) -> Text:
    """The same text with colour for a terminal (the characters are unchanged)."""
    from rich.text import Text

    styled = Text(text)
    styled.highlight_regex(r"(?m)^(Node|Attributes|Inputs|Outputs):", "bold")
    styled.highlight_regex(r"(?m)^\s+\w[\w.\-]*(?=: shape=)", "bold cyan")
    styled.highlight_regex(r"shape=\([^)]*\)", "green")
    styled.highlight_regex(r"dtype=\S+", "magenta")
    styled.highlight_regex(r"(?m)^\s+\w+(?=\()", "bold yellow")
    return styled
