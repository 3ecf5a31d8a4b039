"""Where: ``X`` where ``condition`` is true, else ``Y``, all three broadcast
as numpy broadcasts.

Where-9 takes the tensor types of its day, Where-16 adds bfloat16. The plan
is one select piece: each output element read from X where the condition
(the kernel's mask) is true and from Y elsewhere, all three through their
own broadcast strides, and written once.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..core.view import c_strides
from .base import BASE_TYPES, Node, versions
from .family import Arg, OutputPlan, Piece, TensorOp, broadcast_shape, broadcast_strides
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
        pieces = [Piece(shape, out, 0, 1, broadcast_strides(x, shape), mask=0,
                        mask_strides=broadcast_strides(cond, shape), other=2,
                        other_strides=broadcast_strides(y, shape))]
        return [OutputPlan(cls.outputs[0], shape, x.dtype, pieces=pieces)]


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
    "false, all three broadcast: one pass of the GPU pieces kernel, each output element written once.",
    example="onnxop where c.npy --x a.npy --y b.npy -o w.npy",
)
