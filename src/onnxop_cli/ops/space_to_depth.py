"""SpaceToDepth: move spatial blocks into channels (DepthToSpace's inverse).

For an NCHW input and blocksize b the output is (N, C*b^2, H/b, W/b). In mode
DCR (the only one before opset 28, and the default) output channel
(i*b + j)*C + c at (h, w) reads input (c, h*b + i, w*b + j); in CRD, channel
c*b^2 + i*b + j. The index map is a 6-D view: the output split as
(N, b, b, C, H/b, W/b), or (N, C, b, b, H/b, W/b).
"""

from __future__ import annotations

from ..errors import OpError
from .base import BASE_TYPES, Node, versions
from .depth_to_space import BLOCKSIZE, MODES, _Blocks
from .spec import OpSpec, Param
from ..core.region import Access


class SpaceToDepth_1(_Blocks):
    op_type = "SpaceToDepth"
    since_version = 1

    @classmethod
    def output_shape(cls, node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
        b = cls.blocks(node, shape)
        cls.mode(node)
        n, c, h, w = shape
        if h % b or w % b:
            raise OpError(f"{cls.label()}: height {h} and width {w} must be multiples of blocksize {b}")
        return (n, c * b * b, h // b, w // b)

    @classmethod
    def view(cls, node: Node, shape: tuple[int, ...], strides: tuple[int, ...], offset: int = 0) -> Access:
        n, _, h2, w2 = cls.output_shape(node, shape)
        b, c = cls.blocks(node, shape), shape[1]
        sn, sc, sh, sw = strides
        if cls.mode(node) == "DCR":  # output channel (i*b + j)*C + c reads (c, h*b + i, w*b + j)
            return Access((n, b, b, c, h2, w2), (sn, sh, sw, sc, b * sh, b * sw), offset)
        return Access((n, c, b, b, h2, w2), (sn, sc, sh, sw, b * sh, b * sw), offset)


class SpaceToDepth_28(SpaceToDepth_1):
    since_version = 28
    attribute_names = ("blocksize", "mode")
    optional = ("mode",)


# opset -> the tensor types that version added (onnx.defs' lists; tests/unit/test_opsets.py
# holds them to it). A class above only where the rule changes.
TYPES = {1: BASE_TYPES, 13: ("bfloat16",)}
VERSIONS = versions(TYPES, SpaceToDepth_1, SpaceToDepth_28)

SPEC = OpSpec(
    "SpaceToDepth",
    VERSIONS,
    (BLOCKSIZE, Param("mode", "str", "DCR (depth-column-row, the default) or CRD (opset 28+).", "CRD",
                      choices=MODES)),
    summary="Move spatial blocks into channels (ONNX SpaceToDepth).",
    description="Rearrange each NCHW input's blocksize x blocksize spatial blocks into channels, "
    "through the GPU gather kernel.",
    example="onnxop space-to-depth x.npy --blocksize 2 -o y.npy",
    api_doc='ONNX SpaceToDepth of an NCHW array; ``mode`` "DCR" (default) or "CRD" (opset 28+).',
)
