"""Concat: the inputs joined along ``axis``; every other dimension must agree.

Concat-1 defaults axis to 1; Concat-4 requires it; Concat-11's text adds
negative axes, which every version takes (as onnx.reference and onnxruntime
do); Concat-13 adds bfloat16. The plan is one piece per input: the input
copied whole into its slab of the output (output strides, offset by the
inputs before it along the axis), so any number of inputs binds two buffers,
and an input of zero elements contributes nothing.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..errors import OpError
from ..core.region import c_strides, load
from .base import BASE_TYPES, Node, versions
from .tensor_op import Arg, OutputPlan, Piece, TensorOp
from .spec import OpSpec, Param


class Concat_1(TensorOp):
    op_type = "Concat"
    since_version = 1
    inputs = ("inputs",)
    variadic = "inputs"
    outputs = ("concat_result",)
    attribute_names = ("axis",)
    optional = ("axis",)
    default_axis = 1

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        given = [a for a in args if a is not None]
        if not given:
            raise OpError(f"{cls.label()}: needs at least one input")
        first = given[0]
        r = len(first.shape)
        if r == 0:
            raise OpError(f"{cls.label()}: cannot concatenate scalars (input {first.tensor.name} has rank 0)")
        axis = cls.check_axis(int(node.value("axis", cls.default_axis)), -r, r - 1, f"for inputs of rank {r}")  # type: ignore[arg-type]
        for a in given[1:]:
            other = [d for k, d in enumerate(a.shape) if k != axis]
            want = [d for k, d in enumerate(first.shape) if k != axis]
            if len(a.shape) != r or other != want:
                raise OpError(
                    f"{cls.label()}: input {a.tensor.name} has shape {a.shape}, which does not match "
                    f"{first.shape} of {first.tensor.name} outside axis {axis}"
                )
        shape = list(first.shape)
        shape[axis] = sum(a.shape[axis] for a in given)
        out_strides = c_strides(shape)
        pieces, at = [], 0
        for k, a in enumerate(args):
            if a is None:
                continue
            pieces.append(Piece(a.shape, out_strides, at * out_strides[axis], load(k, a.shape, a.strides)))
            at += a.shape[axis]
        return [OutputPlan(cls.outputs[0], tuple(shape), first.dtype, pieces=pieces)]


class Concat_4(Concat_1):
    since_version = 4
    optional = ()


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
TYPES = {
    1: BASE_TYPES[:3],  # float, double, float16
    4: BASE_TYPES[3:],  # the rest of BASE_TYPES
    11: (),  # negative axes: read at every opset (docs/formats.md)
    13: ("bfloat16",),
}
VERSIONS = versions(TYPES, Concat_1, Concat_4)

SPEC = OpSpec(
    "Concat",
    VERSIONS,
    (Param("axis", "int", "The axis to join along; negative counts from the back.", "1"),),
    summary="Join tensors along an axis (ONNX Concat).",
    description="Join the input files (every member of an .npz, in archive order) along --axis into one "
    "tensor, one strided GPU copy per input into its slab.",
    example="onnxop concat a.npy b.npy --axis 1 -o ab.npy",
)
