"""GatherElements: out[i][j][k] = data[indices[i][j][k]][j][k] (for axis 0);
the output has the indices' shape.

GatherElements-11 takes negative indices; GatherElements-13 adds bfloat16.
Indices are checked and wrapped on the device (gpu/indexed.py).
"""

from __future__ import annotations

from typing import Optional, Sequence

from . import indexing
from .base import BASE_TYPES, Node, versions
from .tensor_op import Arg, OutputPlan, TensorOp
from .indexed_plan import gather_plan, layout
from .spec import OpSpec, Param


class GatherElements_11(TensorOp):
    op_type = "GatherElements"
    since_version = 11
    inputs = ("data", "indices")
    outputs = ("output",)
    attribute_names = ("axis",)
    optional = ("axis",)
    input_types = {"indices": "Tind"}
    constraints = {"Tind": ("int32", "int64")}

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        data, idx = args
        assert data is not None and idx is not None
        table, check = indexing.gather_elements(cls.label(), data.shape, idx.shape, int(node.value("axis", 0)),
                                                *layout(data, idx))
        return gather_plan(cls.outputs[0], data, idx, table, check)


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
TYPES = {11: BASE_TYPES, 13: ("bfloat16",)}
VERSIONS = versions(TYPES, GatherElements_11)

SPEC = OpSpec(
    "GatherElements",
    VERSIONS,
    (
        Param("indices", "tensor", "One index per output element, along --axis (a tensor of the data's rank).",
              "idx.npy"),
        Param("axis", "int", "The axis the indices run along; negative counts from the back.", "1"),
    ),
    summary="Pick one element per index (ONNX GatherElements).",
    description="For each data file, the element that each entry of --indices names along --axis (the other "
    "coordinates are the entry's own); the output has the indices' shape. Indices are checked on the GPU.",
    example="onnxop gather-elements x.npy --indices i.npy",
)
