"""What the one checker (check.py) takes and gives: a Case, read from a
printed page (page_cases.py) or from onnx's node tests (expect.py), and the
Outcome of checking it: passed, failed or skipped, and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core.tensor import Tensor
    from ..ops import Node
    from .pages import Example


class Skip(Exception):
    """The example cannot be run; the message says why."""


class Fail(Exception):
    """The example or node test disagrees (with the spec, its page or its
    expected outputs), or could not run; ``outcome`` says how for conformance
    (``wrong``: other bytes; ``no_error``; ``error``: refused, or the case
    itself is broken); ``output``: the output that differs, if one does."""

    def __init__(self, detail: str, outcome: str = "error", output: str | None = None) -> None:
        super().__init__(detail)
        self.outcome, self.output = outcome, output


@dataclass
class Case:
    """An example as the checker runs it, whichever reader made it."""

    node: Node
    inputs: list  # the tensors the node runs on (None: an optional input left out)
    expected: list[Tensor]  # every output, held to bit for bit
    names: list[str]  # the outputs' names
    against: str  # what the expected outputs are: "the reference", "the example's expected output"
    shown: list[Tensor]  # the inputs a rendering of the example shows
    constants: dict[str, str] = field(default_factory=dict)  # the page's names of constant inputs, by schema name
    refused: str = ""  # why there is no expected output (the reference refuses the example)


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
