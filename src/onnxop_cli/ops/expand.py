"""Expand: broadcast the input against ``shape`` as numpy broadcasts.

The output shape is the broadcast of the input's shape and ``shape`` (either
side may hold the 1s, and the shorter is padded with leading 1s, so the rank
may grow). The index map gives stride 0 to every axis the input broadcasts.
"""

from __future__ import annotations

from ..errors import OpError
from .base import BASE_TYPES, Node, OpVersion, versions
from .spec import OpSpec, Param
from ..core.region import Access


class Expand_8(OpVersion):
    op_type = "Expand"
    since_version = 8
    inputs = ("input", "shape")
    outputs = ("output",)

    @classmethod
    def output_shape(cls, node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
        target = [int(d) for d in node.value("shape", ())]  # type: ignore[union-attr]
        if any(d < 0 for d in target):
            raise OpError(f"{cls.label()}: shape {target} has a negative dim")
        r = max(len(shape), len(target))
        a = (1,) * (r - len(shape)) + tuple(shape)
        b = (1,) * (r - len(target)) + tuple(target)
        out = []
        for k, (x, y) in enumerate(zip(a, b)):
            if x != y and 1 not in (x, y):
                raise OpError(
                    f"{cls.label()}: shape {target} does not broadcast with input shape {tuple(shape)} "
                    f"(axis {k}: {x} vs {y})"
                )
            out.append(y if x == 1 else x)
        return tuple(out)

    @classmethod
    def view(cls, node: Node, shape: tuple[int, ...], strides: tuple[int, ...], offset: int = 0) -> Access:
        out = cls.output_shape(node, shape)
        pad = len(out) - len(shape)
        src = (1,) * pad + tuple(shape)
        src_strides = (0,) * pad + tuple(strides)
        return Access(out, tuple(0 if d == 1 else s for d, s in zip(src, src_strides)), offset)


# opset -> the tensor types that version added (onnx.defs' lists; tests/unit/test_opsets.py
# holds them to it). A class above only where the rule changes.
TYPES = {8: BASE_TYPES, 13: ("bfloat16",)}
VERSIONS = versions(TYPES, Expand_8)

SPEC = OpSpec(
    "Expand",
    VERSIONS,
    (Param("shape", "ints", "Comma-separated shape to broadcast to, as numpy broadcasts "
           "(1s on either side; may add leading axes; '' keeps the input's shape).", "2,1,6",
           empty_ok=True),),
    summary="Broadcast tensors to a shape (ONNX Expand).",
    description="Broadcast each input against --shape as numpy does, through the GPU gather kernel.",
    example="onnxop expand x.npy --shape 2,1,6 -o y.npy",
    api_doc='ONNX Expand: ``x`` broadcast against ``shape`` as numpy broadcasts (rank may grow).',
)
