"""Split: the input cut along ``axis`` into consecutive parts.

Split-1 takes the part sizes as an attribute or as a second input; Split-2
only as the attribute; Split-11's text adds negative axes, which every
version takes (PyTorch's GLU export is Split-2 with axis -1; onnx.reference
and onnxruntime run it); Split-13 moves
``split`` to an (optional) int64 input and adds bfloat16; Split-18 adds
``num_outputs``: that many parts of ceil(d / n), the last smaller. Without
either, the node's output count says how many equal parts (the command line
asks for --split or --num-outputs). Each output is one piece: its slice of
the input, copied through the pieces kernel.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..errors import OpError
from ..core.region import c_strides, load
from .base import BASE_TYPES, Node, versions
from .tensor_op import Arg, OutputPlan, Piece, TensorOp
from .spec import OpSpec, Param


class Split_1(TensorOp):
    op_type = "Split"
    since_version = 1
    inputs = ("input", "split")
    outputs = ("outputs",)
    variadic_output = True
    attribute_names = ("axis", "split")
    optional = ("axis", "split")
    input_types = {"split": "T"}

    @classmethod
    def sizes(cls, node: Node, args: Sequence[Optional[Arg]], dim: int, axis: int) -> list[int]:
        given = node.value("split")
        if given is None and len(args) > 1 and args[1] is not None:
            given = [int(v) for v in args[1].values().reshape(-1)]
        if given is not None:
            sizes = [int(v) for v in given]  # type: ignore[union-attr]
            if any(s < 0 for s in sizes) or sum(sizes) != dim:
                raise OpError(
                    f"{cls.label()}: split {sizes} must be non-negative and sum to {dim}, the length of axis {axis}"
                )
            if not sizes:
                raise OpError(f"{cls.label()}: split must not be empty")
            return sizes
        return cls.even(node, dim, axis)

    @classmethod
    def even(cls, node: Node, dim: int, axis: int) -> list[int]:
        n = node.outputs
        if not n:
            raise OpError(f"{cls.label()}: give split (the part sizes; --split), or num_outputs (--num-outputs) "
                          "from opset 18")
        if dim % n:
            raise OpError(f"{cls.label()}: axis {axis} of length {dim} does not split into {n} equal parts; give split (--split)")
        return [dim // n] * n

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        data = args[0]
        assert data is not None
        r = len(data.shape)
        if r == 0:
            raise OpError(f"{cls.label()}: cannot split a scalar (rank 0)")
        axis = cls.check_axis(int(node.value("axis", 0)), -r, r - 1, f"for an input of rank {r}")  # type: ignore[arg-type]
        sizes = cls.sizes(node, args, data.shape[axis], axis)
        if node.outputs is not None and len(sizes) != node.outputs:  # a model's node: its outputs are the parts
            n = node.value("num_outputs")
            what = f"num_outputs {n}" if n is not None else f"split {sizes}"
            raise OpError(f"{cls.label()}: {what} makes {len(sizes)} part{'s' * (len(sizes) != 1)}, "
                          f"but the node has {node.outputs} output{'s' * (node.outputs != 1)}")
        plans, at = [], 0
        for k, n in enumerate(sizes):
            shape = list(data.shape)
            shape[axis] = n
            piece = Piece(tuple(shape), c_strides(shape), 0, load(0, shape, data.strides, at * data.strides[axis]))
            plans.append(OutputPlan(f"output_{k}", tuple(shape), data.dtype, pieces=[piece]))
            at += n
        return plans


class Split_2(Split_1):
    since_version = 2
    inputs = ("input",)


class Split_13(Split_2):
    since_version = 13
    inputs = ("input", "split")
    attribute_names = ("axis",)
    input_types = {"split": "Tsplit"}
    constraints = {"Tsplit": ("int64",)}


class Split_18(Split_13):
    since_version = 18
    attribute_names = ("axis", "num_outputs")
    optional = ("axis", "split", "num_outputs")

    @classmethod
    def sizes(cls, node: Node, args: Sequence[Optional[Arg]], dim: int, axis: int) -> list[int]:
        n = node.value("num_outputs")
        has_split = len(args) > 1 and args[1] is not None
        if n is not None and has_split:
            raise OpError(f"{cls.label()}: give split or num_outputs, not both")
        if n is None:
            return super().sizes(node, args, dim, axis)
        n = int(n)  # type: ignore[call-overload]
        if n < 1:
            raise OpError(f"{cls.label()}: num_outputs {n} must be at least 1")
        chunk = -(-dim // n)
        last = dim - chunk * (n - 1)
        if last < 0:  # (1 into 2 is [1, 0], as onnx's shape inference, onnxruntime and onnx.reference make it)
            raise OpError(
                f"{cls.label()}: axis {axis} of length {dim} cannot be cut into {n} parts of ceil({dim}/{n}) = {chunk}"
            )
        return [chunk] * (n - 1) + [last]


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
TYPES = {
    1: BASE_TYPES[:3],  # float, double, float16
    2: BASE_TYPES[3:],  # the rest of BASE_TYPES
    11: (),  # negative axes: read at every opset (docs/formats.md)
    13: ("bfloat16",),
}
VERSIONS = versions(TYPES, Split_1, Split_2, Split_13, Split_18)

SPEC = OpSpec(
    "Split",
    VERSIONS,
    (
        Param("axis", "int", "The axis to cut along (default 0); negative counts from the back.", "0"),
        Param("split", "tensor", "Comma-separated part sizes, summing to the axis length (a list or an int64 "
              "tensor file).", "2,3"),
        Param("num_outputs", "int", "Cut into this many parts of ceil(d / n), the last smaller (opset 18+).", "3"),
    ),
    summary="Cut tensors into parts along an axis (ONNX Split).",
    description="Cut each input along --axis into parts (--split sizes or --num-outputs), one strided GPU "
    "copy per part. With several parts, -o is a folder (x_0.npy, x_1.npy, ...) or an .npz (members x_0, ...).",
    example="onnxop split x.npy --axis 0 --split 2,3 -o parts/",
)
