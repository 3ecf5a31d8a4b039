"""Shape and Size: metadata, no kernel. Shape gives the input's dimensions
(int64, 1-D; Shape-15 takes a ``start``/``end`` slice of them, clamped),
Size their product (an int64 scalar). The input's bytes are never read."""

from __future__ import annotations

from typing import Optional, Sequence

from .base import BASE_TYPES, FLOAT8, Node
from .family import Arg, OutputPlan, TensorOp
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
    types_added = BASE_TYPES

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


class Shape_13(Shape_1):
    since_version = 13
    types_added = ("bfloat16",)


class Shape_15(Shape_13):
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


class Shape_19(Shape_15):
    since_version = 19
    types_added = FLOAT8


class Shape_21(Shape_19):
    since_version = 21
    types_added = ("int4", "uint4")


class Shape_23(Shape_21):
    since_version = 23
    types_added = ("float4e2m1",)


class Shape_24(Shape_23):
    since_version = 24
    types_added = ("float8e8m0",)


class Shape_25(Shape_24):
    since_version = 25
    types_added = ("int2", "uint2")


class Size_1(TensorOp):
    op_type = "Size"
    since_version = 1
    inputs = ("data",)
    outputs = ("size",)
    types_added = BASE_TYPES

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        import numpy as np

        data = args[0]
        assert data is not None
        return [OutputPlan(cls.outputs[0], (), _int64(), values=np.array(data.size, dtype=np.int64), kernel=NO_KERNEL)]


class Size_13(Size_1):
    since_version = 13
    types_added = ("bfloat16",)


class Size_19(Size_13):
    since_version = 19
    types_added = FLOAT8


class Size_21(Size_19):
    since_version = 21
    types_added = ("int4", "uint4")


class Size_23(Size_21):
    since_version = 23
    types_added = ("float4e2m1",)


class Size_24(Size_23):
    since_version = 24
    types_added = ("float8e8m0",)


class Size_25(Size_24):
    since_version = 25
    types_added = ("int2", "uint2")


SHAPE = OpSpec(
    "Shape",
    (Shape_1, Shape_13, Shape_15, Shape_19, Shape_21, Shape_23, Shape_24, Shape_25),
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
    (Size_1, Size_13, Size_19, Size_21, Size_23, Size_24, Size_25),
    (),
    summary="Element count, as int64 (ONNX Size; metadata, no kernel).",
    description="The number of elements of each input as an int64 scalar. Metadata: the input's bytes "
    "are not read and no kernel runs.",
    example="onnxop size x.npy",
)
