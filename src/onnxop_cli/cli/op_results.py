"""What every operator command does with its results, whatever the kind of
operator (a view operator's batch, core/batch.py, or a tensor operator's
jobs, cli/tensor_ops.py): the --full refusal, the printout, the line per
output written, the jobs --keep-going set aside and the one --json document
(docs/json.md). A run is
(inputs, core/apply_tensors.Result): a view operator's has one input and
one output, a tensor operator's any number.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Optional, Sequence

from ..errors import UsageError
from ..render.node import quote  # names and paths from files, in a line of text
from .console import Out


def refuse_full(full: bool, output: Optional[Path], out: Out) -> None:
    """--full prints every value of the printed node: with -o or --json nothing is printed."""
    if full and (output is not None or out.json):
        given = "-o" if output is not None else "--json"
        raise UsageError(f"--full prints every value of the printed node, and with {given} no node is printed; "
                         f"drop --full or {given}")


def wrote(out: Out, node, inputs: Sequence, output, target, note: str) -> None:
    """``Op: x (2, 3) float32[, ...] -> y (6,) float32, wrote y.npy (note)``: said once the output is in place."""
    from ..io.stdio import stdio_label

    ins = ", ".join(f"{quote(t.name)} {tuple(t.shape)} {t.dtype}" for t in inputs if t is not None)
    out.note(f"{quote(node.op_type)}: {ins} -> {quote(output.name)} {tuple(output.shape)} {output.dtype}, "
             f"wrote {quote(stdio_label(target))}" + (f" ({note})" if note else ""))


def said(node, runs, out: Out, *, full: bool, titled: bool) -> list:
    """Each job as the batch (core/batch.run) runs it: its node printed (no
    -o; ``titled``: with several inputs), or a line per output written. A
    failure while saying a job stops the batch as one while running it.
    Returns (Result, input path, None: the result's own paths) per node run,
    for --json."""
    done = []
    for ran in runs:
        try:
            job = ran.job
            if job.targets[:1] == [None]:
                show(node, job.src, ran.results, out, full=full, titled=titled, first=ran.index == 0)
            else:
                for inputs, result in ran.results:
                    for output, target in zip(result.outputs, job.targets):
                        wrote(out, node, inputs, output, target, result.note)
        except (Exception, KeyboardInterrupt) as e:
            runs.throw(e)  # a failure while printing a job stops the batch like one while running it
        done += [(result, ran.job.src, None) for _, result in ran.results]
    return done


def show(node, src, runs: Sequence[tuple[Sequence, object]], out: Out, *, full: bool, titled: bool,
         first: bool) -> None:
    """Runs to be printed: each run's node as the ONNX docs print examples
    (a summarised output as its shown elements). With several inputs
    (``titled``) each file's blocks follow a title line, ``# FILE``, as
    doc-examples --show titles its examples; ``first``: the batch's first."""
    from ..io.stdio import stdio_label
    from ..render.node import Shown, node_lines

    if out.json:
        return
    blocks: list[str] = []
    for inputs, result in runs:
        shown_in = [Shown(t.name, t.shape, t.dtype.name, t.to_numpy(native=False)) for t in inputs if t is not None]
        shown = result.shown or [(t.to_numpy(), False) for t in result.outputs]  # type: ignore[attr-defined]
        shown_out = [Shown(t.name, t.shape, t.dtype.name, values, note=result.note, summarised=summarised)
                     for t, (values, summarised) in zip(result.outputs, shown)]  # type: ignore[attr-defined]
        title = [f"# {quote(stdio_label(src))}"] if titled and not blocks else []
        if full:  # every value: streamed line by line as it is made (a reader that leaves stops it at once)
            lines = node_lines(node, shown_in, shown_out, full=True)
            out.stream(itertools.chain([""] * bool(blocks or not first), title, lines))
        blocks.append("" if full else "\n".join([*title, *node_lines(node, shown_in, shown_out)]))
    if blocks and not full:
        out.result(("" if first else "\n") + "\n\n".join(blocks))


def finish(out: Out, command: str, node, opset: int, done, backend, started: float,
           refused: Optional[list]) -> int:
    """After the batch ran: the warning if its 'wrote' lines were lost, a
    line per job --keep-going set aside (``refused``: a list with it, else
    None), the --json document; the exit code (2 if a job was set aside)."""
    from ..errors import ExitCode
    from ..render import json as report

    out.warn_lost()
    code = ExitCode.USAGE if refused else ExitCode.SUCCESS
    for r in refused or []:
        out.refused(f"refused, not run: {r.message}")
    if out.json:
        out.document(
            document(command, node, opset, done, backend, started)
            | ({"status": "failed", "exit_code": int(code), "refused": [report.refused_entry(r) for r in refused]}
               if refused is not None else {})
            | ({"any_type": True} if node.any_type else {})
        )
    return code


def document(command: str, node, opset: int, done, backend, started: float) -> dict:
    """The --json document: ``done`` holds (Result, input path, output paths
    or None for the result's own) per run. ``backend`` and ``adapter`` are
    the device's that ran (as run's are), "host" when none was opened."""
    from ..gpu.device import opened
    from ..render import json as report

    gpu = opened(backend)
    adapters = [r.adapter for r, _, _ in done if r.adapter != "host"]
    return report.op_document(
        command, node, opset, [report.run_entry(r, src, paths) for r, src, paths in done],
        backend=gpu.info.our_backend if gpu is not None else "host",
        adapter=adapters[-1] if adapters else gpu.name if gpu is not None else "host",
        total=time.perf_counter() - started,
    ) | _kernels_used(backend)


def _kernels_used(backend) -> dict:
    """For --json: ``kernel``, the flat copy kernel that ran on ``backend``'s
    adapter in this process and why, or None if none did; ``schedules``, each
    schedule question its kernels asked (gpu/choose.py) and its answer."""
    from ..gpu.choose import schedules_used
    from ..gpu.device import opened

    gpu = opened(backend)
    return {"kernel": gpu.kernel_used.document() if gpu is not None and gpu.kernel_used else None,
            "schedules": schedules_used(gpu)}
