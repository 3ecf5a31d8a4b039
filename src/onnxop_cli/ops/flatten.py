"""Flatten: (d_0, ..., d_n) -> (d_0 * ... * d_{axis-1}, d_axis * ... * d_n).

One class per change of the rule (ONNX reference ``op_flatten.py`` shape):
Flatten-1 takes axis in [0, r]; Flatten-11 adds negative axes, [-r, r].
Versions 9, 13, 21, 23, 24 and 25 only widen the allowed types.
"""

from __future__ import annotations

import math

from .base import Node, OpVersion


class Flatten_1(OpVersion):
    op_type = "Flatten"
    since_version = 1
    inputs = ("input",)
    outputs = ("output",)
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


VERSIONS = (Flatten_1, Flatten_11)
