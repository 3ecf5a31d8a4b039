"""Flatten: (d_0, ..., d_n) -> (d_0 * ... * d_{axis-1}, d_axis * ... * d_n).

One class per change of rule, as the ONNX reference keeps them. The rule
changes once: Flatten-1 takes axis in [0, r], Flatten-11 adds negative axes,
[-r, r]. Every other version only widens the allowed types: rows of TYPES
(written out so that start-up never imports onnx; ``tests/unit/test_opsets.py``
checks each version against ``onnx.defs``).
"""

from __future__ import annotations

import math

from .base import BASE_TYPES, LATE_TYPES, Node, OpVersion, versions
from .spec import OpSpec, Param


class Flatten_1(OpVersion):
    op_type = "Flatten"
    since_version = 1
    inputs = ("input",)
    outputs = ("output",)
    attribute_names = ("axis",)
    optional = ("axis",)
    negative_axes = False

    @classmethod
    def output_shape(cls, node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
        r = len(shape)
        axis = int(node.attributes.get("axis", 1))
        axis = cls.check_axis(axis, -r, r, f"for an input of rank {r}")
        if r == 0:
            # a scalar is one element: (1, 1) for axis 0 (the only valid axis)
            return (1, 1)
        return (math.prod(shape[:axis]), math.prod(shape[axis:]))


class Flatten_11(Flatten_1):
    since_version = 11
    negative_axes = True


# opset -> the tensor types that version added (onnx.defs' lists; tests/unit/test_opsets.py
# holds them to it). A class above only where the rule changes.
TYPES = {
    1: BASE_TYPES[:3],  # float, double, float16
    9: BASE_TYPES[3:],  # the rest of BASE_TYPES
    13: ("bfloat16",),
    21: ("float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "int4", "uint4"),
    **LATE_TYPES,  # 23: float4e2m1, 24: float8e8m0, 25: int2 and uint2
}
VERSIONS = versions(TYPES, Flatten_1, Flatten_11)

SPEC = OpSpec(
    "Flatten",
    VERSIONS,
    (Param("axis", "int", "Split point, in [-r, r] for an input of rank r (default 1).", "-2", short="-a",
           default=1),),
    summary="Flatten tensors to 2-D at --axis (ONNX Flatten).",
    description="Flatten each input to 2-D at --axis: (d0*...*d[axis-1], d[axis]*...*dn).",
    example="onnxop flatten a.npy --axis -2 -o b.npy",
    api_doc="""ONNX Flatten: ``x`` as a 2-D array split at ``axis``, computed on the GPU.

The output shape is ``(d_0 * ... * d_{axis-1}, d_axis * ... * d_{n-1})``;
``axis`` lies in ``[-r, r]`` for an input of rank ``r`` (negative axes
count from the back, from opset 11). ``opset`` selects the operator
version whose rules apply (default: the latest).

>>> import numpy as np
>>> from onnxop_cli import flatten
>>> flatten(np.arange(24, dtype=np.int32).reshape(2, 3, 4), axis=2)
array([[ 0,  1,  2,  3],
       [ 4,  5,  6,  7],
       [ 8,  9, 10, 11],
       [12, 13, 14, 15],
       [16, 17, 18, 19],
       [20, 21, 22, 23]], dtype=int32)

Raises OpError for an axis out of range (see the module docs for the rest).
""",
)
