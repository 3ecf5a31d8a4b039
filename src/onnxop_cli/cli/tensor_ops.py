"""Commands of the operators with tensor inputs (ops/tensor_op.py), from ops.SPECS.

One rule for every such operator:

- the first ONNX input is the positional FILE...: a batch, one job per file
  (every member of an .npz without --member, which a -o of one tensor
  needs, as a view operator's does); a variadic first input
  (Concat) takes all of them as its inputs, in one job;
- every other input is an option named after it in kebab case, taking a
  literal list (``--pads 0,1,0,1``) or a tensor file (``--indices i.npy``,
  ``--indices w.npz:idx`` for one member); attributes are options as always;
- several outputs (Split): ``-o`` is a folder (``x_0.npy``, ``x_1.npy``:
  the input's stem, ``_k``, its suffix) or an ``.npz`` (members x_0, ...),
  never one .npy or .pb file (but for one part of one input);
  without -o every output is printed.

Every job is planned (headers read, shape rules, types, outputs checked)
before the first is run: a secondary input that does not fit some job
refuses the whole batch, exit 2, and nothing is written. The batch is a
view operator's (core/batch.py): its Job, its output rules and refusals
(core/batch_targets.py: --parents, two results on one path, an output that
is another input), --keep-going where a command has several jobs, progress
bars, and its failure (BatchFailed).
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

import typer

from .help import TENSOR_OPERATORS
from ..core import batch
from ..core.batch import Job, Refused, RunJob, Track, set_aside, untracked
from ..errors import OnnxopError, UsageError
from ..ops import OpSpec
from . import op_results
from .tensor_inputs import attribute_value, is_file, option_name, secondary, tensor_attribute

# ------------------------------------------------------------ planning


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
              output: Optional[Path], fmt: Optional[str] = None, *, parents: bool = False,
              refused: Optional[list[Refused]] = None) -> list[Job]:
    """The jobs of a batch (a job per first input: per file, per member of an
    archive; Concat's one), every refusal made -- or, given a ``refused``
    list (--keep-going), each refused job set aside there."""
    from ..core import apply_tensors, batch_targets
    from ..core.pack import check_format
    from .. import io
    from ..io.stdio import is_stdio

    multi = op.variadic_output or len(op.outputs) > 1

    def aside(jobs: list[Job], check) -> None:  # a job set aside names what it would have written
        set_aside(jobs, check, refused, lambda job: batch_targets.planned_output(job, output, multi=multi,
                                                                                 parents=parents))
    if fmt is not None:  # as the view commands: -o - or -o FOLDER, and never against a file's own suffix
        io.stream_suffix(fmt)  # a format onnxop writes
        if not (multi and output is not None and not is_stdio(output) and not io.is_archive(output)):
            check_format(fmt, output)  # (several outputs: any other -o is a folder of parts, made if need be)

    if op.variadic:
        jobs = [Job(files[0], [], [t for f in files for t in io.read_tensors(f, member)], fmt=fmt)]
    else:
        jobs = [Job(f, [], fmt=fmt) for f in files]
        one = batch_targets.one_tensor_each(output, fmt, multi=multi, parents=parents)  # (an archive: --member)
        aside(jobs, lambda job: job.tensors.extend([io.read_tensor(job.src, member)] if one else
                                                   io.read_tensors(job.src, member)))
        jobs = [Job(job.src, [], [t], fmt=fmt) for job in jobs for t in job.tensors]
    count = len(jobs) + len(refused or [])  # the batch's inputs, for a message about -o

    def rules(job: Job) -> None:
        extra = secondary(op, texts, job.tensors[0])
        if not op.variadic:
            job.tensors += [extra.get(name) for name in op.inputs[1:]]
            while len(job.tensors) > 1 and job.tensors[-1] is None:
                job.tensors.pop()
        first = job.tensors[0]
        job.plans = apply_tensors.check(node, job.tensors, where=first.source or first.name)

    aside(jobs, rules)
    batch_targets.assign_outputs(jobs, output, multi=multi, parents=parents, count=count)
    if jobs and jobs[0].packed:
        from ..core import pack

        pack.refuse_packing_an_input(files, output)  # type: ignore[arg-type]
        pack.refuse_member_collisions([(j.src, j.member_names) for j in jobs], output)  # type: ignore[arg-type]
    else:
        batch_targets.refuse_collisions(jobs)
    aside(jobs, lambda job: _check_targets(job, output, parents))
    return jobs


def _check_targets(job: Job, output: Optional[Path], parents: bool) -> None:
    """Every target refused before anything runs, as the view commands' are:
    a folder that cannot be written, a type or size the format cannot hold
    (stdout's format included: a .npy stream cannot describe bfloat16,
    ``--format pb`` can). A folder of parts is made when the job runs; the
    folder of any other -o must exist, as a view operator's must."""
    from ..core.batch_targets import check_target
    from ..io.stdio import is_stdio

    for target, p in zip(job.targets, job.plans):
        if target is not None:
            fmt = job.fmt if is_stdio(target) else None  # (a file's format is its suffix)
            check_target(Path(target), output if parents else None, p.dtype, p.size, fmt, made=job.parts)


def prechecked(jobs: list[Job], backend, refused: Optional[list[Refused]]) -> None:
    """What only the device can check (indices), for every job of a batch
    before any job writes: refused as a job's plan is."""
    from ..core import apply_tensors

    if len(jobs) > 1:
        set_aside(jobs, lambda job: apply_tensors.precheck(job.plans, job.tensors, backend, where=str(job.src)),
                  refused)


# ------------------------------------------------------------ running


def tensor_jobs(node, backend, full: bool, track: Track = untracked) -> RunJob:
    """How a tensor operator's job runs in the batch (core/batch.run): the
    node once on the job's inputs, their bytes counted by ``track`` (the
    progress bars) -- printed (no -o: a large output only summarised), or
    its outputs written into the batch's archive (packed) or its own
    targets, each file committed when the job is done."""
    from contextlib import contextmanager, ExitStack

    from ..core import apply_tensors
    from ..core.batch import _make_folders
    from ..core.sources import MAP_THRESHOLD
    from ..core.summary import EDGE_ITEMS, summarised_tensor_op
    from .. import io

    def run_job(job: Job, archive) -> list:
        result = _run(job, archive)
        result.paths = [None if t is None else str(t) for t in job.targets]
        return [(job.tensors, result)]

    def _run(job: Job, archive):
        printed = bool(job.targets) and job.targets[0] is None
        if printed and not full:
            result = summarised_tensor_op(node, job.tensors, edge=EDGE_ITEMS, threshold=MAP_THRESHOLD,
                                          backend=backend)  # only what is shown is made
            if result is not None:
                for t, name in zip(result.outputs, _names(job)):
                    t.name = name
                return result
        with ExitStack() as stack:
            tensors = [None if t is None else replace(t, data=stack.enter_context(track(t.data, f"{node.op_type} {t.name}")))
                       for t in job.tensors]
            if printed:
                return apply_tensors.apply_node(node, tensors, backend=backend, names=_names(job), spill=True)
            writers: dict[str, Any] = {}

            def writer_for(target):
                if archive is not None:
                    return archive
                key = str(target)
                if key not in writers:
                    if job.parts:  # (--parents folders: batch.run's)
                        _make_folders(Path(target))
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

            return apply_tensors.apply_node(node, tensors, backend=backend, sinks=sinks, names=_names(job))

    return run_job


def spec_output_name(node, p, target) -> str:
    from ..io.stdio import is_stdio

    if is_stdio(target):
        return p.name
    return Path(target).stem


def _names(job: Job) -> list[str]:
    return [m or p.name for m, p in zip(job.member_names, job.plans)]


# ------------------------------------------------------------ commands


def add_command(spec: OpSpec) -> None:
    from . import options as cli
    from .params import _tensor_option, register

    def run_op(ctx: typer.Context, inputs, *, output, opset, full, member, parents, fmt, keep_going, any_type,
               **given):
        started = time.perf_counter()
        if any_type:
            raise UsageError(f"{spec.command}: --any-type lets a view operator's index map move a type its opset "
                             f"excludes; {spec.op_type} takes only its opset's types; drop --any-type")
        out = cli._out(ctx)
        op_results.refuse_full(full, output, out)
        op, node, texts = build(spec, opset, {p.name: given[f"p_{p.name}"] for p in spec.params})
        cli._check_stdio(inputs, None if op.variadic else output, out)  # (Concat's inputs: the one tensor of -o -)
        cli.stdout_for_data(output, out)
        if keep_going and op.variadic:
            raise UsageError(f"{spec.command}: --keep-going sets aside the refused inputs of a batch, and "
                             f"{spec.op_type} makes one node of all its inputs; drop --keep-going")
        b = cli._backend(ctx)
        refused: Optional[list] = [] if keep_going else None
        jobs = plan_jobs(spec, op, node, list(inputs), member, texts, output, fmt, parents=parents, refused=refused)
        from ..core import apply_tensors

        if any(apply_tensors.needs_device(j.plans) for j in jobs):
            from ..gpu import get_gpu

            get_gpu(b)  # no adapter refuses the batch before anything is written
        prechecked(jobs, b, refused)
        if output is not None and str(output) == "-":
            out.data_on_stdout = True
        runs = batch.run(jobs, tensor_jobs(node, b, full, track=cli._tracker(out)), parents=parents)
        done = op_results.said(node, runs, out, full=full, titled=len(jobs) > 1)
        return op_results.finish(out, spec.command, node, opset, done, b, started, refused)

    register(spec, run_op, panel=TENSOR_OPERATORS, option=_tensor_option,
             common={"output": cli.PartsOutputOpt, "any_type": cli.RefusedAnyTypeOpt})


__all__ = ["add_command", "option_name", "OnnxopError"]
