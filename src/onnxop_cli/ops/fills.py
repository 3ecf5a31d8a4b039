"""ConstantOfShape and EyeLike: outputs that are fills, read from no data.

ConstantOfShape: a tensor of the shape its int64 input holds, every element
``value`` (a one-element tensor attribute; default float32 0). Versions 9,
20, 21, 23, 24 and 25 widen the value's types. EyeLike: a 2-D tensor of the
input's shape (and type, or ``dtype``'s) with ones on diagonal ``k``, zeros
elsewhere (versions 9 and 22, the latter adds bfloat16). Each is a fill
piece, EyeLike's diagonal a second one with the row stride plus one.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..errors import OpError
from ..core.region import Fill, c_strides
from .base import LATE_TYPES, Node, versions
from .tensor_op import Arg, OutputPlan, Piece, TensorOp, element_bytes
from .spec import OpSpec, Param

NUMERIC = ("bool", "double", "float", "float16", "int16", "int32", "int64", "int8", "uint16", "uint32",
           "uint64", "uint8")


class ConstantOfShape_9(TensorOp):
    op_type = "ConstantOfShape"
    since_version = 9
    inputs = ("input",)
    outputs = ("output",)
    attribute_names = ("value",)
    optional = ("value",)
    input_types = {"input": "T1"}
    constraints = {"T1": ("int64",)}

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        import numpy as np

        from ..core.tensor import dtype_of_numpy

        shape_arg = args[0]
        assert shape_arg is not None
        if len(shape_arg.shape) != 1:
            raise OpError(f"{cls.label()}: the shape input must be 1-D, got shape {shape_arg.shape}")
        shape = tuple(shape_arg.ints(cls.label(), "shape"))
        if any(d < 0 for d in shape):
            raise OpError(f"{cls.label()}: shape {list(shape)} has a negative dimension")
        value = node.value("value")
        value = np.zeros(1, np.float32) if value is None else np.asarray(value)
        if value.size != 1:
            raise OpError(f"{cls.label()}: value must hold one element, got shape {value.shape}")
        dtype = dtype_of_numpy(value.dtype)
        if dtype.onnx_name not in cls.allowed_types():
            from .base import check_type

            check_type(node, dtype)
        if dtype.is_packed:
            raw = int(value.reshape(-1).view(np.uint8)[0]) & ((1 << dtype.bits) - 1)
            fill = raw.to_bytes(4, "little")
        else:
            fill = element_bytes(value.reshape(-1)[0], dtype)
        return [OutputPlan(cls.outputs[0], shape, dtype, pieces=[Piece(shape, c_strides(shape), 0, Fill(fill))])]


class EyeLike_9(TensorOp):
    op_type = "EyeLike"
    since_version = 9
    inputs = ("input",)
    outputs = ("output",)
    attribute_names = ("dtype", "k")
    optional = ("dtype", "k")

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        from ..core.tensor import dtype_by_onnx

        data = args[0]
        assert data is not None
        if len(data.shape) != 2:
            raise OpError(f"{cls.label()}: the input must be 2-D, got shape {data.shape}")
        dtype = data.dtype
        if node.value("dtype") is not None:
            try:
                dtype = dtype_by_onnx(int(node.value("dtype")))  # type: ignore[call-overload]
            except Exception:  # noqa: BLE001 - an unknown TensorProto number
                raise OpError(f"{cls.label()}: dtype {node.value('dtype')} is not an ONNX tensor type") from None
            if dtype.onnx_name not in cls.allowed_types():
                raise OpError(f"{cls.label()}: dtype {dtype.onnx_name} is not one EyeLike makes "  # (string, not numpy's object)
                              f"(it makes {', '.join(sorted(cls.allowed_types()))})")
        k = int(node.value("k", 0))  # type: ignore[call-overload]
        rows, cols = data.shape
        out = c_strides(data.shape)
        pieces = [Piece(data.shape, out, 0, Fill(element_bytes(0, dtype)))]
        first_row, first_col = (0, k) if k >= 0 else (-k, 0)
        n = max(0, min(rows - first_row, cols - first_col))
        if n:
            pieces.append(Piece((n,), (cols + 1,), first_row * cols + first_col, Fill(element_bytes(1, dtype))))
        return [OutputPlan(cls.outputs[0], data.shape, dtype, pieces=pieces)]


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
CONSTANT_OF_SHAPE_TYPES = {
    9: (
        "float", "double", "float16", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
        "uint64",
    ),
    20: ("bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz"),
    21: ("int4", "uint4"),
    **LATE_TYPES,  # 23: float4e2m1, 24: float8e8m0, 25: int2 and uint2
}

CONSTANT_OF_SHAPE = OpSpec(
    "ConstantOfShape",
    versions(CONSTANT_OF_SHAPE_TYPES, ConstantOfShape_9),
    (Param("value", "value", "The fill: a one-element tensor file (its type is the output's; default "
           "float32 0), or a number (float32).", "v.npy"),),
    summary="A tensor of one value (ONNX ConstantOfShape).",
    description="For each input (a 1-D int64 shape), a tensor of that shape, every element --value, "
    "filled by the GPU pieces kernel.",
    example="onnxop constant-of-shape s.npy --value 7",
)

# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
EYE_LIKE_TYPES = {
    9: (
        "float", "double", "float16", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
        "uint64",
    ),
    22: ("bfloat16",),
}

EYE_LIKE = OpSpec(
    "EyeLike",
    versions(EYE_LIKE_TYPES, EyeLike_9),
    (
        Param("dtype", "int", "The output's type: its name (float32, int64) or TensorProto number (default: the "
              "input's).", "1", type_name=True),
        Param("k", "int", "The diagonal of ones: positive above the main one (default 0).", "1"),
    ),
    summary="An identity-like matrix of an input's shape (ONNX EyeLike).",
    description="For each 2-D input, zeros of its shape and type (or --dtype) with ones on diagonal --k, "
    "filled by the GPU pieces kernel.",
    example="onnxop eye-like x.npy --k 1 -o eye.npy",
)
