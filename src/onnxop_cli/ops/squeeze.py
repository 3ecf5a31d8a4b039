"""Squeeze: remove size-1 dims, those at ``axes`` or (without axes) all.

Squeeze-1 takes axes as an attribute (its text says non-negative, but
onnx.reference and onnxruntime take negative ones at every opset, as Squeeze-11's
text does), Squeeze-13 moves them to an optional second input (int64).
An axis whose dim is not 1 is an error. Empty axes squeeze every size-1
dim, as when axes are left out (onnxruntime, and ONNX's reference for the
attribute form).
"""

from __future__ import annotations

from ..errors import OpError
from .base import BASE_TYPES, FLOAT8, LATE_TYPES, Node, OpVersion, versions
from .spec import OpSpec, Param


class Squeeze_1(OpVersion):
    op_type = "Squeeze"
    since_version = 1
    inputs = ("data",)
    outputs = ("squeezed",)
    attribute_names = ("axes",)
    optional = ("axes",)

    @classmethod
    def output_shape(cls, node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
        axes = node.axes
        if not axes:
            return tuple(d for d in shape if d != 1)
        r = len(shape)
        drop = cls.unique_axes(axes, r, f"for an input of rank {r}")
        for axis in drop:
            if shape[axis] != 1:
                raise OpError(
                    f"{cls.label()}: axis {axis} of input shape {tuple(shape)} has size {shape[axis]}, not 1"
                )
        return tuple(d for i, d in enumerate(shape) if i not in drop)


class Squeeze_13(Squeeze_1):
    since_version = 13
    inputs = ("data", "axes")
    attribute_names = ()


# opset -> the tensor types that version added (onnx.defs' lists; tests/unit/test_opsets.py
# holds them to it). A class above only where the rule changes.
TYPES = {
    1: BASE_TYPES,
    11: (),  # negative axes: read at every opset (docs/formats.md)
    13: ("bfloat16",),
    21: FLOAT8 + ("int4", "uint4"),
    **LATE_TYPES,  # 23: float4e2m1, 24: float8e8m0, 25: int2 and uint2
}
VERSIONS = versions(TYPES, Squeeze_1, Squeeze_13)

SPEC = OpSpec(
    "Squeeze",
    VERSIONS,
    (Param("axes", "ints", "Comma-separated axes of size 1 to remove (default, or '': every size-1 axis).", "0",
           empty_ok=True),),
    summary="Remove size-1 dimensions (ONNX Squeeze).",
    description="Remove the size-1 dimensions at --axes (all of them without it), through the GPU copy kernel.",
    example="onnxop squeeze x.npy --axes 0 -o y.npy",
    api_doc='ONNX Squeeze: drop the size-1 dims at ``axes`` (all of them when None).',
)
