"""The host side of the kernels rendered on the whole-word schedule
(gpu/render/select.py, gpu/render/one_hot.py: Where's select, OneHot): their schedule, measured per adapter,
and the one loop that walks an output in bands through them.

The schedule's invocations per workgroup and output words per invocation
are a schedule question's answer (gpu/choose.py: ``select``, ``one_hot``),
``WGxWORDS`` among ``choose.WORD_SCHEDULES``, asked only when the kernel runs. A body
that holds its own word count keeps it and takes the answer's workgroup
(the kernel's ``KEEPS``).

    for each band of the output:
        poison dst (tests); the band's uploads and its Params (the host's
        ``band``); one dispatch; readback dst --sink-->
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Optional

from . import choose
from .buffers import round_up
from .pieces import Run, Sink
from .render import one_hot, select
from .render.schedule import OnWords, Words

KERNELS: dict[str, type[OnWords]] = {"select": select.Select, "one_hot": one_hot.OneHot}  # question -> kernel


def schedule(question: str, variant: str, answer: str) -> Words:
    """Body ``variant`` of question ``question``'s kernel on candidate ``answer``."""
    wg, words = (int(x) for x in answer.split("x"))
    return Words(variant, wg, KERNELS[question].KEEPS.get(variant, words))


def kernel(gpu: Any, question: str, variant: str) -> OnWords:
    """The kernel of question ``question`` (its body ``variant``) on ``gpu``'s
    answer: asked here, so only a run of the kernel asks it."""
    return KERNELS[question](schedule(question, variant, choose.answer(gpu, question)))


def texts(question: str) -> tuple[str, ...]:
    """Every candidate's rendered WGSL, every body: the question's cache entry is keyed by them."""
    cls = KERNELS[question]
    return tuple(cls(schedule(question, v, a)).wgsl() for a in choose.WORD_SCHEDULES for v in cls.BODIES)


Band = tuple[int, int, Any]  # start, elements, what the host's band function needs of it


def walk(run: Run, kernel: OnWords, bands: Iterable[Band], band: Callable[[int, int, Any, Any], dict], *,
         bits: int, sink: Sink, poison: Optional[int], what: str, stats: dict) -> int:
    """Run ``kernel`` over each of ``bands`` in order into ``sink``, then
    release ``run``; ``band(start, n, extra, encoder)`` uploads the band's
    windows (on ``encoder``, None when ``run`` is mapped) and returns its
    Params fields beyond the words, grid, elements and width. Returns the
    bytes written; ``stats["bands"]`` counts the bands, ``stats["seconds"]``
    their time from the dispatch to the bytes read back (what the schedule
    changes: schedule_cases.py times it)."""
    gpu, written = run.gpu, 0
    stats["seconds"] = 0.0
    try:
        for start, n, extra in bands:
            nbytes = (n * bits + 7) // 8
            words = -(-nbytes // 4)
            with gpu.errors(what):
                if poison is not None:
                    gpu.queue.write_buffer(run.dst, 0, bytes([poison]) * round_up(nbytes, 4))
                encoder = None if run.taken["mapped"] else gpu.device.create_command_encoder()
                fields = band(start, n, extra, encoder)
                t0 = time.perf_counter()
                run.dispatch_one(words, kernel.schedule.per_group, lambda gx: kernel.PARAMS.pack(
                    words=words, groups_x=gx, elems=n, bits=bits, **fields), encoder)
            run.drain(sink, nbytes)
            stats["seconds"] += time.perf_counter() - t0
            stats["bands"] += 1
            written += nbytes
    finally:
        run.release()
    return written
