"""Unsqueeze: insert size-1 dimensions at ``axes`` of the output.

One class per change of rule. Unsqueeze-1 takes axes as an attribute,
negative ones in [-r_out, r_out - 1] (its text says non-negative, Unsqueeze-11's
allows them; onnx.reference and onnxruntime take them at every opset);
Unsqueeze-13 moves axes from the attribute to a second input (int64 tensor).
Versions 21, 23, 24 and 25 only widen the allowed types (rows of TYPES,
checked against ``onnx.defs`` by ``tests/unit/test_opsets.py``). Duplicates (after
normalising) and an empty list are errors in every version.
"""

from __future__ import annotations

from ..errors import OpError
from .base import LATE_TYPES, Node, OpVersion, versions
from .spec import OpSpec, Param


class Unsqueeze_1(OpVersion):
    op_type = "Unsqueeze"
    since_version = 1
    inputs = ("data",)
    outputs = ("expanded",)
    attribute_names = ("axes",)
    axes_is_input = False

    @classmethod
    def output_shape(cls, node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
        axes = node.axes
        if not axes:
            raise OpError(f"{cls.label()}: axes must not be empty")
        r_out = len(shape) + len(axes)
        seen: dict[int, int] = {}
        for axis in axes:
            norm = cls.check_axis(
                int(axis),
                -r_out,
                r_out - 1,
                f"for an output of rank {r_out} (input rank {len(shape)} + {len(axes)} axes)",
            )
            if norm in seen:
                raise OpError(
                    f"{cls.label()}: axes {seen[norm]} and {axis} both name output axis {norm} "
                    f"(output rank {r_out}); axes must be unique"
                    if seen[norm] != axis
                    else f"{cls.label()}: axis {axis} appears more than once; axes must be unique"
                )
            seen[norm] = axis
        it = iter(shape)
        return tuple(1 if i in seen else next(it) for i in range(r_out))


class Unsqueeze_13(Unsqueeze_1):
    since_version = 13
    inputs = ("data", "axes")
    attribute_names = ()
    axes_is_input = True


# opset -> the tensor types that version added (onnx.defs' lists; tests/unit/test_opsets.py
# holds them to it). A class above only where the rule changes.
TYPES = {
    1: (
        "float", "double", "float16", "bool", "complex64", "complex128", "int8", "int16",
        "int32", "int64", "uint8", "uint16", "uint32", "uint64", "string",
    ),
    11: (),  # negative axes: read at every opset (docs/formats.md)
    13: ("bfloat16",),
    21: ("float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "int4", "uint4"),
    **LATE_TYPES,  # 23: float4e2m1, 24: float8e8m0, 25: int2 and uint2
}
VERSIONS = versions(TYPES, Unsqueeze_1, Unsqueeze_13)

SPEC = OpSpec(
    "Unsqueeze",
    VERSIONS,
    (Param("axes", "ints", "Comma-separated output axes, each in [-r_out, r_out - 1] where "
           "r_out = rank + number of axes.", "0,2"),),
    summary="Insert size-1 dimensions at --axes (ONNX Unsqueeze).",
    description="Insert size-1 dimensions at --axes of the output.",
    example="onnxop unsqueeze x.npy --axes 2,4,5",
    api_doc="""ONNX Unsqueeze: ``x`` with size-1 dimensions inserted at ``axes`` of the
output, computed on the GPU.

Each axis lies in ``[-r_out, r_out - 1]`` where ``r_out = x.ndim +
len(axes)``; negative and unsorted axes are fine, duplicates are not.
``axes`` may be one int or a sequence of ints. ``opset`` selects the
operator version whose rules apply (default: the latest; negative
axes count from the back at every opset, as in onnx.reference and
onnxruntime).

>>> import numpy as np
>>> from onnxop_cli import unsqueeze
>>> unsqueeze(np.array([1.5, -0.0], dtype=np.float32), [0, -1])
array([[[ 1.5],
        [-0. ]]], dtype=float32)

Raises OpError for an axis out of range or named twice.
""",
)
