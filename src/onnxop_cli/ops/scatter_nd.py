"""ScatterND: a copy of ``data`` with each slice of ``updates`` written at
the index tuple in the last axis of ``indices``.

ScatterND-11 replaces; -13 adds bfloat16; -16 adds ``reduction`` add and
mul; -18 max and min (np.maximum's rule: NaN wins). Updates apply in index
order, the same on every run (gpu/scatter.py); reduction none with two
updates on one element is refused.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

from ..errors import OpError
from . import indexing
from .base import BASE_TYPES, Node, versions
from .tensor_op import Arg, OutputPlan, TensorOp
from .indexed_plan import scatter_plan
from .scatter_elements import REDUCTION
from .spec import OpSpec, Param


class ScatterND_11(TensorOp):
    op_type = "ScatterND"
    since_version = 11
    inputs = ("data", "indices", "updates")
    outputs = ("output",)
    optional = ()
    input_types = {"indices": "I"}
    constraints = {"I": ("int64",)}
    reductions: tuple[str, ...] = ("none",)

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
        table, check = indexing.scatter_nd(cls.label(), data.shape, idx.shape, updates.shape, is_)
        m = idx.shape[-1] if idx.shape else 0
        # the reference combines a slice per numpy call (an element, when the tuples are whole indices)
        inner = 0 if m == len(data.shape) else math.prod(data.shape[m:])
        return scatter_plan(cls.label(), cls.outputs[0], data, updates, idx, table, check, reduction, True,
                            inner=inner)


class ScatterND_16(ScatterND_11):
    since_version = 16
    attribute_names = ("reduction",)
    optional = ("reduction",)
    reductions = ("none", "add", "mul")


class ScatterND_18(ScatterND_16):
    since_version = 18
    reductions = ("none", "add", "mul", "max", "min")


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
TYPES = {11: BASE_TYPES, 13: ("bfloat16",)}
VERSIONS = versions(TYPES, ScatterND_11, ScatterND_16, ScatterND_18)

SPEC = OpSpec(
    "ScatterND",
    VERSIONS,
    (
        Param("indices", "tensor", "Index tuples in its last axis (int64).", "idx.npy"),
        Param("updates", "tensor", "The slices to write (a tensor file, or a list of the data's type).", "u.npy"),
        REDUCTION,
    ),
    summary="Write slices at index tuples (ONNX ScatterND).",
    description="For each data file, a copy with each slice of --updates written (or combined by --reduction) "
    "at the index tuple of --indices, in index order on the GPU; indices are checked there, and two updates "
    "of one element without a reduction are refused.",
    example="onnxop scatter-nd d.npy --indices i.npy --updates u.npy -o o.npy",
)
