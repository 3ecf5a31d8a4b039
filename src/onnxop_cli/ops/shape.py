"""Shape and Size: metadata, no kernel. Shape gives the input's dimensions
(int64, 1-D; Shape-15 takes a ``start``/``end`` slice of them, clamped),
Size their product (an int64 scalar). The input's bytes are never read."""

from __future__ import annotations

from typing import Optional, Sequence

from .base import BASE_TYPES, FLOAT8, LATE_TYPES, Node, versions
from .tensor_op import Arg, OutputPlan, TensorOp
from .spec import OpSpec, Param

NO_KERNEL = "none"


def _int64():
    from ..core.tensor import dtype_by_name

    return dtype_by_name("int64")


class Shape_1(TensorOp):
    op_type = "Shape"
    since_version = 1
    inputs = ("data",)
    outputs = ("shape",)

    @classmethod
    def dims(cls, node: Node, shape: tuple[int, ...]) -> list[int]:
        return list(shape)

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        import numpy as np

        data = args[0]
        assert data is not None
        dims = cls.dims(node, data.shape)
        return [OutputPlan(cls.outputs[0], (len(dims),), _int64(), values=np.array(dims, dtype=np.int64),
                           kernel=NO_KERNEL)]


class Shape_15(Shape_1):
    since_version = 15
    attribute_names = ("start", "end")
    optional = ("start", "end")

    @classmethod
    def dims(cls, node: Node, shape: tuple[int, ...]) -> list[int]:
        r = len(shape)
        start, end = int(node.value("start", 0)), node.value("end")  # type: ignore[call-overload]
        end = r if end is None else int(end)  # type: ignore[call-overload]
        start, end = (start + r if start < 0 else start), (end + r if end < 0 else end)
        start, end = min(max(start, 0), r), min(max(end, 0), r)
        return list(shape[start:end])


class Size_1(TensorOp):
    op_type = "Size"
    since_version = 1
    inputs = ("data",)
    outputs = ("size",)

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        import numpy as np

        data = args[0]
        assert data is not None
        return [OutputPlan(cls.outputs[0], (), _int64(), values=np.array(data.size, dtype=np.int64), kernel=NO_KERNEL)]


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
SHAPE_TYPES = {
    1: BASE_TYPES,
    13: ("bfloat16",),
    19: FLOAT8,
    21: ("int4", "uint4"),
    **LATE_TYPES,  # 23: float4e2m1, 24: float8e8m0, 25: int2 and uint2
}

SHAPE = OpSpec(
    "Shape",
    versions(SHAPE_TYPES, Shape_1, Shape_15),
    (
        Param("start", "int", "The first dimension to give; negative counts from the back (opset 15+).", "1"),
        Param("end", "int", "The dimension to stop before (opset 15+; default: all).", "-1"),
    ),
    summary="Dimensions, as int64 (ONNX Shape; metadata, no kernel).",
    description="The dimensions of each input as a 1-D int64 tensor (--start/--end slice them). Metadata: "
    "the input's bytes are not read and no kernel runs.",
    example="onnxop shape x.npy --start 1",
)

SIZE = OpSpec(
    "Size",
    versions(SHAPE_TYPES, Size_1),  # Size's types are Shape's, opset by opset
    (),
    summary="Element count, as int64 (ONNX Size; metadata, no kernel).",
    description="The number of elements of each input as an int64 scalar. Metadata: the input's bytes "
    "are not read and no kernel runs.",
    example="onnxop size x.npy",
)
