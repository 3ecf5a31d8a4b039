"""DepthToSpace: move channel blocks into space (SpaceToDepth is its inverse).

For an NCHW input and blocksize b, DepthToSpace gives (N, C/b^2, H*b, W*b):
mode DCR (the only one before opset 11, and the default) reads channel
(i*b + j)*C' + c for output (c, h*b + i, w*b + j); CRD reads c*b^2 + i*b + j.
The index map is a 6-D view: the output split as (N, C', H, b, W, b), with
the channel stride split into the block and channel strides.
"""

from __future__ import annotations

from ..errors import OpError
from .base import BASE_TYPES, Node, OpVersion, versions
from .spec import OpSpec, Param
from ..core.region import Access

MODES = ("DCR", "CRD")


class _Blocks(OpVersion):
    inputs = ("input",)
    outputs = ("output",)
    attribute_names = ("blocksize",)

    @classmethod
    def mode(cls, node: Node) -> str:
        mode = str(node.value("mode", "DCR"))
        if mode not in MODES:
            raise OpError(f"{cls.label()}: mode {mode!r} is not DCR or CRD")
        return mode

    @classmethod
    def blocks(cls, node: Node, shape: tuple[int, ...]) -> int:
        if len(shape) != 4:
            raise OpError(f"{cls.label()}: the input must have rank 4 (N, C, H, W), got shape {tuple(shape)}")
        b = int(node.value("blocksize", 0))  # type: ignore[arg-type]
        if b < 1:
            raise OpError(f"{cls.label()}: blocksize {b} must be at least 1")
        return b


class DepthToSpace_1(_Blocks):
    op_type = "DepthToSpace"
    since_version = 1

    @classmethod
    def output_shape(cls, node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
        b = cls.blocks(node, shape)
        cls.mode(node)
        n, c, h, w = shape
        if c % (b * b):
            raise OpError(f"{cls.label()}: {c} channels do not divide into blocks of {b}x{b} (blocksize {b})")
        return (n, c // (b * b), h * b, w * b)

    @classmethod
    def view(cls, node: Node, shape: tuple[int, ...], strides: tuple[int, ...], offset: int = 0) -> Access:
        n, c2, _, _ = cls.output_shape(node, shape)
        b, h, w = cls.blocks(node, shape), shape[2], shape[3]
        sn, sc, sh, sw = strides
        if cls.mode(node) == "DCR":  # channel (i*b + j)*C' + c
            block_i, block_j, chan = b * c2 * sc, c2 * sc, sc
        else:  # CRD: channel c*b*b + i*b + j
            block_i, block_j, chan = b * sc, sc, b * b * sc
        return Access((n, c2, h, b, w, b), (sn, chan, sh, block_i, sw, block_j), offset)


class DepthToSpace_11(DepthToSpace_1):
    since_version = 11
    attribute_names = ("blocksize", "mode")
    optional = ("mode",)


# opset -> the tensor types that version added (onnx.defs' lists; tests/unit/test_opsets.py
# holds them to it). A class above only where the rule changes.
TYPES = {
    1: BASE_TYPES,
    13: ("bfloat16",),
    28: (),  # the same rule and types; SpaceToDepth gains mode in this opset
}
VERSIONS = versions(TYPES, DepthToSpace_1, DepthToSpace_11)

BLOCKSIZE = Param("blocksize", "int", "Side of the square blocks moved.", "2")
SPEC = OpSpec(
    "DepthToSpace",
    VERSIONS,
    (BLOCKSIZE, Param("mode", "str", "DCR (depth-column-row, the default) or CRD (opset 11+).", "CRD",
                      choices=MODES)),
    summary="Move channel blocks into space (ONNX DepthToSpace).",
    description="Rearrange each NCHW input's channels into blocksize x blocksize spatial blocks, "
    "through the GPU gather kernel.",
    example="onnxop depth-to-space x.npy --blocksize 2 --mode CRD",
    api_doc='ONNX DepthToSpace of an NCHW array; ``mode`` "DCR" (default) or "CRD".',
)
