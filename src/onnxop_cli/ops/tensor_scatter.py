"""TensorScatter (opset 24): a key-value cache update. For each batch entry
b, ``update``'s sequence goes into ``past_cache`` along ``axis`` from
``write_indices[b]`` (0 when not given): ``linear`` needs it to fit
(write_indices[b] + sequence <= cache length), ``circular`` wraps modulo
the cache length. The write positions are checked on the device.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..errors import OpError
from . import indexing
from .base import Node, versions
from .tensor_op import Arg, OutputPlan, TensorOp
from .indexed_plan import scatter_plan
from .spec import OpSpec, Param


class TensorScatter_24(TensorOp):
    op_type = "TensorScatter"
    since_version = 24
    inputs = ("past_cache", "update", "write_indices")
    outputs = ("present_cache",)
    attribute_names = ("axis", "mode")
    optional = ("axis", "mode", "write_indices")
    input_types = {"write_indices": "I"}
    constraints = {"I": ("int64",)}

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        past, update = args[0], args[1]
        idx = args[2] if len(args) > 2 else None
        assert past is not None and update is not None
        mode = str(node.value("mode", "linear"))
        if mode not in ("linear", "circular"):
            raise OpError(f"{cls.label()}: mode {mode!r} is not linear or circular")
        is_ = None if idx is None or past.dtype.is_string else idx.strides
        table, check = indexing.tensor_scatter(cls.label(), past.shape, update.shape,
                                               None if idx is None else idx.shape,
                                               int(node.value("axis", -2)), mode == "circular", is_)
        return scatter_plan(cls.label(), cls.outputs[0], past, update, idx, table,
                            check if idx is not None else None, where=(0, 1, 2))


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
TYPES = {
    24: (
        "float", "double", "float16", "bool", "complex64", "complex128", "int8", "int16", "int32", "int64",
        "uint8", "uint16", "uint32", "uint64", "string", "bfloat16", "float8e4m3fn", "float8e4m3fnuz",
        "float8e5m2", "float8e5m2fnuz", "int4", "uint4", "float4e2m1", "float8e8m0",
    ),
}
VERSIONS = versions(TYPES, TensorScatter_24)

SPEC = OpSpec(
    "TensorScatter",
    VERSIONS,
    (
        Param("update", "tensor", "The new entries (the cache's shape but for the sequence axis).", "u.npy"),
        Param("write_indices", "tensor", "Where each batch entry's update starts (int64, one per entry; "
              "default 0).", "0,3"),
        Param("axis", "int", "The sequence axis (not 0, the batch axis); default -2.", "-2"),
        Param("mode", "str", "linear (the update must fit) or circular (positions wrap).", "circular",
              choices=("linear", "circular")),
    ),
    summary="Write sequences into a cache (ONNX TensorScatter).",
    description="For each cache file, a copy with --update written along --axis from each batch entry's "
    "--write-indices, straight (linear) or wrapping (circular), on the GPU; positions are checked there.",
    example="onnxop tensor-scatter c.npy --update u.npy",
)
