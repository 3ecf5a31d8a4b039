"""ScatterElements: a copy of ``data`` with ``updates`` written where
``indices`` name along ``axis`` (the other coordinates are the update's own).

ScatterElements-11 replaces; -13 adds bfloat16; -16 adds ``reduction`` add
and mul; -18 max and min. Updates apply in index order, as onnx.reference
does (Python's max() and min(): a NaN update never replaces), and the same
on every run (gpu/scatter.py); reduction none with two updates on one
element is refused (the spec leaves it undefined).
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..errors import OpError
from . import indexing
from .base import BASE_TYPES, Node, versions
from .tensor_op import Arg, OutputPlan, TensorOp
from .indexed_plan import NONNEG, scatter_plan
from .spec import OpSpec, Param


class ScatterElements_11(TensorOp):
    op_type = "ScatterElements"
    since_version = 11
    inputs = ("data", "indices", "updates")
    outputs = ("output",)
    attribute_names = ("axis",)
    optional = ("axis",)
    input_types = {"indices": "Tind"}
    constraints = {"Tind": ("int32", "int64")}
    reductions: tuple[str, ...] = ("none",)
    negative_indices = True
    numpy_rule = False  # the reference's max()/min() are Python's

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        data, idx, updates = args
        assert data is not None and idx is not None and updates is not None
        reduction = str(node.value("reduction", "none"))
        if reduction not in cls.reductions:
            raise OpError(f"{cls.label()}-{cls.since_version}: reduction {reduction!r} is not one of "
                          f"{', '.join(cls.reductions)}" + ("; max and min need opset 18" if reduction in
                                                            ("max", "min") else ""))
        is_ = None if data.dtype.is_string else idx.strides
        table, check = indexing.scatter_elements(cls.label(), data.shape, idx.shape, updates.shape,
                                                 int(node.value("axis", 0)), is_)
        if not cls.negative_indices:
            from dataclasses import replace

            check = replace(check, mode=NONNEG)
        return scatter_plan(cls.label(), cls.outputs[0], data, updates, idx, table, check, reduction,
                            cls.numpy_rule)


class ScatterElements_16(ScatterElements_11):
    since_version = 16
    attribute_names = ("axis", "reduction")
    optional = ("axis", "reduction")
    reductions = ("none", "add", "mul")


class ScatterElements_18(ScatterElements_16):
    since_version = 18
    reductions = ("none", "add", "mul", "max", "min")


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
TYPES = {11: BASE_TYPES, 13: ("bfloat16",)}
VERSIONS = versions(TYPES, ScatterElements_11, ScatterElements_16, ScatterElements_18)

REDUCTION = Param("reduction", "str", "How an update combines with the element: none, add, mul (opset 16+), "
                  "max, min (opset 18+).", "add", choices=("none", "add", "mul", "max", "min"))

SPEC = OpSpec(
    "ScatterElements",
    VERSIONS,
    (
        Param("indices", "tensor", "Where each update goes along --axis (int32 or int64, the updates' shape).",
              "idx.npy"),
        Param("updates", "tensor", "The values to write (a tensor file, or a list of the data's type).", "u.npy"),
        Param("axis", "int", "The axis the indices run along; negative counts from the back.", "0"),
        REDUCTION,
    ),
    summary="Write values at indexed positions (ONNX ScatterElements).",
    description="For each data file, a copy with each of --updates written (or combined by --reduction) at "
    "the position its entry of --indices names along --axis, in index order on the GPU; indices are checked "
    "there, and two updates of one element without a reduction are refused.",
    example="onnxop scatter-elements x.npy --indices 1 --updates 5",
)
