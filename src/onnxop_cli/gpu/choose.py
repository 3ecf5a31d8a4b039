"""Which kernels and schedules this adapter runs fastest: measured once, then cached.

Every choice is a *question* (``Question``): which of its candidates, all
exact, takes the work. The copy kernel is one (``COPY``: the flat copy's
width); the schedule questions (``QUESTIONS``) choose
among the exact candidates of other kernels. A question is asked on first
use (a Flatten never measures transposes) and answered on a representative
case (gpu/schedule_cases.py). ``onnxop info`` and ``bench`` show every answer,
``bench --tune`` measures them again; ``--kernel NAME`` / ``$ONNXOP_KERNEL``
force the copy kernel, ``$ONNXOP_SCHEDULE=transpose=blocked,...`` the others.

The first time onnxop meets an adapter (name, backend, driver version) it
runs each candidate once, checking its output byte for byte, then times them
all in a few interleaved rounds and keeps the one with the best time. The
best, not the median: on a shared machine other processes only ever slow a
round down, so a candidate's fastest round is the closest to what it can do
(medians of 3-5 short rounds picked the slower kernel under load).

The answers are cached in ``$XDG_CACHE_HOME/onnxop/kernels.json``
(``~/.cache/onnxop/``), keyed so that a new driver, a new onnxop or an edited
kernel measures again (``_key``), each added without losing the entries other
processes add meanwhile (``_write``); threads of one process asking one
question measure it once (the first to take the engine's lock). The cache is a convenience, never a
requirement: a file that cannot be read or parsed is ignored (and
rewritten), a damaged entry is dropped, and one that cannot be written
leaves the answer measured for this process only.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ..errors import GpuError, UsageError
from ..io.cache import cache_dir, locked, read_regular, write_atomic
from . import kernels
from .device import Gpu

ENV_KERNEL = "ONNXOP_KERNEL"
ENV_SCHEDULE = "ONNXOP_SCHEDULE"
CACHE_FILE = "kernels.json"
CACHE_VERSION = 1
FIELDS = ("kernel", "answer")  # an entry's answer: the copy kernel's, a schedule question's

_forced: str | None = None
_command = 0  # counts force()'s calls: one per command, in-process ones included


@dataclass(frozen=True)
class Choice:
    """A question's answer for an adapter and why: ``measured`` (in this
    process), ``cached`` (measured before, read from the cache file),
    ``forced`` (--kernel, $ONNXOP_KERNEL, $ONNXOP_SCHEDULE) or
    ``measuring`` (the candidate being timed). ``gbps``: best-round figure
    per candidate when measured or cached."""

    kernel: str
    reason: str
    gbps: dict[str, float] = field(default_factory=dict)
    unit: str = "GB/s"  # of the figures

    def document(self) -> dict:
        """For --json: the figures are in `onnxop info` and `onnxop bench`."""
        return {"name": self.kernel, "reason": self.reason}

    def describe(self) -> str:
        figures = ", ".join(f"{k} {v:.2f} {self.unit}".rstrip() for k, v in self.gbps.items())
        return f"{self.kernel} ({self.reason}{': ' + figures if figures else ''})"


@dataclass(frozen=True)
class Question:
    """A choice among ``candidates`` that are all exact on every adapter and
    differ only in speed, answered on gpu/schedule_cases.py's case of
    the same name (which says what the answer decides; docs/performance-adapters.md
    tables every question). Its cache entry is keyed by its name and its candidates'
    rendered WGSL (schedule_cases.texts) and holds the answer under ``field``."""

    name: str
    candidates: tuple[str, ...]
    unit: str = "GB/s"  # of its figures: a candidate's speed on the case, unless the case decides otherwise
    rounds: int = 3  # timed, after one untimed run of each candidate whose output is checked byte for byte
    digits: int = 3  # of the figures
    field: str = "answer"

    def able(self, gpu: Gpu) -> tuple[str, ...]:
        """The candidates ``gpu`` can run."""
        return self.candidates

    def forced(self, gpu: Gpu) -> str | None:
        return forced_answers().get(self.name)

    def key(self, gpu: Gpu) -> str:
        return _key(gpu, (self.name,), _cases().texts(self.name))


class CopyQuestion(Question):
    """The flat copy's kernel: among those the adapter can run (gpu/kernels.py),
    forced by --kernel / $ONNXOP_KERNEL, its entry keyed by the kernels' names and WGSL alone."""

    def able(self, gpu: Gpu) -> tuple[str, ...]:
        return tuple(k.name for k in kernels.available(gpu))

    def forced(self, gpu: Gpu) -> str | None:
        name = _forced or os.environ.get(ENV_KERNEL, "").strip() or None
        if name is not None and name not in kernels.KERNELS:
            raise UsageError(f"${ENV_KERNEL}: unknown kernel {name!r}; choose one of {', '.join(kernels.KERNELS)}")
        return None if name is None else kernels.require(gpu, name).name

    def key(self, gpu: Gpu) -> str:
        return _key(gpu, (), tuple(f"{k.name}\0{k.wgsl}" for k in kernels.KERNELS.values()))


COPY = CopyQuestion("kernel", tuple(kernels.KERNELS), rounds=5, digits=2, field="kernel")
QUESTIONS = {q.name: q for q in (
    Question("transpose", ("blocked", "generic")),
    Question("gather_source", ("streamed", "resident"), unit=""),
    Question("scatter_lines", ("lines", "rounds")),
    Question("pieces_min_row", ("64", "128")),
    Question("gather_words", ("elements", "slices")),
)}

_answering: dict[tuple[int, str], str] = {}  # the candidate being timed now, by (id of the Gpu, question)


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


def choice(gpu: Gpu, *, tune: bool = False) -> Choice:
    """The copy kernel for ``gpu`` (see ``_answer``)."""
    return _answer(gpu, COPY, tune)


def kernel_for(gpu: Gpu, name: str | None = None) -> kernels.Kernel:
    """The kernel a copy on ``gpu`` runs with: ``name`` if given (refused
    with a UsageError naming the available ones if this adapter cannot run
    it), else the one measured fastest (or forced). The
    choice is kept as ``gpu.kernel_used`` for the --json documents."""
    found = Choice(kernels.require(gpu, name).name, "forced") if name is not None else choice(gpu)
    gpu.kernel_used = found
    return kernels.KERNELS[found.kernel]


def answer(gpu: Gpu, name: str) -> str:
    """The answer to question ``name`` on ``gpu`` (see ``ask``)."""
    return ask(gpu, name).kernel


def ask(gpu: Gpu, name: str, *, tune: bool = False) -> Choice:
    """Question ``name``'s answer for ``gpu`` (see ``_answer``), kept in
    ``gpu.schedules_used`` for the --json documents."""
    found = _answer(gpu, QUESTIONS[name], tune)
    if found.reason != "measuring":  # the ask that measures keeps its answer
        gpu.schedules_used[name] = (_command, found)
    return found


def schedules_used(gpu: Gpu | None) -> dict[str, dict]:
    """For --json: each question answered for ``gpu`` in this command, {"name", "reason"}."""
    used = {} if gpu is None else gpu.schedules_used
    return {k: c.document() for k, (n, c) in sorted(used.items()) if n == _command}


def _answer(gpu: Gpu, question: Question, tune: bool) -> Choice:
    """``question``'s answer for ``gpu``: the candidate being measured, else
    forced, else the one known in this process, cached, or measured now
    (and cached). ``tune`` measures again."""
    candidate = _answering.get((id(gpu), question.name))  # one lookup: the measuring thread may end it meanwhile
    if candidate is not None:
        return Choice(candidate, "measuring")
    value = question.forced(gpu)
    if value is not None:
        return Choice(value, "forced")
    found = None if tune else gpu.schedule_choices.get(question.name) or _read(gpu, question)
    if found is None:
        with gpu.lock:  # no other call on this engine's devices between the candidates' runs
            # threads that asked at once measure it once: the first to get the lock; the others find its answer
            found = None if tune else gpu.schedule_choices.get(question.name)
            fresh = found is None
            if fresh:
                found = gpu.schedule_choices[question.name] = _measure(gpu, question)
        if fresh:
            _write(gpu, question, found)
    gpu.schedule_choices[question.name] = found
    return found


def _measure(gpu: Gpu, question: Question) -> Choice:
    """Run each candidate on the question's case once, its output checked
    byte for byte (and that the candidate did take the work: a wrong byte
    raises GpuError), then time them rotated, ``question.rounds`` rounds."""
    # a question asked in the middle of a run is measured by runs of the same host: the stats each run
    # leaves for tests (gpu.cache's "...-last" entries) go back to the asking run's once measured
    stats = {k: v for k, v in gpu.cache.items() if isinstance(k, str) and k.endswith("-last")}
    candidates = list(question.able(gpu))
    times: dict[str, list[float]] = {c: [] for c in candidates}

    @contextmanager
    def answering(candidate: str) -> Iterator[None]:
        _answering[id(gpu), question.name] = candidate
        try:
            yield
        finally:
            del _answering[id(gpu), question.name]

    def timed(candidate: str, check: bool = False) -> float:
        with answering(candidate):
            t0 = time.perf_counter()
            if case.time is not None and not check:
                return case.time()
            out, took = case.run()
            elapsed = time.perf_counter() - t0
        if out != case.expected or took != candidate:
            what = "wrong bytes" if out != case.expected else f"{took} took the work"
            raise GpuError(f"schedule {question.name}={candidate}: {what} on the calibration case")
        return elapsed

    try:
        with answering(candidates[0]):  # what the case's own setup asks while it is built
            # by name: the cases run the kernels that ask the questions, so the module sits above them (and this one)
            case = _cases().case(gpu, question.name)
        try:
            if case.decide is not None:  # a fact about the adapter, not a speed
                best, gbps = case.decide()
                return Choice(best, "measured", gbps, question.unit)
            for c in candidates:
                timed(c, check=True)
            for r in range(question.rounds):
                for c in candidates[r % len(candidates):] + candidates[: r % len(candidates)]:
                    times[c].append(timed(c))
        finally:
            case.close()
        gbps = {c: round(case.nbytes / min(ts) / 1e9, question.digits) for c, ts in times.items()}
        return Choice(max(candidates, key=lambda c: gbps[c]), "measured", gbps, question.unit)
    finally:
        gpu.cache.update(stats)


def _cases():
    return importlib.import_module(f"{__package__}.schedule_cases")


def cache_path() -> Path:
    return cache_dir() / CACHE_FILE


def _key(gpu: Gpu, name: tuple[str, ...], texts: tuple[str, ...]) -> str:
    """An entry's key: adapter, driver, onnxop version, the question's
    ``name`` (none for the copy kernel's, whose entry came first) and 12 hex
    digits of SHA-256 over ``texts`` (its candidates' WGSL)."""
    from .. import __version__

    h = hashlib.sha256()
    for text in texts:
        h.update(f"{text}\0".encode())
    info = gpu.info
    return json.dumps([info.our_backend, info.name, info.driver, __version__, *name, h.hexdigest()[:12]])


def _read(gpu: Gpu, question: Question) -> Choice | None:
    entry = _load(cache_path()).get(question.key(gpu))
    if entry is None or question.field not in entry or set(entry["gbps"]) != set(question.able(gpu)):
        return None  # none, or measured among other candidates than this adapter runs today
    return Choice(entry[question.field], "cached", {k: float(v) for k, v in entry["gbps"].items()},
                  unit=question.unit)


def _write(gpu: Gpu, question: Question, found: Choice) -> None:
    """Add ``question``'s entry with the time it was measured; atomically
    (a temporary file renamed over the old one), so a reader never sees half
    a file, and under the cache's lock from the read to the rename, so an
    entry another process adds meanwhile is not written over (processes
    measuring different questions at once keep all their entries). Failure
    is not an error."""
    path = cache_path()
    key = question.key(gpu)
    measured = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with locked(path):
        entries = _load(path)
        entries[key] = {question.field: found.kernel, "gbps": found.gbps, "measured": measured}
        write_atomic(path, json.dumps({"version": CACHE_VERSION, "entries": entries}, indent=1).encode())


def _load(path: Path) -> dict:
    raw = read_regular(path)  # None: missing, unreadable, not a regular file (a FIFO would block)
    try:
        data = json.loads(raw.decode("utf-8")) if raw is not None else None
    except (UnicodeDecodeError, ValueError, RecursionError):
        return {}
    if (not isinstance(data, dict) or set(data) != {"version", "entries"} or data["version"] != CACHE_VERSION
            or not isinstance(data["entries"], dict)):
        return {}
    # a damaged entry (a letter changed in a key or a kernel's name) is dropped: measured again, rewritten
    return {k: v for k, v in data["entries"].items() if _valid_entry(v)}


def _valid_entry(entry: object) -> bool:
    """The schema of an entry: its answer (under one of FIELDS), a positive
    finite figure for each candidate, the answer among them, when measured;
    the copy kernel's candidates are known kernels."""
    if not isinstance(entry, dict) or not any(set(entry) == {f, "gbps", "measured"} for f in FIELDS):
        return False
    field = "kernel" if "kernel" in entry else "answer"
    value, gbps = entry[field], entry["gbps"]
    if not isinstance(value, str) or not isinstance(entry["measured"], str) or not isinstance(gbps, dict):
        return False
    if value not in gbps or (field == "kernel" and not set(gbps) <= set(kernels.KERNELS)):
        return False
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < float("inf") for v in gbps.values())
