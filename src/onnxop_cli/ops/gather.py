"""Gather: entries of ``data`` along ``axis`` picked by ``indices``;
out = data[:axis] + indices + data[axis+1:].

Gather-1 takes indices 0 .. d-1; Gather-11 also negative ones (counted from
the back); Gather-13 adds bfloat16. The indices are read, checked and
wrapped on the device (gpu/indexed.py): one out of range is refused with
its position and value, and nothing is written.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional, Sequence

from . import indexing
from .base import BASE_TYPES, Node, versions
from .tensor_op import Arg, OutputPlan, TensorOp
from .indexed_plan import NONNEG, gather_plan, layout
from .spec import OpSpec, Param

TIND = ("int32", "int64")


class Gather_1(TensorOp):
    op_type = "Gather"
    since_version = 1
    inputs = ("data", "indices")
    outputs = ("output",)
    attribute_names = ("axis",)
    optional = ("axis",)
    input_types = {"indices": "Tind"}
    constraints = {"Tind": TIND}
    negative_indices = False

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        data, idx = args
        assert data is not None and idx is not None
        table, check = indexing.gather(cls.label(), data.shape, idx.shape, int(node.value("axis", 0)),
                                       *layout(data, idx))
        if not cls.negative_indices:
            check = replace(check, mode=NONNEG)
        return gather_plan(cls.outputs[0], data, idx, table, check)


class Gather_11(Gather_1):
    since_version = 11
    negative_indices = True


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
TYPES = {1: BASE_TYPES, 13: ("bfloat16",)}
VERSIONS = versions(TYPES, Gather_1, Gather_11)

SPEC = OpSpec(
    "Gather",
    VERSIONS,
    (
        Param("indices", "tensor", "The indices along --axis (int32 or int64; a tensor file or a list).", "0,2,-1"),
        Param("axis", "int", "The axis to gather along; negative counts from the back.", "0"),
    ),
    summary="Pick entries along an axis by index (ONNX Gather).",
    description="For each data file, the entries along --axis that --indices names: the output has the data's "
    "shape with that axis replaced by the indices' shape. The indices are checked on the GPU (all 64 bits of "
    "int64; negative ones count from the back) and one out of range is refused with its position.",
    example="onnxop gather x.npy --indices 2,0,-1 -o y.npy",
)
