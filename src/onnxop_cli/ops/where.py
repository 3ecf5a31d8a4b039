"""Where: ``X`` where ``condition`` is true, else ``Y``, all three broadcast
as numpy broadcasts.

Where-9 takes the tensor types of its day, Where-16 adds bfloat16. The plan
is one select piece: each output element read from X where the condition
(the kernel's mask) is true and from Y elsewhere, all three through their
own broadcast strides, and written once. Where each input is read in a *run
form* (``run_form``: the output's shape, a scalar, broadcast along leading
axes or a trailing run) the plan runs it through the select the renderer
writes on its whole-word schedule instead (gpu/render/select.py, run by
gpu/word_kernels.py's ``run_select``, ``--json`` kernel ``where``); the
select piece stays in the plan for summaries and for what that kernel
cannot take.
"""

from __future__ import annotations

import functools
import math
from typing import Optional, Sequence

from ..core.region import Select, c_strides, load
from .base import BASE_TYPES, Node, versions
from .tensor_op import Arg, OutputPlan, Piece, TensorOp, broadcast_shape, broadcast_strides
from .spec import OpSpec, Param


class Where_9(TensorOp):
    op_type = "Where"
    since_version = 9
    inputs = ("condition", "X", "Y")
    outputs = ("output",)
    input_types = {"condition": "B", "X": "T", "Y": "T"}
    constraints = {"B": ("bool",)}
    data_input = 1

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        cond, x, y = args
        assert cond is not None and x is not None and y is not None
        shape = broadcast_shape(cls.op_type, [cond.shape, x.shape, y.shape], ["condition", "X", "Y"])
        out = c_strides(shape)
        strides = [broadcast_strides(a, shape) for a in (cond, x, y)]
        pieces = [Piece(shape, out, 0, Select(load(0, shape, strides[0]), load(1, shape, strides[1]),
                                              load(2, shape, strides[2])))]
        forms = [run_form(shape, s) for s in strides]
        from ..gpu.word_kernels import LIMIT  # the select's element arithmetic is u32

        if (x.dtype.is_string or any(f is None for f in forms) or math.prod(shape) >= LIMIT
                or any(getattr(a.tensor, "byteswap", 0) for a in args)):
            return [OutputPlan(cls.outputs[0], shape, x.dtype, pieces=pieces)]
        runner = functools.partial(_run_words, forms, pieces, math.prod(shape), x.dtype.bits)
        return [OutputPlan(cls.outputs[0], shape, x.dtype, pieces=pieces, runner=runner, kernel="where")]


def run_form(shape: Sequence[int], strides: Sequence[int]) -> Optional[tuple[int, int]]:
    """(div, size) when an input read over ``shape`` through ``strides`` (0
    on broadcast axes) is element ``(e // div) % size`` of itself as it lies
    for row-major output element e: its axes of extent > 1 one unbroken run
    of the output's, row-major. None otherwise (two separate runs, Fortran
    order, an offset)."""
    kept = [k for k, (d, s) in enumerate(zip(shape, strides)) if d > 1 and s != 0]
    if not kept:
        return 1, 1
    if any(d > 1 and strides[k] == 0 for k, d in enumerate(shape) if kept[0] < k < kept[-1]):
        return None
    step = 1
    for k in reversed(kept):
        if strides[k] != step:
            return None
        step *= shape[k]
    return math.prod(shape[kept[-1] + 1:]), step


def _run_words(forms, pieces, count: int, bits: int, gpu, sources, sink) -> int:
    from ..gpu.word_kernels import run_select

    return run_select(gpu, sources, sink, forms=forms, fallback=pieces, count=count, bits=bits)


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
TYPES = {9: BASE_TYPES, 16: ("bfloat16",)}
VERSIONS = versions(TYPES, Where_9)

SPEC = OpSpec(
    "Where",
    VERSIONS,
    (
        Param("X", "tensor", "The values where the condition is true (a tensor file, or a list of the type of --y).",
              "a.npy"),
        Param("Y", "tensor", "The values where the condition is false (a tensor file, or a list of the type of "
              "--x).", "b.npy"),
    ),
    summary="Choose elements of two tensors by a condition (ONNX Where).",
    description="For each condition file (bool), the elements of --x where it is true and of --y where it is "
    "false, all three broadcast: the GPU's words kernel when each is the output's shape, a scalar or broadcast "
    "along leading axes or a trailing run, else one pass of the pieces kernel; each output element written once.",
    example="onnxop where c.npy --x a.npy --y b.npy -o w.npy",
)
