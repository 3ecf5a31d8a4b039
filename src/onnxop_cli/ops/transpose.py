"""Transpose: output axis k is input axis perm[k] (default: reversed axes).

The index map is the input's strides, permuted. Every version has the same
rule; 13, 21, 23, 24 and 25 widen the types.
"""

from __future__ import annotations

from ..errors import OpError
from .base import BASE_TYPES, FLOAT8, Node, OpVersion
from .spec import OpSpec, Param
from ..core.view import View


class Transpose_1(OpVersion):
    op_type = "Transpose"
    since_version = 1
    inputs = ("data",)
    outputs = ("transposed",)
    attribute_names = ("perm",)
    optional = ("perm",)
    types_added = BASE_TYPES

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
    def view(cls, node: Node, shape: tuple[int, ...], strides: tuple[int, ...], offset: int = 0) -> View:
        perm = cls.perm(node, len(shape))
        return View(tuple(shape[p] for p in perm), tuple(strides[p] for p in perm), offset)


class Transpose_13(Transpose_1):
    since_version = 13
    types_added = ("bfloat16",)


class Transpose_21(Transpose_13):
    since_version = 21
    types_added = FLOAT8 + ("int4", "uint4")


class Transpose_23(Transpose_21):
    since_version = 23
    types_added = ("float4e2m1",)


class Transpose_24(Transpose_23):
    since_version = 24
    types_added = ("float8e8m0",)


class Transpose_25(Transpose_24):
    since_version = 25
    types_added = ("int2", "uint2")


VERSIONS = (Transpose_1, Transpose_13, Transpose_21, Transpose_23, Transpose_24, Transpose_25)

SPEC = OpSpec(
    "Transpose",
    VERSIONS,
    (Param("perm", "ints", "Comma-separated permutation: output axis k is input axis perm[k] "
           "(default: the axes reversed).", "2,0,1"),),
    summary="Permute the axes of tensors (ONNX Transpose).",
    description="Permute the axes of each input: output axis k is input axis perm[k], "
    "through the GPU gather kernel.",
    example="onnxop transpose x.npy --perm 2,0,1 -o y.npy",
)
