"""Trilu: the upper (or lower) triangle of each matrix in the last two axes,
the rest zero: kept where ``col - row >= k`` (upper) or ``<= k`` (lower).

One version (14). ``k`` is an optional int64 scalar input (default 0), any
value (far outside the matrix keeps all or nothing). The plan is one piece:
the input copied where the triangle says, zero elsewhere (the pieces
kernel's triangle predicate).
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..errors import OpError
from ..core.region import Fill, Masked, Tri, c_strides, load
from .base import BASE_TYPES, Node, versions
from .tensor_op import Arg, OutputPlan, Piece, TensorOp, element_bytes
from .spec import OpSpec, Param


class Trilu_14(TensorOp):
    op_type = "Trilu"
    since_version = 14
    inputs = ("input", "k")
    outputs = ("output",)
    attribute_names = ("upper",)
    optional = ("upper", "k")
    input_types = {"k": "tensor(int64)"}
    constraints = {"tensor(int64)": ("int64",)}

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        data = args[0]
        assert data is not None
        r = len(data.shape)
        if r < 2:
            raise OpError(f"{cls.label()}: the input must have rank 2 or more, got shape {data.shape}")
        k = 0
        if len(args) > 1 and args[1] is not None:
            if args[1].size != 1:
                raise OpError(f"{cls.label()}: k must be one integer, got shape {args[1].shape}")
            k = args[1].ints(cls.label(), "k")[0]
        upper = int(node.value("upper", 1))  # type: ignore[call-overload]
        if upper not in (0, 1):
            raise OpError(f"{cls.label()}: upper must be 0 or 1, got {upper}")
        zero = b"" if data.dtype.is_string else element_bytes(0, data.dtype)
        kept = Masked(load(0, data.shape, data.strides), Tri(k, r - 2, r - 1, bool(upper)), Fill(zero))
        piece = Piece(data.shape, c_strides(data.shape), 0, kept)
        return [OutputPlan(cls.outputs[0], data.shape, data.dtype, pieces=[piece])]


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
TYPES = {14: BASE_TYPES + ("bfloat16",)}
VERSIONS = versions(TYPES, Trilu_14)

SPEC = OpSpec(
    "Trilu",
    VERSIONS,
    (
        Param("upper", "int", "1 (default): keep the upper triangle; 0: the lower.", "0"),
        Param("k", "tensor", "The diagonal offset: positive above the main diagonal (default 0).", "1"),
    ),
    summary="Keep the upper or lower triangle of matrices (ONNX Trilu).",
    description="Keep each input's upper (or, with --upper 0, lower) triangle from diagonal --k in its "
    "last two axes and zero the rest, through the GPU pieces kernel.",
    example="onnxop trilu x.npy --upper 0 --k -1 -o y.npy",
)
