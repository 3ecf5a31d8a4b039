"""Reshape: the input's elements, in order, under a new shape.

Reshape-1 takes ``shape`` as an attribute (``consumed_inputs`` is a legacy
attribute with no effect); Reshape-5 moves it to a second input (int64). In
``shape``, 0 copies the input's dim at that index and one -1 is inferred;
from Reshape-14, ``allowzero=1`` makes 0 a real zero-length dim instead.
"""

from __future__ import annotations

import math

from ..errors import OpError
from .base import BASE_TYPES, FLOAT8, LATE_TYPES, Node, OpVersion, versions
from .spec import OpSpec, Param


class Reshape_1(OpVersion):
    op_type = "Reshape"
    since_version = 1
    inputs = ("data",)
    outputs = ("reshaped",)
    attribute_names = ("shape", "consumed_inputs")
    optional = ("consumed_inputs",)

    @classmethod
    def output_shape(cls, node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
        wanted = [int(d) for d in node.value("shape", ())]  # type: ignore[union-attr]
        allowzero = int(node.value("allowzero", 0))  # type: ignore[arg-type]
        size, text = math.prod(shape), str(wanted)
        if wanted.count(-1) > 1:
            raise OpError(f"{cls.label()}: shape {text} has more than one -1")
        new = list(wanted)
        for i, d in enumerate(wanted):
            if d < -1:
                raise OpError(f"{cls.label()}: shape {text} has {d} at index {i}; dims must be >= -1")
            if d == 0 and not allowzero:
                if i >= len(shape):
                    raise OpError(
                        f"{cls.label()}: shape {text} copies input dim {i} (0 at index {i}), "
                        f"but the input has rank {len(shape)}"
                    )
                new[i] = shape[i]
        if -1 in new:
            known = math.prod(d for d in new if d != -1)
            if known == 0 or size % known:
                raise OpError(
                    f"{cls.label()}: cannot infer the -1 of shape {text} for an input of shape "
                    f"{tuple(shape)} ({size} elements)"
                )
            new[new.index(-1)] = size // known
        if math.prod(new) != size:
            copied = f", as {tuple(new)}: the input's dim for each 0" if new != wanted else ""
            raise OpError(
                f"{cls.label()}: shape {text} ({math.prod(new)} elements{copied}) does not fit an input of "
                f"shape {tuple(shape)} ({size} elements)"
            )
        return tuple(new)


class Reshape_5(Reshape_1):
    since_version = 5
    inputs = ("data", "shape")
    attribute_names = ()
    optional = ()


class Reshape_14(Reshape_5):
    since_version = 14
    attribute_names = ("allowzero",)
    optional = ("allowzero",)


# opset -> the tensor types that version added (onnx.defs' lists; tests/unit/test_opsets.py
# holds them to it). A class above only where the rule changes.
TYPES = {
    1: BASE_TYPES[:3],  # float, double, float16
    5: BASE_TYPES[3:],  # the rest of BASE_TYPES
    13: ("bfloat16",),
    19: FLOAT8,
    21: ("int4", "uint4"),
    **LATE_TYPES,  # 23: float4e2m1, 24: float8e8m0, 25: int2 and uint2
}
VERSIONS = versions(TYPES, Reshape_1, Reshape_5, Reshape_14)

SPEC = OpSpec(
    "Reshape",
    VERSIONS,
    (
        Param("shape", "ints", "Comma-separated output shape; 0 copies the input's dim, one -1 is "
              "inferred; '' reshapes to a scalar.", "0,-1", empty_ok=True),
        Param("allowzero", "int", "1: a 0 in --shape is a zero-length dim, not a copy (opset 14+).", "1",
              choices=("0", "1"), keyword_only=True),
    ),
    summary="Give tensors a new shape (ONNX Reshape).",
    description="Give each input the shape --shape: its elements, in order, through the GPU copy kernel.",
    example="onnxop reshape x.npy --shape 0,-1 -o y.npy",
    api_doc="""ONNX Reshape: 0 in ``shape`` copies x's dim (a real 0 with
``allowzero=1``, opset 14+), one -1 is inferred.

>>> import numpy as np
>>> from onnxop_cli import reshape
>>> reshape(np.arange(6, dtype=np.int8).reshape(2, 3), [0, -1, 1]).shape
(2, 3, 1)
""",
)
