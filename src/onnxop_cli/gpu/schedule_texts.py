"""The rendered WGSL of each schedule question's candidates (``texts``), which
choose.py keys the question's cached answer by: a release that changes a
kernel a candidate runs measures the question again. A question's kernels are
rendered when its key is first asked, without the cases that time it
(gpu/schedule_cases.py)."""

from __future__ import annotations

import importlib
from dataclasses import replace
from typing import Any, Callable, Iterable


def elementwise_kernel():
    """The elementwise case's kernel, on the renderer's first workgroup (run_elementwise sets the answer's)."""
    from .render.elementwise import Elementwise, Operand

    return Elementwise("Add", (Operand("int32"), Operand("int32")), "int32")


# each question's kernels: (the gpu/render/ module that renders them, a function of it and the candidate
# workgroups to the kernels every candidate runs); select and one_hot: word_kernels.texts; gather_source: none
TEXTS: dict[str, tuple[str, Callable[[Any, list[int]], Iterable]]] = {
    "transpose": ("strided", lambda m, wgs: m.KERNELS.values()),
    "nd_run": ("rows", lambda m, wgs: (k for (name, _), k in m.KERNELS.items() if name == "gather-nd")),  # both
    # run lengths run one text per width (params.run)
    "scatter_lines": ("scatter", lambda m, wgs: (m.Lines("fadd", 32), m.Apply("fadd", 32), *map(m.Pass, m.PASSES))),
    "rounds_wg": ("scatter", lambda m, wgs: (k for wg in wgs for k in (m.Apply("fadd", 32, wg),
                                                                      *(m.Pass(p, wg) for p in m.PASSES)))),
    "lines_wg": ("scatter", lambda m, wgs: (m.Lines("fadd", 32, wg=wg) for wg in wgs)),
    "pieces_min_row": ("pieces", lambda m, wgs: (m.GENERAL, m.WORDS, m.EDGES)),  # both candidates run them
    "gather_words": ("slices", lambda m, wgs: (_render("indexed").gather("one_i64"), m.KERNELS["words"])),
    "elementwise": ("schedule", lambda m, wgs: (replace(elementwise_kernel(), schedule=m.Elements(wg)) for wg in wgs)),
    "slab_chunk": ("slices", lambda m, wgs: (m.KERNELS["windowed"],)),  # every chunk runs one text (params.chunk)
}


def _render(name: str) -> Any:
    """Module gpu/render/``name``, imported when a question's key is first asked."""
    return importlib.import_module(f"{__package__}.render.{name}")


def texts(question: str) -> tuple[str, ...]:
    """The rendered WGSL of every candidate of ``question``: its cache key's."""
    from .choose import QUESTIONS
    from .word_kernels import texts as words

    if question == "gather_source":  # a fact about the adapter, no kernel's speed
        return ()
    if question not in TEXTS:
        return words(question)
    module, kernels = TEXTS[question]
    wgs = [int(c) for c in QUESTIONS[question].candidates if c.isdigit()]  # where the candidates are workgroups
    return tuple(k.wgsl() for k in kernels(_render(module), wgs))
