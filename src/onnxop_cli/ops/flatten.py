"""Flatten: (d_0, ..., d_n) -> (d_0 * ... * d_{axis-1}, d_axis * ... * d_n).

One class per opset change, as the ONNX reference keeps them. The rule changes
once: Flatten-1 takes axis in [0, r], Flatten-11 adds negative axes, [-r, r].
Every other version only widens the allowed types (``types_added``, written
out so that start-up never imports onnx; ``tests/test_opsets.py`` checks each
version against ``onnx.defs``).
"""

from __future__ import annotations

import math

from .base import Node, OpVersion
from .spec import OpSpec, Param


class Flatten_1(OpVersion):
    op_type = "Flatten"
    since_version = 1
    inputs = ("input",)
    outputs = ("output",)
    attribute_names = ("axis",)
    optional = ("axis",)
    negative_axes = False
    types_added = ("float", "double", "float16")

    @classmethod
    def output_shape(cls, node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
        r = len(shape)
        axis = int(node.attributes.get("axis", 1))
        axis = cls.check_axis(axis, -r, r, f"for an input of rank {r}")
        if r == 0:
            # a scalar is one element: (1, 1) for axis 0 (the only valid axis)
            return (1, 1)
        return (math.prod(shape[:axis]), math.prod(shape[axis:]))


class Flatten_9(Flatten_1):
    since_version = 9
    types_added = (
        "bool", "complex64", "complex128", "int8", "int16", "int32", "int64",
        "uint8", "uint16", "uint32", "uint64", "string",
    )


class Flatten_11(Flatten_9):
    since_version = 11
    negative_axes = True


class Flatten_13(Flatten_11):
    since_version = 13
    types_added = ("bfloat16",)


class Flatten_21(Flatten_13):
    since_version = 21
    types_added = ("float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "int4", "uint4")


class Flatten_23(Flatten_21):
    since_version = 23
    types_added = ("float4e2m1",)


class Flatten_24(Flatten_23):
    since_version = 24
    types_added = ("float8e8m0",)


class Flatten_25(Flatten_24):
    since_version = 25
    types_added = ("int2", "uint2")


VERSIONS = (Flatten_1, Flatten_9, Flatten_11, Flatten_13, Flatten_21, Flatten_23, Flatten_24, Flatten_25)

SPEC = OpSpec(
    "Flatten",
    VERSIONS,
    (Param("axis", "int", "Split point, in [-r, r] for an input of rank r (default 1).", "-2", short="-a"),),
    summary="Flatten tensors to 2-D at --axis (ONNX Flatten).",
    description="Flatten each input to 2-D at --axis: (d0*...*d[axis-1], d[axis]*...*dn).",
    example="onnxop flatten a.npy --axis -2 -o b.npy",
)
