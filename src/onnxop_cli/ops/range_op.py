"""Range: ``start + i * delta`` for i in [0, ceil((limit - start) / delta)),
integer types (int16, int32, int64). The three scalars decide the output's
length, so they are read on the host (as Trilu's k); the values are made by
the GPU's elementwise kernel (``Range``: the output element index times
delta plus start, in the type's width). delta 0 is refused; float types are
out of scope.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..errors import OpError
from .base import Node, versions
from .elementwise import INTEGERS, check_count, refuse_out_of_scope, runner
from .tensor_op import Arg, OutputPlan, TensorOp
from .spec import OpSpec, Param


class Range_11(TensorOp):
    op_type = "Range"
    since_version = 11
    inputs = ("start", "limit", "delta")
    outputs = ("output",)

    @classmethod
    def in_scope(cls, proto, types: Sequence[Optional[str]]) -> bool:
        return all(t in INTEGERS for t in types)  # (see ops/elementwise.py's Elementwise.in_scope)

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        given = [a for a in args if a is not None]
        refuse_out_of_scope(cls, given, "Range")
        values = []
        for a in given:
            if a.size != 1:
                raise OpError(f"{cls.label()}: {a.name} must be one value, got shape {a.shape}")
            values.append(a.ints(cls.label(), a.name)[0])
        start, limit, delta = values
        if delta == 0:
            raise OpError(f"{cls.label()}: delta is 0 (start {start}, limit {limit})")
        n = max(0, -((start - limit) // delta))  # ceil((limit - start) / delta), exactly
        shape = (n,)
        check_count(cls, shape, [])
        words = [start & 0xFFFFFFFF, (start >> 32) & 0xFFFFFFFF, delta & 0xFFFFFFFF, (delta >> 32) & 0xFFFFFFFF]
        dtype = given[0].dtype
        run = runner("Range", [], dtype.numpy.name, shape, cls.label(), words, ())
        return [OutputPlan(cls.outputs[0], shape, dtype, runner=run, kernel="elementwise")]


class Range_27(Range_11):
    since_version = 27
    attribute_names = ("stash_type",)
    optional = ("stash_type",)


SPEC = OpSpec(
    "Range",
    versions({11: ("double", "float", "int16", "int32", "int64"), 27: ("bfloat16", "float16")}, Range_11, Range_27),
    (
        Param("limit", "tensor", "Where the sequence stops (excluded): one value of the type of start.", "10"),
        Param("delta", "tensor", "The step (not 0): one value of the type of start.", "3"),
    ),
    summary="Integers from start below limit by delta (ONNX Range).",
    description="For each start file (one integer: int16, int32 or int64), start, start + delta, ... while "
    "below --limit (above it for a negative --delta), made by the GPU's elementwise kernel.",
    example="onnxop range start.npy --limit 10 --delta 3 -o r.npy",
)
