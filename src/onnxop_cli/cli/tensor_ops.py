"""Commands of the operators with tensor inputs (ops/tensor_op.py), from ops.SPECS.

One rule for every such operator:

- the first ONNX input is the positional FILE...: a batch, one job per file
  (every member of an .npz without --member); a variadic first input
  (Concat) takes all of them as its inputs, in one job;
- every other input is an option named after it in kebab case, taking a
  literal list (``--pads 0,1,0,1``) or a tensor file (``--indices i.npy``,
  ``--indices w.npz:idx`` for one member); attributes are options as always;
- several outputs (Split): ``-o`` is a folder (``x_0.npy``, ``x_1.npy``:
  the input's stem, ``_k``, its suffix) or an ``.npz`` (members x_0, ...);
  without -o every output is printed.

Every job is planned (headers read, shape rules, types, outputs checked)
before the first is run: a secondary input that does not fit some job
refuses the whole batch, exit 2, and nothing is written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import typer

from .help import TENSOR_OPERATORS
from ..errors import OnnxopError, UsageError
from ..ops import OpSpec
from . import op_results
from .tensor_inputs import attribute_value, is_file, option_name, secondary, tensor_attribute

# ------------------------------------------------------------ planning


@dataclass
class TensorJob:
    src: Path  # the first positional file (for names and messages)
    tensors: list  # the node's inputs, in ONNX order (None: left out)
    plans: list = field(default_factory=list)
    targets: list = field(default_factory=list)  # per output: Path, "-" or None (printed)
    member_names: list = field(default_factory=list)
    fmt: Optional[str] = None  # --format: what -o - writes, the suffix of the files written into -o FOLDER


def build(spec: OpSpec, opset: int, given: dict[str, Optional[str]]):
    """The node (attributes) and the secondary input tensors, by ONNX name."""
    from ..ops import op_version
    from ..ops.base import Node

    op = op_version(spec.op_type, opset)
    label = f"{op.op_type}-{op.since_version}"
    attributes: dict[str, object] = {}
    texts: dict[str, str] = {}
    for param in spec.params:
        text = given.get(param.name)
        if text is None:
            continue
        if param.name in op.attribute_names and param.kind == "value":  # a tensor attribute (ConstantOfShape)
            attributes[param.name] = tensor_attribute(spec, param, text)
        elif param.name in op.attribute_names:
            if param.kind == "tensor" and is_file(text):
                raise UsageError(f"{label} (opset {opset}) keeps {param.name} as an attribute: give a list, not a file")
            attributes[param.name] = attribute_value(spec, param, text)
        elif param.name in op.inputs[1:]:
            texts[param.name] = text
        else:
            have = ", ".join(option_name(p) for p in (*op.attribute_names, *op.inputs[1:])) or "no options"
            raise UsageError(f"{label} (opset {opset}) has no {param.option} (it takes {have})")
    missing = [a for a in op.attribute_names if a not in op.optional and a not in attributes]
    if missing:
        raise UsageError(f"{label} needs {' and '.join(option_name(m) for m in missing)}")
    return op, Node(op, attributes, opset=opset), texts


def plan_jobs(spec: OpSpec, op, node, files: list[Path], member: Optional[str], texts: dict[str, str],
              output: Optional[Path], fmt: Optional[str] = None) -> list[TensorJob]:
    from ..core import apply_tensors
    from ..core.pack import check_format
    from .. import io
    from ..io.stdio import is_stdio

    multi = op.variadic_output or len(op.outputs) > 1
    if fmt is not None:  # as the view commands: -o - or -o FOLDER, and never against a file's own suffix
        io.stream_suffix(fmt)  # a format onnxop writes
        if not (multi and output is not None and not is_stdio(output) and not io.is_archive(output)):
            check_format(fmt, output)  # (several outputs: any other -o is a folder of parts, made if need be)

    firsts = [(f, t) for f in files for t in io.read_tensors(f, member)]
    if op.variadic:
        jobs_inputs = [(files[0], [t for _, t in firsts])]
    else:
        jobs_inputs = [(f, [t]) for f, t in firsts]
    jobs: list[TensorJob] = []
    for src, tensors in jobs_inputs:
        extra = secondary(op, texts, tensors[0])
        full = list(tensors)
        if not op.variadic:
            full += [extra.get(name) for name in op.inputs[1:]]
            while len(full) > 1 and full[-1] is None:
                full.pop()
        where = tensors[0].source or tensors[0].name
        plans = apply_tensors.check(node, full, where=where)
        jobs.append(TensorJob(src, full, plans, fmt=fmt))
    _assign_targets(jobs, output, multi=multi)
    check_targets(jobs)
    return jobs


def check_targets(jobs: list[TensorJob]) -> None:
    """Every target refused before anything runs, as the view commands' are:
    two results on one path, a folder that cannot be written, a type or size
    the format cannot hold (stdout's format included: a .npy stream cannot
    describe bfloat16, ``--format pb`` can)."""
    from .. import io
    from ..io.stdio import is_stdio

    seen: dict[str, Path] = {}
    for job in jobs:
        for target, p in zip(job.targets, job.plans):
            if target is None:
                continue
            nbytes = 0 if p.dtype.is_string else p.dtype.nbytes(p.size)
            if is_stdio(target):  # the same rules as a file: a type the stream's format cannot describe
                io.check_output(target, p.dtype, nbytes=nbytes, fmt=job.fmt)
                continue
            key = str(Path(target).resolve())
            if key in seen and not io.is_archive(Path(target)):
                raise UsageError(f"{target}: two results would be written here ({seen[key]} and {job.src}); "
                                 "give each input its own name")
            seen[key] = job.src
            _check_target(Path(target), p.dtype, nbytes)


def _check_target(target: Path, dtype, nbytes: int) -> None:
    """io's output checks; a folder of parts that does not exist yet is made
    when the job runs, so its nearest existing folder must be writable."""
    from .. import io
    from ..core.batch_targets import check_folders

    if target.parent.is_dir():
        io.check_output(target, dtype, nbytes=nbytes)
        return
    check_folders(target)
    io.check_format(target, dtype, nbytes=nbytes)


def _assign_targets(jobs: list[TensorJob], output: Optional[Path], multi: bool) -> None:
    from ..io.stdio import is_stdio

    for job in jobs:
        n = len(job.plans)
        stem = job.src.stem if not is_stdio(job.src) else "x"
        own = "." + job.fmt.lower().lstrip(".") if job.fmt else None  # --format: the files' suffix
        if len(job.tensors) and job.tensors[0] is not None and job.tensors[0].named:
            stem = job.tensors[0].name
        job.member_names = [f"{stem}_{k}" for k in range(n)] if multi else [None] * n
        if output is None:
            job.targets = [None] * n
            continue
        if is_stdio(output):
            if n != 1 or len(jobs) > 1:
                raise UsageError(f"-o -: stdout takes one tensor, this writes {n * len(jobs)}; use -o FOLDER or an .npz")
            job.targets = [output]
            continue
        if multi and not (n == 1 and len(jobs) == 1 and _names_a_file(output)):  # one part to -o FILE: the file
            if output.suffix.lower() == ".npz":
                if len(jobs) > 1:
                    raise UsageError(f"{output}: with {len(jobs)} inputs, -o must be a folder")
                job.targets = [output] * n
            else:
                suffix = own or (job.src.suffix.lower() if job.src.suffix.lower() in (".npy", ".pb") else ".npy")
                job.targets = [output / f"{stem}_{k}{suffix}" for k in range(n)]
            continue
        if output.is_dir():
            name = job.src.name if job.src.suffix.lower() in (".npy", ".pb") else f"{stem}.npy"
            job.targets = [output / (Path(name).with_suffix(own) if own else name)]
        elif len(jobs) > 1:
            raise UsageError(f"{output}: with {len(jobs)} inputs, -o must be an existing folder")
        else:
            job.targets = [output]


def _names_a_file(output: Path) -> bool:
    """``-o`` names a tensor file (.npy, .pb), not a folder to make."""
    return output.suffix.lower() in (".npy", ".pb") and not output.is_dir()


# ------------------------------------------------------------ running


def run_jobs(spec: OpSpec, node, jobs: list[TensorJob], backend, out, full: bool) -> list:
    """The planned jobs in order, each printed or written (and said) when it
    is done. A failure stops the batch as a view operator's does
    (core/batch.BatchFailed): the line and --json say what was written before
    it -- but for a job of several files (Split's parts), which has no one
    output to name as not written."""
    from ..core import apply_tensors, signals
    from ..core.batch import BatchFailed, Job

    if len(jobs) > 1:  # what only the device can check (indices), for every job before any writes
        for job in jobs:
            apply_tensors.precheck(job.plans, job.tensors, backend, where=str(job.src))
    done: list = []
    written: list = []
    for job in jobs:
        try:
            signals.checkpoint()
            result = _run_job(node, job, backend, full)
            done.append((job, result))
            if job.targets and job.targets[0] is None:
                op_results.show(node, job.src, [(job.tensors, result)], out, full=full, titled=len(jobs) > 1,
                                first=len(done) == 1)
            for t, target in zip(result.outputs, job.targets):
                if target is not None:
                    op_results.wrote(out, node, job.tensors, t, target, result.note)
        except (Exception, KeyboardInterrupt) as e:
            if len({str(t) for t in job.targets}) > 1:  # a folder of parts: no one output to name as not written
                raise
            raise BatchFailed(e, Job(job.src, job.targets[0] if job.targets else None), written, len(jobs)) from e
        written += [t for t in dict.fromkeys(job.targets) if t is not None]
    return done


def _run_job(node, job: TensorJob, backend, full: bool):
    """One job's result: printed (no -o: a large output only summarised), or its outputs written."""
    from contextlib import contextmanager, ExitStack

    from ..core import apply_tensors
    from ..core.sources import MAP_THRESHOLD
    from ..core.summary import EDGE_ITEMS, summarised_tensor_op
    from .. import io
    from ..io.stdio import is_stdio

    if job.targets and job.targets[0] is None:
        result = None if full else summarised_tensor_op(node, job.tensors, edge=EDGE_ITEMS, threshold=MAP_THRESHOLD,
                                                     backend=backend)  # only what is shown is made
        if result is None:
            return apply_tensors.apply_node(node, job.tensors, backend=backend, names=_names(job), spill=True)
        for t, name in zip(result.outputs, _names(job)):
            t.name = name
        return result
    with ExitStack() as stack:
        writers: dict[str, Any] = {}

        def writer_for(target):
            key = str(target)
            if key not in writers:
                parent = Path(target).parent
                if not is_stdio(target) and not parent.exists():  # a folder of parts
                    parent.mkdir(parents=True, exist_ok=True)
                writers[key] = stack.enter_context(io.open_writer(Path(target), fmt=job.fmt))
            return writers[key]

        @contextmanager
        def sinks(k, p):
            target = job.targets[k]
            w = writer_for(target)
            name = job.member_names[k] or (spec_output_name(node, p, target))
            if p.dtype.is_string:
                yield lambda values: w.strings(name, values, "")
                return
            with w.tensor(name, p.shape, p.dtype) as sink:
                yield sink

        return apply_tensors.apply_node(node, job.tensors, backend=backend, sinks=sinks, names=_names(job))


def spec_output_name(node, p, target) -> str:
    from ..io.stdio import is_stdio

    if is_stdio(target):
        return p.name
    return Path(target).stem


def _names(job: TensorJob) -> list[str]:
    return [m or p.name for m, p in zip(job.member_names, job.plans)]


# ------------------------------------------------------------ commands


def add_command(spec: OpSpec) -> None:
    from . import options as cli
    from .params import _tensor_option, register

    def run_op(ctx: typer.Context, inputs, *, output, opset, full, member, parents, fmt, keep_going, any_type,
               **given):
        started = time.perf_counter()
        for flag, value in (("--parents", parents), ("--keep-going", keep_going), ("--any-type", any_type)):
            if value:
                raise UsageError(f"{spec.command}: {flag} is not supported for this operator")
        out = cli._out(ctx)
        op_results.refuse_full(full, output, out)
        cli._check_stdio(inputs, None, out)  # (several inputs may make the one tensor -o - takes)
        cli.stdout_for_data(output, out)
        op, node, texts = build(spec, opset, {p.name: given[f"p_{p.name}"] for p in spec.params})
        b = cli._backend(ctx)
        jobs = plan_jobs(spec, op, node, list(inputs), member, texts, output, fmt)
        from ..core import apply_tensors

        if any(apply_tensors.needs_device(j.plans) for j in jobs):
            from ..gpu import get_gpu

            get_gpu(b)  # no adapter refuses the batch before anything is written
        if output is not None and str(output) == "-":
            out.data_on_stdout = True
        done = run_jobs(spec, node, jobs, b, out, full)
        if out.json:
            done = [(result, job.src, [None if t is None else str(t) for t in job.targets]) for job, result in done]
            out.document(op_results.document(spec.command, node, opset, done, b, started))

    register(spec, run_op, panel=TENSOR_OPERATORS, option=_tensor_option, output=cli.PartsOutputOpt)


__all__ = ["add_command", "option_name", "OnnxopError"]
