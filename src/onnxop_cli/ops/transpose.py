"""Transpose: output axis k is input axis perm[k] (default: reversed axes).

The index map is the input's strides, permuted. Every version has the same
rule; 13, 21, 23, 24 and 25 widen the types.
"""

from __future__ import annotations

from ..errors import OpError
from .base import BASE_TYPES, FLOAT8, LATE_TYPES, Node, OpVersion, versions
from .spec import OpSpec, Param
from ..core.region import Access


class Transpose_1(OpVersion):
    op_type = "Transpose"
    since_version = 1
    inputs = ("data",)
    outputs = ("transposed",)
    attribute_names = ("perm",)
    optional = ("perm",)

    @classmethod
    def perm(cls, node: Node, rank: int) -> list[int]:
        perm = node.value("perm")
        if perm is None:
            return list(range(rank))[::-1]
        perm = [int(p) for p in perm]  # type: ignore[union-attr]
        if sorted(perm) != list(range(rank)):
            raise OpError(
                f"{cls.label()}: perm {perm} is not a permutation of 0..{rank - 1} "
                f"for an input of rank {rank}"
            )
        return perm

    @classmethod
    def output_shape(cls, node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(shape[p] for p in cls.perm(node, len(shape)))

    @classmethod
    def view(cls, node: Node, shape: tuple[int, ...], strides: tuple[int, ...], offset: int = 0) -> Access:
        perm = cls.perm(node, len(shape))
        return Access(tuple(shape[p] for p in perm), tuple(strides[p] for p in perm), offset)


# opset -> the tensor types that version added (onnx.defs' lists; tests/unit/test_opsets.py
# holds them to it). A class above only where the rule changes.
TYPES = {
    1: BASE_TYPES,
    13: ("bfloat16",),
    21: FLOAT8 + ("int4", "uint4"),
    **LATE_TYPES,  # 23: float4e2m1, 24: float8e8m0, 25: int2 and uint2
}
VERSIONS = versions(TYPES, Transpose_1)

SPEC = OpSpec(
    "Transpose",
    VERSIONS,
    (Param("perm", "ints", "Comma-separated permutation: output axis k is input axis perm[k] "
           "(default: the axes reversed; '' for a scalar).", "2,0,1", empty_ok=True),),
    summary="Permute the axes of tensors (ONNX Transpose).",
    description="Permute the axes of each input: output axis k is input axis perm[k], "
    "through the GPU gather kernel.",
    example="onnxop transpose x.npy --perm 2,0,1 -o y.npy",
    api_doc="""ONNX Transpose: output axis k is input axis ``perm[k]`` (default: reversed).

>>> import numpy as np
>>> from onnxop_cli import transpose
>>> transpose(np.arange(6, dtype=np.int32).reshape(2, 3))
array([[0, 3],
       [1, 4],
       [2, 5]], dtype=int32)
""",
)
