"""GatherND: slices of ``data`` named by the index tuples in the last axis of
``indices``, after ``batch_dims`` leading axes they share.

GatherND-11 has no batch_dims; GatherND-12 adds it; GatherND-13 adds
bfloat16. Each index of a tuple is checked against its own data axis on the
device (gpu/indexed.py).
"""

from __future__ import annotations

from typing import Optional, Sequence

from . import indexing
from .base import BASE_TYPES, Node, versions
from .tensor_op import Arg, OutputPlan, TensorOp
from .indexed_plan import gather_plan, layout
from .spec import OpSpec, Param


class GatherND_11(TensorOp):
    op_type = "GatherND"
    since_version = 11
    inputs = ("data", "indices")
    outputs = ("output",)
    input_types = {"indices": "I"}
    constraints = {"I": ("int64",)}

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        data, idx = args
        assert data is not None and idx is not None
        b = int(node.value("batch_dims", 0))  # type: ignore[arg-type]
        table, check = indexing.gather_nd(cls.label(), data.shape, idx.shape, b, *layout(data, idx))
        return gather_plan(cls.outputs[0], data, idx, table, check)


class GatherND_12(GatherND_11):
    since_version = 12
    attribute_names = ("batch_dims",)
    optional = ("batch_dims",)


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
TYPES = {11: BASE_TYPES, 13: ("bfloat16",)}
VERSIONS = versions(TYPES, GatherND_11, GatherND_12)

SPEC = OpSpec(
    "GatherND",
    VERSIONS,
    (
        Param("indices", "tensor", "Index tuples in its last axis (int64).", "idx.npy"),
        Param("batch_dims", "int", "Leading axes that data and indices share (opset 12+).", "1"),
    ),
    summary="Pick slices by index tuples (ONNX GatherND).",
    description="For each data file, the slice that each tuple in the last axis of --indices names, after "
    "--batch-dims shared leading axes. Every index is checked on the GPU against its own axis.",
    example="onnxop gather-nd x.npy --indices i.npy -o y.npy",
)
