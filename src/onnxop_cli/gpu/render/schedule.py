"""The renderer's schedules, as data: which invocation makes which output.

``Elements`` (gpu/render/elementwise.py)
    one output element, or one word of packed narrower elements, per
    invocation, behind a bounds test.
``Words`` (gpu/render/select.py, gpu/render/one_hot.py)
    ``words`` whole output words per invocation, read and written as
    ``vec4<u32>`` (one load for four words, the CPU drivers' costliest
    instruction), ``wg`` invocations a workgroup, and one of the kernel's
    bodies (``variant``). A kernel (``OnWords``) declares its bodies; each
    starts at its invocation's first word (``head``) and walks its words a
    vector at a time (``loop``).
``Runs`` (gpu/render/copy.py)
    runs of ``run`` neighbouring invocations, ``unroll`` steps each, of
    ``word``-typed words, over whole padded workgroup spans (no bounds test).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar

from .frame import Frame

VECTOR = 4  # words per load and store: vec4<u32>


@dataclass(frozen=True)
class Elements:
    """One element (or packed word) per invocation."""

    wg: int = 64

    def consts(self) -> list[tuple[str, int, str]]:
        return [("WG", self.wg, "")]


@dataclass(frozen=True)
class Words:
    """A whole-word schedule: the body, invocations per workgroup, output words per invocation."""

    variant: str
    wg: int = 256
    words: int = 16

    def __post_init__(self) -> None:
        if self.words % (4 * VECTOR) or self.wg % 64:
            raise ValueError(f"no whole-word schedule {self}")

    @property
    def per_group(self) -> int:
        """Output words a workgroup makes."""
        return self.wg * self.words

    def consts(self) -> list[tuple[str, int, str]]:
        return [("WG", self.wg, ""), ("WORDS", self.words, "consecutive output words per invocation")]


@dataclass(frozen=True)
class Runs:
    """Runs of ``run`` invocations, ``unroll`` words each, of ``word`` (``nbytes`` bytes)."""

    word: str
    nbytes: int
    unroll: int
    run: int = 8
    wg: int = 256

    def __post_init__(self) -> None:
        if self.wg % self.run:
            raise ValueError(f"no run schedule {self}")

    @property
    def per_group(self) -> int:
        """Words a workgroup copies (its span)."""
        return self.wg * self.unroll

    def consts(self) -> list[tuple[str, int, str]]:
        return [("WG", self.wg, ""), ("UNROLL", self.unroll, ""), ("RUN", self.run, "")]


@dataclass(frozen=True)
class OnWords(Frame):
    """A kernel rendered on a ``Words`` schedule: its ``NAME``, ``BODIES``
    (variant -> the body's WGSL), ``shared`` (the text every body shares)."""

    schedule: Words
    NAME: ClassVar[str]
    BODIES: ClassVar[dict[str, Callable[[], str]]]

    def __post_init__(self) -> None:
        if self.schedule.variant not in self.BODIES or not self.runs(self.schedule):
            raise ValueError(f"no whole-word schedule {self.schedule} for the {self.NAME}")

    @staticmethod
    def runs(schedule: Words) -> bool:
        """Whether the body can run on this schedule (a kernel's own rule)."""
        return True

    def shared(self) -> list[str]:
        """The functions every body uses."""
        raise NotImplementedError

    def parts(self) -> list[str]:
        return [*self.shared(), self.BODIES[self.schedule.variant]()]

    @property
    def label(self) -> str:
        s = self.schedule
        return f"{self.NAME} words {s.variant}[wg={s.wg},words={s.words}]"

    def main(self) -> str:
        return f"    {self.schedule.variant}(wg, lid);\n"


FIRST = "((wg.y * params.groups_x + wg.x) * WG + lid) * WORDS"  # the invocation's first output word


def head(first: str = FIRST) -> str:
    """A body's first word ``w0`` (``first``), and nothing past the band's words."""
    return f"    let w0 = {first};\n    if (w0 >= params.words) {{\n        return;\n    }}\n"


def loop(pad: str, step: int = 4) -> str:
    """The invocation's words, ``step`` at a time, to the band's end (the body follows, at ``pad`` + 8)."""
    return (f"{pad}for (var g = 0u; g < WORDS; g = g + {step}u) {{\n{pad}    let w = w0 + g;\n"
            f"{pad}    if (w >= params.words) {{\n{pad}        break;\n{pad}    }}\n")
