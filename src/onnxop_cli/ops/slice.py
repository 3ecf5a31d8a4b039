"""Slice: along each of ``axes``, the elements start, start+step, ... before end.

Slice-1 takes starts, ends and (optional) axes as attributes, step 1;
Slice-10 moves them to inputs and adds steps (negative steps walk backwards);
Slice-11's text adds negative axes, which every version takes (as
onnx.reference and onnxruntime do). Starts and ends count from the end when
negative and are then clamped as the spec says: to [0, d] for positive steps,
start to [0, d-1] and end to [-1, d-1] for negative ones. So any integer is
valid and an empty result is fine. (numpy's slicing, which ONNX's reference
implementation uses, differs in one corner: a negative step from a start
below -d gives nothing there and the first element here, as in onnxruntime.)
The index map is an offset plus the strides times the steps.
"""

from __future__ import annotations

from ..errors import OpError
from .base import BASE_TYPES, Node, OpVersion, versions
from .spec import OpSpec, Param
from ..core.region import Access


class Slice_1(OpVersion):
    op_type = "Slice"
    since_version = 1
    inputs = ("data",)
    outputs = ("output",)
    attribute_names = ("starts", "ends", "axes")
    optional = ("axes",)

    @classmethod
    def axis_bounds(cls, node: Node, shape: tuple[int, ...]) -> dict[int, tuple[int, int, int]]:
        """(start, step, length) for each sliced axis."""
        r = len(shape)
        starts = [int(v) for v in node.value("starts", ())]  # type: ignore[union-attr]
        ends = [int(v) for v in node.value("ends", ())]  # type: ignore[union-attr]
        axes = node.value("axes")
        steps = node.value("steps")
        axes = list(range(len(starts))) if axes is None else [int(a) for a in axes]  # type: ignore[union-attr]
        steps = [1] * len(starts) if steps is None else [int(s) for s in steps]  # type: ignore[union-attr]
        counts = {"starts": starts, "ends": ends, "axes": axes, "steps": steps}
        if len({len(v) for v in counts.values()}) != 1:
            said = ", ".join(f"{k} has {len(v)}" for k, v in counts.items())
            raise OpError(f"{cls.label()}: {said} values; they must have as many")
        axes = cls.unique_axes(axes, r, f"for an input of rank {r}")
        plan = {}
        for axis, start, end, step in zip(axes, starts, ends, steps):
            if step == 0:
                raise OpError(f"{cls.label()}: step 0 on axis {axis}; steps must not be 0")
            plan[axis] = bounds(start, end, step, shape[axis])
        return plan

    @classmethod
    def output_shape(cls, node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
        plan = cls.axis_bounds(node, shape)
        return tuple(plan[k][2] if k in plan else d for k, d in enumerate(shape))

    @classmethod
    def view(cls, node: Node, shape: tuple[int, ...], strides: tuple[int, ...], offset: int = 0) -> Access:
        plan = cls.axis_bounds(node, shape)
        out_shape, out_strides = list(shape), list(strides)
        for axis, (first, step, length) in plan.items():
            out_shape[axis] = length
            out_strides[axis] = strides[axis] * step
            offset += first * strides[axis] if length else 0
        return Access(tuple(out_shape), tuple(out_strides), offset)


def bounds(start: int, end: int, step: int, dim: int) -> tuple[int, int, int]:
    """(first index, step, length) of one sliced axis, clamped as the spec says."""
    start += dim if start < 0 else 0
    end += dim if end < 0 else 0
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        length = -(-(end - start) // step)
    else:
        start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
        length = -(-(start - end) // -step)
    return start, step, max(length, 0) if dim else 0


class Slice_10(Slice_1):
    since_version = 10
    inputs = ("data", "starts", "ends", "axes", "steps")
    attribute_names = ()
    optional = ("axes", "steps")


# opset -> the tensor types that version added (onnx.defs' lists; tests/unit/test_opsets.py
# holds them to it). A class above only where the rule changes.
TYPES = {1: BASE_TYPES, 11: (), 13: ("bfloat16",)}  # negative axes: read at every opset (docs/formats.md)
VERSIONS = versions(TYPES, Slice_1, Slice_10)

SPEC = OpSpec(
    "Slice",
    VERSIONS,
    (
        Param("starts", "ints", "Comma-separated first index on each of --axes; negative counts "
              "from the end; clamped to the axis.", "0", empty_ok=True),
        Param("ends", "ints", "Comma-separated end (exclusive) on each of --axes; negative counts "
              "from the end; clamped to the axis.", "-1", empty_ok=True),
        Param("axes", "ints", "Comma-separated axes that --starts and --ends apply to "
              "(default: 0, 1, ...).", "1", empty_ok=True),
        Param("steps", "ints", "Comma-separated step on each of --axes, not 0; negative walks "
              "backwards (default 1; opset 10+).", "2", empty_ok=True),
    ),
    summary="Take a strided slice of tensors (ONNX Slice).",
    description="Slice each input: along each of --axes, every step-th element from start "
    "to before end, through the GPU gather kernel.",
    example="onnxop slice x.npy --starts 1 --ends -1 --steps 2",
    api_doc="""ONNX Slice (named ``slice_``: ``slice`` is Python's): along each of
``axes`` (default 0, 1, ...), every ``steps``-th element (default 1;
negative walks back) from ``starts`` to before ``ends``, clamped as the
spec says.

>>> import numpy as np
>>> from onnxop_cli import slice_
>>> slice_(np.arange(10, dtype=np.int64), [-1], [-1000], steps=[-3])
array([9, 6, 3, 0])
""",
)
