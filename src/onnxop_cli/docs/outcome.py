"""What checking one doc example gives: passed, failed or skipped, and why.

Shared by the two kinds of example: a page's (check.py) and an official
example of an operator with tensor inputs (expect.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .pages import Example


class Skip(Exception):
    """The example cannot be run; the message says why."""


class Fail(Exception):
    """The page disagrees with the spec or with itself; the message says how."""


@dataclass
class Outcome:
    example: Example
    status: str  # "passed", "failed" or "skipped"
    reason: str = ""  # one line
    details: list[str] = field(default_factory=list)  # expected vs actual
    output: str = ""  # "b (1, 120) float32", as onnxop produced it
    rendered: str = ""  # onnxop's block for the example, when it ran
    shown: str = ""  # "6/120": values the page prints / values in the output
    note: str = ""  # a passed example's note when it is not about the page's values
