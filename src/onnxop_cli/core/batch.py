"""Several inputs through one node: planned whole, then run job by job --
the one route of every operator command.

    plan:  every output path resolved -> collisions refused (names, inodes)
           -> headers read -> shape rules, types, device limits, outputs checked
           (``plan`` for a view operator; cli/tensor_ops.plan_jobs for a
           tensor operator, with the same Job, targets and ``set_aside``)
    run:   ``run``: the jobs in order, each run by its kind's RunJob
           (``view_jobs``; cli/tensor_ops.tensor_jobs), yielded when done
           (the caller prints or renders it; this module never does); a
           failure stops the batch and says what was written

With ``keep_going`` a job refused while planning (its file unreadable, its
type outside the opset's list) is set aside with its message instead of
refusing the batch; the others run, and the caller lists the refused ones.
Collisions stay refusals of the whole batch: they are about the batch.

``-o all.npz`` with several inputs packs the results into that one archive,
a member per result (the tensor's own name, else the input's stem), written
atomically once every job has run; two results with one member name are
refused as two outputs with one path are. ``fmt`` is the format of ``-o -``
or, for a folder, of each file written into it (``y.npy`` -> ``y.pb``).

Planning reads no data and writes nothing, so a batch that would lose data
(two inputs with one output name, an output that is another job's input) is
refused whole, with exit code 2, before its first byte is read. A job's output
may replace its own input: that is one atomic rename, after the input was read.

Each input's output path and the refusals about those paths are
core/batch_targets.py's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Iterator, Optional

from ..errors import OnnxopError, OutputError
from . import batch_targets
from .batch_targets import Job  # noqa: F401 - also imported from here

if TYPE_CHECKING:
    from .apply_tensors import Result
    from ..ops import Node
    from .tensor import Tensor


@dataclass
class Refused:
    """A job set aside by --keep-going, and why."""

    src: Path
    target: Optional[Path]
    message: str


@dataclass
class Ran:
    """A job done: each node run's inputs (as run: stdin read into memory
    when the job prints) with its result. The tensors stay open until the caller takes
    the next job, so it can print them."""

    job: Job
    index: int  # in the batch
    results: list[tuple[list[Optional[Tensor]], Result]]  # per node run: its inputs, its result


Track = Callable[[Any, str], ContextManager[Any]]  # (source, label) -> the source to read, counted


@contextmanager
def untracked(source: Any, label: str) -> Iterator[Any]:
    yield source


class BatchFailed(OnnxopError):
    """A job failed at run time: the batch stopped. Carries the cause (whose
    message and exit code the CLI reports), the outputs already written and
    the job that failed."""

    def __init__(self, cause: BaseException, job: Job, written: list[Path], total: int) -> None:
        super().__init__(str(cause))
        self.cause, self.job, self.written, self.total = cause, job, written, total

    def line(self, message: str) -> str:
        """The cause's one line; in a batch of several, followed by what was
        written (the failed job's outputs: its file, or each of its parts)."""
        if self.total < 2:
            return message
        failed = ", ".join(map(str, self.job.written())) if self.job.parts else self.job.target or self.job.src
        done = ", ".join(map(str, self.written)) or "none"
        return f"{message} (batch stopped at {failed}, not written; written before it: {done})"

# ------------------------------------------------------------------ planning


def plan(
    node: Node,
    inputs: list[Path],
    output: Optional[Path],
    member: Optional[str],
    *,
    parents: bool = False,
    backend: Optional[str] = None,
    fmt: Optional[str] = None,
    refused: Optional[list[Refused]] = None,
) -> list[Job]:
    """The jobs of a batch, with everything that can be refused refused --
    or, when a ``refused`` list is given (--keep-going), each refused job
    put there and left out."""
    from . import apply as core
    from . import pack
    from .. import io
    from ..io.stdio import is_stdio

    if fmt is not None:
        pack.check_format(fmt, output)
    packed = output is not None and not is_stdio(output) and io.is_archive(output) and len(inputs) > 1
    targets = batch_targets.targets(inputs, output, parents, fmt, packed)
    jobs = [Job(src, [target], fmt=fmt if is_stdio(target) else None, packed=packed) for src, target in zip(inputs, targets)]
    if packed:
        pack.refuse_packing_an_input(inputs, output)
    else:
        batch_targets.refuse_collisions(jobs)

    def each(check) -> None:
        set_aside(jobs, check, refused)

    def headers(job: Job) -> None:  # headers only: the data is read when the job runs
        many = job.target is None or io.is_archive(job.target) or (job.fmt or "").lower().lstrip(".") == "npz"
        job.tensors = io.read_tensors(job.src, member) if many else [io.read_tensor(job.src, member)]

    def rules(job: Job) -> None:
        for tensor in job.tensors:
            out_shape = core.check(node, tensor, where=tensor.source or tensor.name)
            if job.target is not None:
                batch_targets.check_target(job.target, output if parents else None, tensor.dtype,
                                           math.prod(out_shape), job.fmt, tensor)

    each(headers)
    each(rules)
    if packed:
        pack.refuse_member_collisions([(j.src, [pack.member_of(t, j.src) for t in j.tensors]) for j in jobs], output)
    for job in jobs:  # the device last: opening it is the slowest check
        for tensor in job.tensors:
            core.check_device(tensor, backend)
    return jobs


def set_aside(jobs: list[Job], check: Callable[[Job], object], refused: Optional[list[Refused]],
              output_of: Callable[[Job], Optional[Path]] = lambda job: job.output) -> None:
    """``check(job)`` for each job, in order. A refusal refuses the batch --
    or, given a ``refused`` list (--keep-going), puts the job there (its
    tensors closed, named with ``output_of(job)``: what it would have
    written) and leaves it out of ``jobs``."""
    for job in list(jobs):
        try:
            check(job)
        except OnnxopError as e:
            if refused is None:
                raise
            refused.append(Refused(job.src, output_of(job), e.message))
            for tensor in job.tensors:
                if tensor is not None:
                    tensor.close()
            jobs.remove(job)


# ------------------------------------------------------------------ running


RunJob = Callable[[Job, Any], list]  # (job, the batch's one archive or None) -> [(its inputs, Result)] per run


def run(jobs: list[Job], run_job: RunJob, *, parents: bool = False) -> Iterator[Ran]:
    """Run the planned jobs in order, yielding each when it is done; how a
    job runs is its kind's (``view_jobs``, cli/tensor_ops.py), given the
    batch's archive when the results are packed. A failure stops the batch:
    BatchFailed says what was written before it; so does one the caller
    throws in (``.throw``) while it handles a job (Split's parts: none of
    the job's parts is in place, each is committed once all are made)."""
    from . import signals

    if jobs and jobs[0].packed:
        yield from _run_packed(jobs, run_job)
        return
    written: list[Path] = []
    for i, job in enumerate(jobs):
        try:
            signals.checkpoint()  # a signal held since the last output was committed ends the batch here
            if parents:
                for target in job.written():
                    _make_folders(target)
            yield Ran(job, i, run_job(job, None))
        except (Exception, KeyboardInterrupt) as e:
            raise BatchFailed(e, job, written, len(jobs)) from e
        finally:
            _close(job)
        written += [t for t in dict.fromkeys(job.targets) if t is not None]


def _run_packed(jobs: list[Job], run_job: RunJob) -> Iterator[Ran]:
    """Every job's results into the one archive, which appears only once all
    have run; the jobs are yielded after that."""
    from .. import io
    from . import signals

    target = jobs[0].target
    assert target is not None
    ran: list[Ran] = []
    with io.open_writer(target, fmt=jobs[0].fmt) as writer:  # (stdout: --format npz's stream)
        for i, job in enumerate(jobs):
            try:
                signals.checkpoint()
                results = run_job(job, writer)
            except (Exception, KeyboardInterrupt) as e:
                raise BatchFailed(e, job, [], len(jobs)) from e
            finally:
                _close(job)
            ran.append(Ran(job, i, results))
    yield from ran


def _close(job: Job) -> None:
    """A batch holds an input's descriptor only until its job is done."""
    for tensor in job.tensors:
        if tensor is not None:
            tensor.close()


def view_jobs(node: Node, *, backend, member: Optional[str] = None, track: Track = untracked,
              full: bool = False) -> RunJob:
    """How a view operator's job runs: each tensor of its file alone through
    the node -- into the batch's archive (a member each), printed (no -o),
    or into the job's one output. ``track(source, label)`` wraps each
    tensor's bytes as they are read (the CLI's progress bars)."""
    from .pack import member_of

    run_one = _runner(node, backend, track)

    def run_job(job: Job, archive) -> list:
        if archive is not None:
            return _run_into(node, job, archive, lambda t: member_of(t, job.src), run_one)
        if job.target is None:
            return _print_job(node, job, run_one, backend=backend, track=track, full=full)
        return _run_job(node, job, run_one, member=member)

    return run_job


def _make_folders(target: Path) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"{target.parent}: cannot create the folder: {e.strerror or e}") from None


def _run_job(node: Node, job: Job, run_one, *, member: Optional[str]) -> list:
    from .. import io
    from ..io.stdio import is_stdio

    target = job.target
    assert target is not None
    # -o naming the input archive, with --member: the other members stay
    update = member is not None and io.same_file(job.src, target)

    def name_of(t: Tensor) -> str:
        if is_stdio(target):
            return t.name if t.named and io.stream_suffix(job.fmt) == ".npz" else node.op.outputs[0]
        return io.output_name(t, target)

    with io.open_writer(target, update=update, fmt=job.fmt) as writer:
        return _run_into(node, job, writer, name_of, run_one)


def _run_into(node: Node, job: Job, writer, name_of, run_one) -> list[tuple[list[Tensor], Result]]:
    """A job's tensors into an open writer, each named ``name_of(tensor)``."""
    from ..io.stdio import is_stdio

    target = job.target
    path = None if is_stdio(target) else target
    return [([t], run_one(t, writer=writer, out_path=path, out_name=name_of(t))) for t in job.tensors]


def _runner(node: Node, backend, track: Track):
    """One tensor through the node, its bytes counted by ``track``."""
    from . import apply as core

    def run_one(tensor: Tensor, **kw) -> Result:
        with track(tensor.data, f"{node.op_type} {tensor.name}") as data:
            return core.apply(node, replace(tensor, data=data), backend=backend, **kw)

    return run_one


def _print_job(
    node: Node, job: Job, run_one, *, backend, track: Track, full: bool
) -> list[tuple[list[Tensor], Result]]:
    """No -o: each tensor run to be printed. A large result that is only
    summarised (print mode, --json) is not made: only its shown elements go
    through the kernel (core/summary.py), and the result carries them as
    ``shown``."""
    from .summary import EDGE_ITEMS
    from .sources import MAP_THRESHOLD, MemoryBytes, StreamBytes
    from .summary import summarised_result

    ran = []
    for tensor in job.tensors:
        if isinstance(tensor.data, StreamBytes):
            # stdin can be read once: keep it to print the input as well
            with track(tensor.data, f"reading {tensor.name}") as data:
                tensor = replace(tensor, data=MemoryBytes(data.to_array()))
        summarised = None if full else summarised_result(
            node, tensor, edge=EDGE_ITEMS, threshold=MAP_THRESHOLD, backend=backend
        )
        # printed: a large result is not kept in memory
        ran.append(([tensor], summarised or run_one(tensor, spill=True)))
    return ran
