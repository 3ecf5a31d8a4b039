"""Identity: the output is the input.

Identity-14 and -16 add sequence and optional types, which onnxop does not
read (it reads tensors); the tensor types grow at 13, 19, 21, 23, 24 and 25.
"""

from __future__ import annotations

from .base import BASE_TYPES, FLOAT8, Node, OpVersion
from .spec import OpSpec


class Identity_1(OpVersion):
    op_type = "Identity"
    since_version = 1
    inputs = ("input",)
    outputs = ("output",)
    types_added = BASE_TYPES

    @classmethod
    def output_shape(cls, node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(shape)


class Identity_13(Identity_1):
    since_version = 13
    types_added = ("bfloat16",)


class Identity_14(Identity_13):
    since_version = 14  # sequences


class Identity_16(Identity_14):
    since_version = 16  # optionals


class Identity_19(Identity_16):
    since_version = 19
    types_added = FLOAT8


class Identity_21(Identity_19):
    since_version = 21
    types_added = ("int4", "uint4")


class Identity_23(Identity_21):
    since_version = 23
    types_added = ("float4e2m1",)


class Identity_24(Identity_23):
    since_version = 24
    types_added = ("float8e8m0",)


class Identity_25(Identity_24):
    since_version = 25
    types_added = ("int2", "uint2")


VERSIONS = (
    Identity_1, Identity_13, Identity_14, Identity_16, Identity_19, Identity_21, Identity_23,
    Identity_24, Identity_25,
)

SPEC = OpSpec(
    "Identity",
    VERSIONS,
    (),
    summary="Copy tensors unchanged (ONNX Identity).",
    description="Copy each input to the output unchanged, through the GPU copy kernel.",
    example="onnxop identity x.npy -o y.npy",
)
