"""Which kernels this adapter runs fastest: measured once, then cached.

Two kinds of choice live here, on the same rules: the flat copy kernel, and
the *schedule questions* (``QUESTIONS``, after the cache): which of a kernel's
exact candidates takes its work. A question is asked on first use
(a Flatten never measures transposes), answered on a representative case
(gpu/schedule_cases.py) as the copy kernel is, and cached in the same file
under the same key plus its name and its candidates' WGSL digest.
``$ONNXOP_SCHEDULE=transpose=blocked,...`` forces answers; ``onnxop info``
and ``bench`` show them all, ``bench --tune`` measures them again.

The first time onnxop meets an adapter (name, backend, driver version) it
times every kernel the adapter can run on one streaming chunk, in a few
interleaved rounds, checks each kernel's output byte for byte, and keeps
the one with the best time. The best, not the median: on a shared machine
other processes only ever slow a round down, so a kernel's fastest round is
the closest to what it can do (medians of 3-5 short rounds picked the
slower kernel under load). The answer is cached (gpu/choice_cache.py) in
``$XDG_CACHE_HOME/onnxop/kernels.json`` (``~/.cache/onnxop/``), keyed by
the adapter, its driver, onnxop's version and a digest of the kernels' WGSL,
so a new driver, a new onnxop or an edited kernel measures again. ``--kernel
NAME`` / ``$ONNXOP_KERNEL`` force a kernel.

The cache is a convenience, never a requirement: a file that cannot be
read or parsed is ignored (and rewritten), one that cannot be written
leaves the choice measured for this process only.
"""

from __future__ import annotations

import importlib
import os
import time
from dataclasses import dataclass, field

from ..errors import UsageError
from . import choice_cache, kernels
from .device import Gpu

ENV_KERNEL = "ONNXOP_KERNEL"
ENV_SCHEDULE = "ONNXOP_SCHEDULE"
SIZE = 4 << 20  # one streaming chunk (copy.DEFAULT_CHUNK): what a real run moves per dispatch
ROUNDS = 5  # after one untimed warm-up run of each kernel
# the whole-word kernels' candidates (gpu/word_kernels.py): invocations x words, the first the one-driver constant
WORD_SCHEDULES = ("256x16", "64x16", "64x32", "128x32")

_forced: str | None = None
_command = 0  # counts force()'s calls: one per command, in-process ones included


@dataclass(frozen=True)
class Choice:
    """The kernel chosen for an adapter and why: ``measured`` (in this
    process), ``cached`` (measured before, read from the cache file),
    ``forced`` (--kernel / $ONNXOP_KERNEL) or ``only`` (one kernel
    available: nothing to measure). ``gbps``: best-round GB/s per kernel when
    measured or cached."""

    kernel: str
    reason: str
    gbps: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0  # the calibration's cost, when measured here
    unit: str = "GB/s"  # of the figures

    def document(self) -> dict:
        """For --json: the figures are in `onnxop info` and `onnxop bench`."""
        return {"name": self.kernel, "reason": self.reason}

    def describe(self) -> str:
        figures = ", ".join(f"{k} {v:.2f} {self.unit}".rstrip() for k, v in self.gbps.items())
        return f"{self.kernel} ({self.reason}{': ' + figures if figures else ''})"


def force(name: str | None) -> None:
    """Force kernel ``name`` for this process (None: back to $ONNXOP_KERNEL,
    else the measured choice). An unknown name is refused here; one the
    adapter cannot run is refused when the adapter is known."""
    global _forced, _command
    _command += 1  # every command forces (cli/app.py): what it asks is reported apart from the one before
    name = (name or "").strip() or None
    if name is not None and name not in kernels.KERNELS:
        raise UsageError(f"unknown kernel {name!r}; choose one of {', '.join(kernels.KERNELS)}")
    _forced = name


def forced() -> str | None:
    name = _forced or os.environ.get(ENV_KERNEL, "").strip() or None
    if name is not None and name not in kernels.KERNELS:
        raise UsageError(f"${ENV_KERNEL}: unknown kernel {name!r}; choose one of {', '.join(kernels.KERNELS)}")
    return name


def choice(gpu: Gpu, *, tune: bool = False) -> Choice:
    """The kernel for ``gpu``: forced, else cached, else measured now (and
    cached). ``tune`` measures again whatever the cache holds."""
    name = forced()
    if name is not None:
        kernels.require(gpu, name)
        return Choice(name, "forced")
    found = gpu.kernel_choice
    if found is not None and not tune:
        return found
    candidates = kernels.available(gpu)
    if len(candidates) == 1:
        found = Choice(candidates[0].name, "only")
    else:
        found = None if tune else _read_cache(gpu)
        if found is None:
            found = measure(gpu, candidates)
            _write_cache(gpu, found)
    gpu.kernel_choice = found
    return found


def kernel_for(gpu: Gpu, name: str | None = None) -> kernels.Kernel:
    """The kernel a copy on ``gpu`` runs with: ``name`` if given (refused
    with a UsageError naming the available ones if this adapter cannot run
    it), else the one measured fastest (or forced). The
    choice is kept as ``gpu.kernel_used`` for the --json documents."""
    found = Choice(kernels.require(gpu, name).name, "forced") if name is not None else choice(gpu)
    gpu.kernel_used = found
    return kernels.KERNELS[found.kernel]


def measure(gpu: Gpu, candidates: list[kernels.Kernel]) -> Choice:
    """Time each kernel on one chunk, interleaved, ``ROUNDS`` rounds after a
    warm-up (best round counts), and check each one's output byte for byte (a kernel that writes
    a wrong byte raises GpuError: better no result than a wrong one)."""
    from .measure import Bench

    started = time.perf_counter()
    bench = Bench(gpu, SIZE, streaming=False, kernels=candidates)
    try:
        times: dict[str, list[float]] = {k.name: [] for k in candidates}
        for k in candidates:
            bench.kernel(k.name)
        for r in range(ROUNDS):
            order = candidates[r % len(candidates) :] + candidates[: r % len(candidates)]
            for k in order:  # rotated, so no kernel always runs right after another
                times[k.name].append(bench.kernel(k.name))
        for k in candidates:
            bench.poison()
            bench.kernel(k.name)
            bench.verify(f"kernel {k.name}")
    finally:
        bench.close()
    gbps = {name: round(SIZE / min(ts) / 1e9, 2) for name, ts in times.items()}
    best = max(candidates, key=lambda k: gbps[k.name]).name
    return Choice(best, "measured", gbps, time.perf_counter() - started)


# --------------------------------------------------------------------- cache


def _read_cache(gpu: Gpu) -> Choice | None:
    entry = choice_cache.read_entry(choice_cache.cache_key(gpu))
    if entry is None or "kernel" not in entry:
        return None
    name, gbps = entry["kernel"], {k: float(v) for k, v in entry["gbps"].items()}
    able = {k.name for k in kernels.available(gpu)}
    if set(gbps) != able or name not in able:  # measured for other kernels than this adapter runs
        return None
    return Choice(name, "cached", gbps)


def _write_cache(gpu: Gpu, found: Choice) -> None:
    """Add this adapter's entry (gpu/choice_cache.py)."""
    choice_cache.write_entry(choice_cache.cache_key(gpu), {"kernel": found.kernel, "gbps": found.gbps})


# ------------------------------------------------------------ schedule questions


@dataclass(frozen=True)
class Question:
    """A choice among ``candidates`` that are all exact on every adapter and
    differ only in speed. ``case``: the function of gpu/schedule_cases.py
    that builds its representative case; ``shaders``: the WGSL files whose
    text keys its cache entry; ``rendered``: candidates rendered, not read
    from files, whose texts (gpu/schedule_cases.py's ``texts``) key it too."""

    name: str
    candidates: tuple[str, ...]
    shaders: tuple[str, ...]
    case: str
    means: str  # what the answer decides
    unit: str = "GB/s"  # of its figures: a candidate's speed on the case, unless the case decides otherwise
    rendered: bool = False


QUESTIONS = {q.name: q for q in (
    Question("transpose", ("blocked", "tiled", "generic"), (), "transpose",
             "the kernel of transposes of 4-byte and wider elements: blocked (4 x 4 blocks in registers), "
             "tiled (tiles in workgroup memory) or generic (gpu/render/strided.py)", rendered=True),
    Question("nd_run", ("long", "short"), (), "nd_run",
             "GatherND by pairs (gpu/render/rows.py), rows of nd_rows.LONG_ROW slices or more: runs of 64 slices "
             "an invocation (long) or of 16 (short)", rendered=True),
    Question("gather_source", ("streamed", "resident"), (), "gather_source",
             "a gather's source of more than two windows (gpu/gather_windows.py): streamed in passes where "
             "the device's memory is this process's own, else resident; the figures are the share of a "
             "device buffer that appeared in the process's memory, and the rest", unit=""),
    Question("select", WORD_SCHEDULES, (), "select",
             "Where's select (gpu/render/select.py): invocations per workgroup x output words per invocation "
             "(the wide and rows bodies keep their own words)", rendered=True),
    Question("one_hot", WORD_SCHEDULES, (), "one_hot",
             "OneHot's kernel (gpu/render/one_hot.py): invocations per workgroup x output words per invocation",
             rendered=True),
    Question("scatter_lines", ("lines", "rounds"), (), "scatter_lines",
             "ScatterElements with a reduction over FEWEST_LINES to LINES_AT_LEAST lines (gpu/scatter.py): "
             "an invocation a line (lines) or the claim/apply rounds", rendered=True),
    Question("pieces_min_row", ("64", "128"), (), "pieces_min_row",
             "the shortest row, bytes, the pieces kernels by runs copy (gpu/runs.py): 64, or 128 (rows of 64 to "
             "127 bytes then keep the general kernel, gpu/render/pieces.py)", rendered=True),
    Question("gather_words", ("elements", "slices"), (), "gather_words",
             "Gather of slices of whole words that are not whole 16-byte vectors, one band of one window: the "
             "indexed gather, an element an invocation (elements), or gpu/render/slices.py's words, a slice (slices)",
             rendered=True),
)}
QUESTION_ROUNDS = 3  # after one untimed run of each candidate, whose output is checked byte for byte

_answering: dict[tuple[int, str], str] = {}  # the candidate being timed now, by (id of the Gpu, question)


def forced_answers() -> dict[str, str]:
    """$ONNXOP_SCHEDULE's answers, ``NAME=ANSWER`` separated by commas; a
    question or an answer it does not know is refused (UsageError)."""
    found: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in os.environ.get(ENV_SCHEDULE, "").split(","))):
        name, eq, value = (x.strip() for x in part.partition("="))
        question = QUESTIONS.get(name)
        if question is None or not eq:
            raise UsageError(f"${ENV_SCHEDULE}: {part!r} is not QUESTION=ANSWER with a question among "
                             f"{', '.join(QUESTIONS)}")
        if value not in question.candidates:
            raise UsageError(f"${ENV_SCHEDULE}: {name} cannot be {value!r}; choose one of "
                             f"{', '.join(question.candidates)}")
        found[name] = value
    return found


def answer(gpu: Gpu, name: str) -> str:
    """The answer to question ``name`` on ``gpu`` (see ``ask``)."""
    return ask(gpu, name).kernel


def ask(gpu: Gpu, name: str, *, tune: bool = False) -> Choice:
    """Question ``name``'s answer for ``gpu``: the candidate being measured,
    else forced, else the one known in this process, cached, or measured now
    (and cached). ``tune`` measures again. Kept in ``gpu.schedules_used``
    for the --json documents."""
    question = QUESTIONS[name]
    if (id(gpu), name) in _answering:
        return Choice(_answering[id(gpu), name], "measuring")
    value = forced_answers().get(name)
    if value is not None:
        found = Choice(value, "forced")
    else:
        found = None if tune else gpu.schedule_choices.get(name)
        if found is None:
            found = None if tune else _read_answer(gpu, question)
            if found is None:
                with gpu.lock:  # no other call on this engine's devices between the candidates' runs
                    found = _measure_question(gpu, question)
                choice_cache.write_entry(_answer_key(gpu, question), {"answer": found.kernel, "gbps": found.gbps})
        gpu.schedule_choices[name] = found
    gpu.schedules_used[name] = (_command, found)
    return found


def schedules_used(gpu: Gpu | None) -> dict[str, dict]:
    """For --json: each question answered for ``gpu`` in this command, {"name", "reason"}."""
    used = {} if gpu is None else gpu.schedules_used
    return {k: c.document() for k, (n, c) in sorted(used.items()) if n == _command}


def _measure_question(gpu: Gpu, question: Question) -> Choice:
    """Time each candidate on the question's case, rotated, ``QUESTION_ROUNDS``
    rounds after a first run whose output is checked byte for byte (and that
    the candidate did take the work): a wrong byte raises GpuError."""
    from ..errors import GpuError

    started = time.perf_counter()
    candidates = list(question.candidates)
    times: dict[str, list[float]] = {c: [] for c in candidates}
    _answering[id(gpu), question.name] = candidates[0]  # what the case's own setup is answered while it is built
    try:
        # by name: the cases run the kernels that ask the questions, so the module sits above them (and this one)
        case = getattr(_cases(), question.case)(gpu)
    finally:
        del _answering[id(gpu), question.name]

    def timed(candidate: str, check: bool = False) -> float:
        _answering[id(gpu), question.name] = candidate
        try:
            t0 = time.perf_counter()
            if case.time is not None and not check:
                return case.time()
            out, took = case.run()
            elapsed = time.perf_counter() - t0
        finally:
            del _answering[id(gpu), question.name]
        if out != case.expected or took != candidate:
            what = "wrong bytes" if out != case.expected else f"{took} took the work"
            raise GpuError(f"schedule {question.name}={candidate}: {what} on the calibration case")
        return elapsed

    if case.decide is not None:  # a fact about the adapter, not a speed
        best, gbps = case.decide()
        case.close()
        return Choice(best, "measured", gbps, time.perf_counter() - started, question.unit)
    try:
        for c in candidates:
            timed(c, check=True)
        for r in range(QUESTION_ROUNDS):
            for c in candidates[r % len(candidates):] + candidates[: r % len(candidates)]:
                times[c].append(timed(c))
    finally:
        case.close()
    gbps = {c: round(case.nbytes / min(ts) / 1e9, 3) for c, ts in times.items()}
    best = max(candidates, key=lambda c: gbps[c])
    return Choice(best, "measured", gbps, time.perf_counter() - started, question.unit)


def _cases():
    return importlib.import_module(f"{__package__}.schedule_cases")


def _answer_key(gpu: Gpu, question: Question) -> str:
    texts = _cases().texts(question.name) if question.rendered else ()
    return choice_cache.answer_key(gpu, question.name, question.shaders, texts)


def _read_answer(gpu: Gpu, question: Question) -> Choice | None:
    entry = choice_cache.read_entry(_answer_key(gpu, question))
    if entry is None or "answer" not in entry or set(entry["gbps"]) != set(question.candidates):
        return None  # none, or measured among other candidates than today's
    return Choice(entry["answer"], "cached", {k: float(v) for k, v in entry["gbps"].items()}, unit=question.unit)
