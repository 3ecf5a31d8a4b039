"""The renderer's schedules, as data: ``Elements`` (one element, or word of
packed elements, per invocation behind a bounds test: render/elementwise.py),
``Words`` (``words`` whole output words per invocation as ``vec4<u32>``, one
of a kernel's bodies: render/select.py, render/one_hot.py; each body starts
at its first word, ``head``, and walks a vector at a time, ``loop``) and
``Runs`` (runs of ``run`` invocations, ``unroll`` words each, over padded
spans with no bounds test: render/copy.py) and ``Units`` (``per`` units an
invocation: render/slices.py, rows.py, pieces.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar

from .frame import Frame, first

VECTOR = 4  # words per load and store: vec4<u32>


@dataclass(frozen=True)
class Elements:
    wg: int = 64
    CONSTS: ClassVar = (("WG", "wg", ""),)  # (WGSL constant, the field it holds, a note): the frame declares them


@dataclass(frozen=True)
class Words:
    """A whole-word schedule: the body, invocations per workgroup, output words per invocation."""

    variant: str
    wg: int = 256
    words: int = 16
    CONSTS: ClassVar = (("WG", "wg", ""), ("WORDS", "words", "consecutive output words per invocation"))

    def __post_init__(self) -> None:
        if self.words % (4 * VECTOR) or self.wg % 64:
            raise ValueError(f"no whole-word schedule {self}")

    @property
    def per_group(self) -> int:
        """Output words a workgroup makes."""
        return self.wg * self.words


@dataclass(frozen=True)
class Runs:
    """Runs of ``run`` invocations, ``unroll`` words each, of ``word`` (``nbytes`` bytes)."""

    word: str
    nbytes: int
    unroll: int
    run: int = 8
    wg: int = 256
    CONSTS: ClassVar = (("WG", "wg", ""), ("UNROLL", "unroll", ""), ("RUN", "run", ""))

    def __post_init__(self) -> None:
        if self.wg % self.run:
            raise ValueError(f"no run schedule {self}")


@dataclass(frozen=True)
class Units:
    """``per`` units of ``word`` an invocation, the WGSL constant ``name`` (none where ``per`` is 0: the
    kernel reads its run from params, or makes one unit)."""

    name: str
    per: int = 0
    word: str = "u32"
    note: str = ""
    wg: int = 256

    @property
    def CONSTS(self) -> tuple[tuple[str, str, str], ...]:  # noqa: N802 - the frame's name
        return (("WG", "wg", ""),) + (((self.name, "per", self.note),) if self.per else ())


@dataclass(frozen=True)
class OnWords(Frame):
    """A kernel on a ``Words`` schedule: ``NAME``, ``BODIES`` (variant -> its WGSL), ``shared()`` text, and
    ``KEEPS`` (variant -> the words a body holds whatever the schedule question answers, gpu/word_kernels.py;
    it runs on no other)."""

    schedule: Words
    NAME: ClassVar[str]
    BODIES: ClassVar[dict[str, Callable[[], str]]]
    KEEPS: ClassVar[dict[str, int]] = {}
    LABEL = "{k.NAME} words {s.variant}[wg={s.wg},words={s.words}]"

    def __post_init__(self) -> None:
        s = self.schedule
        if s.variant not in self.BODIES or self.KEEPS.get(s.variant, s.words) != s.words:
            raise ValueError(f"no whole-word schedule {s} for the {self.NAME}")

    def parts(self) -> list[str]:
        return [*self.shared(), self.BODIES[self.schedule.variant]()]  # type: ignore[attr-defined]

    def main(self) -> str:
        return f"    {self.schedule.variant}(wg, lid);\n"


# a whole-word kernel's first Params fields, the ones gpu/word_kernels.py's walk packs for every band
WORD_FIELDS = (
    ("words", "u32"),     # output words of this dispatch (the band)
    ("groups_x", "u32"),  # workgroups per row of the dispatch grid
    ("elems", "u32"),     # output elements of the band
    ("bits", "u32"),      # output element bits
)


def head() -> str:
    """A body's first word ``w0``, and nothing past the band's words."""
    return first("w0", "WORDS", "words")


def loop(pad: str, step: int = 4, g: str = "g", w: str = "w") -> str:
    """The invocation's words ``w`` (``head``'s ``w0`` + ``g``), ``step`` at a time, to the band's end (the body
    follows, at ``pad`` + 8)."""
    return (f"{pad}for (var {g} = 0u; {g} < WORDS; {g} = {g} + {step}u) {{\n{pad}    let {w} = w0 + {g};\n"
            f"{pad}    if ({w} >= params.words) {{\n{pad}        break;\n{pad}    }}\n")


def small_head(note: str = "") -> str:
    """The head of a body of sub-word elements: ``head``, then their ``bits``, ``lg`` (log2 of elements per
    word, its comment ending in ``note``), ``per`` (elements per word) and ``emask`` (an element's bits)."""
    return head() + ("    let bits = params.bits;\n"
                     f"    let lg = 5u - countTrailingZeros(bits);  // log2 of elements per word{note}\n"
                     "    let per = 1u << lg;\n    let emask = (1u << bits) - 1u;\n")


def wide_head() -> str:
    """The head of a body of elements of whole words: ``head``, then ``lg`` (log2 of words per element) and
    ``lo`` (a word's part of its element: ``w & lo``)."""
    return head() + ("    let lg = countTrailingZeros(params.bits) - 5u;  // log2 of words per element\n"
                     "    let lo = (1u << lg) - 1u;\n")


def packed(pad: str, into: str, element: str, k: str = "e") -> str:
    """Four words of sub-word elements (``small_head``) into ``into``: word j ORs its ``per`` elements into v,
    element ``k`` by ``element`` (the inner loop's body, at ``pad`` + 8)."""
    return (f"{pad}for (var j = 0u; j < 4u; j = j + 1u) {{\n{pad}    var v = 0u;\n"
            f"{pad}    for (var {k} = 0u; {k} < per; {k} = {k} + 1u) {{\n{element}"
            f"{pad}    }}\n{pad}    {into}[j] = v;\n{pad}}}\n")
