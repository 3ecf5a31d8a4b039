"""Run one node on one tensor: the single-input front end of the one apply
path (core/apply_tensors.py), for the view operators' commands.

    read (io) -> Tensor -> node.op.plan (pure: one region, the node's view) ->
    apply_tensors' executor (flat copy, runs or strided gather) -> sink (file or memory)

Everything that can be refused is refused before the GPU is touched and
before an output file is opened. The node's index map is composed with the
input's own layout (a Fortran-ordered input is a view with reversed strides):
when the result reads the input front to back (a reshape of row-major
little-endian data) the flat copy kernel moves it, otherwise the strided
gather kernel, which also swaps big-endian bytes. String tensors, which have
no GPU form, are gathered on the host and the result says so. What this
module adds to the executor: one tensor in and out (the executor's
``Result``, its one-output case), an open writer or an output path, a
spilled printed result, stdin checked to its end.
"""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from ..errors import OnnxopError, OpError  # noqa: F401 - OnnxopError: raised through this module by callers
from ..ops import Node
from .apply_tensors import HOST_NOTE, Result, apply_node, check as check_plans  # noqa: F401 - HOST_NOTE: named here too
from .sources import MAP_THRESHOLD, finish  # noqa: F401 - MAP_THRESHOLD: print mode's spill threshold, named here too
from .tensor import Tensor

if TYPE_CHECKING:
    from ..io import Writer


def any_type_note(node: Node, tensor: Tensor) -> str:
    """Said next to a result that --any-type let through (empty when the type is allowed)."""
    from ..ops import check_type

    if not node.any_type:
        return ""
    try:
        check_type(replace(node, any_type=False), tensor.dtype)
    except OpError:
        name = "string" if tensor.dtype.is_string else tensor.dtype.name
        return f"--any-type: {node.op_type}-{node.op.since_version}'s type list excludes {name}"
    return ""


def check(node: Node, tensor: Tensor, where: str = "") -> tuple[int, ...]:
    """Everything that can be refused before the GPU is touched: the shape rule,
    the types the node's opset allows, the layout. Returns the output shape.

    The operator's refusals know the rank and the type, not the file: ``where``
    (the file's label, on the command line) is put in front of them."""
    return check_plans(node, [tensor], where)[0].shape


def check_device(tensor: Tensor, backend: str | None = None) -> None:
    """Open the device before a batch writes anything, so that a missing
    adapter refuses the whole batch. (Nothing else is refused here: the flat
    copy and the gather take every fixed-width tensor at any size.) String
    tensors need no device."""
    if tensor.dtype.is_string:
        return
    from ..gpu import get_gpu

    get_gpu(backend)


def apply(
    node: Node,
    tensor: Tensor,
    *,
    backend: str | None = None,
    out_path: Path | None = None,
    out_name: str | None = None,
    writer: Writer | None = None,
    spill: bool = False,
) -> Result:
    """Apply ``node`` to ``tensor`` on the GPU (the executor's ``apply_node``).

    The result streams into ``writer`` (an open output, see ``io.open_writer``)
    or into the file ``out_path`` (atomically); otherwise it is returned in
    memory -- or, with ``spill``, in an unlinked temporary file mapped
    read-only once it is ``MAP_THRESHOLD`` bytes or more (for printing,
    which reads back only what it shows). String tensors are reshaped on
    the host: they have no GPU form.
    """
    from ..io import open_writer

    name = out_name or (out_path.stem if out_path else node.op.outputs[0])

    @contextmanager
    def sinks(k: int, plan) -> Iterator[object]:
        with ExitStack() as stack:
            w = writer or stack.enter_context(open_writer(out_path))  # type: ignore[arg-type]
            if tensor.dtype.is_string:
                yield lambda values: w.strings(name, values, tensor.text_dtype)
                return
            with w.tensor(name, plan.shape, plan.dtype) as sink:
                yield sink
                # stdin read to its end and checked before an output is kept: a
                # truncated stream or trailing bytes are refused as the same file is
                finish(tensor.data)

    written = writer is not None or out_path is not None
    result = apply_node(node, [tensor], backend=backend, sinks=sinks if written else None, names=[name], spill=spill)
    if not written:
        finish(tensor.data)
    out = result.output
    out.source, out.named, out.text_dtype = str(out_path or ""), tensor.named, tensor.text_dtype
    result.paths, result.note = [out_path], _joined(result.note, any_type_note(node, tensor))
    return result


def _joined(*notes: str) -> str:
    return "; ".join(n for n in notes if n)
