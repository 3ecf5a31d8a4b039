"""Identity: the output is the input.

Identity-14 and -16 add sequence and optional types, which onnxop does not
read (it reads tensors); the tensor types grow at 13, 19, 21, 23, 24 and 25.
"""

from __future__ import annotations

from .base import BASE_TYPES, FLOAT8, LATE_TYPES, Node, OpVersion, versions
from .spec import OpSpec


class Identity_1(OpVersion):
    op_type = "Identity"
    since_version = 1
    inputs = ("input",)
    outputs = ("output",)

    @classmethod
    def output_shape(cls, node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(shape)


# opset -> the tensor types that version added (onnx.defs' lists; tests/unit/test_opsets.py
# holds them to it). A class above only where the rule changes.
TYPES = {
    1: BASE_TYPES,
    13: ("bfloat16",),
    14: (),  # sequences
    16: (),  # optionals
    19: FLOAT8,
    21: ("int4", "uint4"),
    **LATE_TYPES,  # 23: float4e2m1, 24: float8e8m0, 25: int2 and uint2
}
VERSIONS = versions(TYPES, Identity_1)

SPEC = OpSpec(
    "Identity",
    VERSIONS,
    (),
    summary="Copy tensors unchanged (ONNX Identity).",
    description="Copy each input to the output unchanged, through the GPU copy kernel.",
    example="onnxop identity x.npy -o y.npy",
    api_doc='ONNX Identity: a copy of ``x`` made by the GPU copy kernel.',
)
