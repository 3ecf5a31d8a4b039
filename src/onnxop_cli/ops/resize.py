"""Resize in mode ``nearest``: each output element is one input element,
``out[i0, i1, ...] = X[t0[i0], t1[i1], ...]`` -- a separable gather whose
per-axis tables ``tk`` are made on the host from the scales or sizes, the
roi and the attributes, with the float arithmetic of onnx.reference
(``onnx/reference/ops/op_resize.py``), step for step. The data moves on the
device through Gather's table and kernels (ops/indexed_plan.gather_made):
one resized axis is a Gather along it; several are one separable gather
(core/region.py ``Lookup.axis``): a lookup per axis reads its table at the
output element's coordinate on that axis, so the host makes and the device
holds the axes' tables (their lengths' sum), never an index per output
element, and a printed page narrows them to its entries. An axis the
reference leaves alone (scale 1, same size) stays a stride.

- Resize-10: inputs X, scales; asymmetric coordinates, as onnxruntime runs
  it (floor, or ceil when the axis shrinks; onnx.reference cannot run 10).
- Resize-11: roi, sizes; coordinate_transformation_mode, nearest_mode,
  exclude_outside, extrapolation_value (and tf_half_pixel_for_nn, 11 only).
- Resize-13: roi and scales optional; bfloat16. 18: axes,
  keep_aspect_ratio_policy, antialias. 19: half_pixel_symmetric.

Modes linear and cubic are arithmetic (``OutOfScope``: conformance skips
them; ``run --others`` hands such nodes to the other runtime, ``in_scope``).
Where nearest would write a fill instead of an element (tf_crop_and_resize
outside the input, exclude_outside on an edge pick) onnxop refuses too.
onnx.reference computes nearest as x*1 + y*0 in float64, so it turns -0.0
into 0.0, a neighbour's inf or NaN into NaN and int64 beyond 2^53 into its
neighbour float; onnxop moves the element's bytes, as the operator's text says.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

from ..errors import OpError, OutOfScope
from .base import BASE_TYPES, Node, versions
from .indexed_plan import NONNEG, gather_made, separable_index
from .spec import OpSpec, Param
from .plan import one_region
from .tensor_op import Arg, OutputPlan, TensorOp

COORDINATES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize")
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
MODES = ("nearest", "linear", "cubic")
POLICIES = ("stretch", "not_larger", "not_smaller")


class Resize_10(TensorOp):
    op_type = "Resize"
    since_version = 10
    inputs = ("X", "scales")
    outputs = ("Y",)
    attribute_names = ("mode",)
    optional = ("mode",)
    input_types = {"scales": "Tscales", "sizes": "Tsizes", "roi": "T2"}
    constraints = {"Tscales": ("float",), "Tsizes": ("int64",), "T2": ("float16", "float", "double")}
    literal_types = {"scales": "float", "sizes": "int64", "roi": "float"}  # the CLI's lists
    coordinates: tuple[str, ...] = ("asymmetric",)
    modes: tuple[str, ...] = MODES  # the mode attribute's values; all but nearest are arithmetic (OutOfScope)

    @classmethod
    def in_scope(cls, proto, types) -> bool:
        """Only nearest is data movement: a linear or cubic node is the others' (ops/nodekinds.py)."""
        mode = next((a.s for a in proto.attribute if a.name == "mode"), b"nearest")
        return mode == b"nearest"

    @classmethod
    def setting(cls, node: Node, name: str, default: str, allowed: Sequence[str]) -> str:
        value = node.value(name, default)
        value = value.decode() if isinstance(value, bytes) else str(value)
        if value not in allowed:
            raise OpError(f"{cls.label()}: {name} {value!r} is not one of {', '.join(allowed)} "
                          f"({cls.op_type}-{cls.since_version})")
        return value

    @classmethod
    def settings(cls, node: Node) -> dict:
        """The attributes, checked; the mode refused unless nearest."""
        mode = cls.setting(node, "mode", "nearest", cls.modes)
        if mode != "nearest":
            raise OutOfScope(f"{cls.label()}: mode {mode!r} is arithmetic, not in its scope: onnxop runs mode 'nearest' "
                             "(in a model, run --others onnxruntime runs such a node on onnxruntime)",
                             reason=f"mode {mode!r}")
        return {"coordinates": "asymmetric", "nearest": "simple", "exclude": False, "policy": "stretch"}

    @classmethod
    def tensors(cls, node: Node, args: Sequence[Optional[Arg]]) -> dict:
        """roi, scales and sizes as numpy arrays, None where absent or empty."""
        import numpy as np

        found = {}
        for name, arg in zip(cls.inputs[1:], args[1:]):
            found[name] = None if arg is None or arg.size == 0 else np.asarray(arg.values()).reshape(-1)
        return found

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        from ..core.tensor import check_shape
        from .resize_tables import axis_tables

        data = args[0]
        assert data is not None
        settings = cls.settings(node)
        given = cls.tensors(node, args)
        r = len(data.shape)
        axes = cls.axes_of(node, r)
        shape = tuple(data.shape[a] for a in axes)
        scales, sizes, roi = cls.checked(given, len(axes), shape)
        out = list(data.shape)

        def check_sizes(sizes: list[int]) -> None:
            for a, n, d in zip(axes, sizes, shape):
                out[a] = n
                if n and not d:
                    raise OpError(f"{cls.label()}: axis {a} has size 0: an output size of {n} has nothing to pick from")
            check_shape(tuple(out), data.dtype.numpy_itemsize, cls.op_type, noun="output shape")
            return 0 in out

        tables = axis_tables(cls.label(), shape, scales, sizes, roi, settings, check_sizes, axes)
        if tables is None:  # an empty output: no element to pick, so no table (one could be 2**40 long)
            from ..core.region import Access

            return [one_region(cls.outputs[0], tuple(out), data.dtype, Access(tuple(out), (0,) * r, data.offset))]
        return _gather(cls, data, tuple(out), {a: t for a, t in zip(axes, tables) if t is not None})

    @classmethod
    def axes_of(cls, node: Node, rank: int) -> list[int]:
        return list(range(rank))

    @classmethod
    def checked(cls, given: dict, n: int, shape: tuple[int, ...]):
        """(scales, sizes, roi) as the reference reads them, each refused with its values when wrong."""
        scales, sizes, roi = given.get("scales"), given.get("sizes"), given.get("roi")
        op, what = cls.label(), f"{n} resized ax{'is' if n == 1 else 'es'}"
        if scales is not None and sizes is not None:
            raise OpError(f"{op}: scales {scales.tolist()} and sizes {sizes.tolist()} are both given; give one")
        if scales is None and sizes is None:
            raise OpError(f"{op}: neither scales nor sizes is given (or both are empty); give one")
        for name, values in (("scales", scales), ("sizes", sizes)):
            if values is not None and len(values) != n:
                raise OpError(f"{op}: {name} {values.tolist()} has {len(values)} values for {what}; "
                              "it needs one per axis")
        if scales is not None and not all(math.isfinite(s) and s > 0 for s in scales.tolist()):
            raise OpError(f"{op}: scales {scales.tolist()} must all be positive and finite")
        if sizes is not None and any(s < 0 for s in sizes.tolist()):
            raise OpError(f"{op}: sizes {sizes.tolist()} has a negative size")
        if roi is not None and len(roi) != 2 * n:
            raise OpError(f"{op}: roi {roi.tolist()} has {len(roi)} values for {what}; it needs {2 * n} "
                          "(the starts, then the ends)")
        return scales, sizes, roi


class Resize_11(Resize_10):
    since_version = 11
    inputs = ("X", "roi", "scales", "sizes")
    attribute_names = ("coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
                       "extrapolation_value", "mode", "nearest_mode")
    optional = attribute_names + ("sizes",)
    coordinates = COORDINATES + ("tf_half_pixel_for_nn",)

    @classmethod
    def settings(cls, node: Node) -> dict:
        super().settings(node)
        antialias = int(node.value("antialias", 0))  # type: ignore[call-overload]
        if antialias:
            raise OpError(f"{cls.label()}: antialias {antialias} applies to modes linear and cubic, not nearest")
        exclude = int(node.value("exclude_outside", 0))  # type: ignore[call-overload]
        if exclude not in (0, 1):
            raise OpError(f"{cls.label()}: exclude_outside {exclude} must be 0 or 1")
        return {
            "coordinates": cls.setting(node, "coordinate_transformation_mode", "half_pixel", cls.coordinates),
            "nearest": cls.setting(node, "nearest_mode", "round_prefer_floor", NEAREST),
            "exclude": bool(exclude),
            "policy": cls.setting(node, "keep_aspect_ratio_policy", "stretch", POLICIES),
        }

class Resize_13(Resize_11):
    since_version = 13
    optional = Resize_11.optional + ("roi", "scales")
    coordinates = COORDINATES


class Resize_18(Resize_13):
    since_version = 18
    attribute_names = Resize_13.attribute_names + ("antialias", "axes", "keep_aspect_ratio_policy")
    optional = Resize_13.optional + ("antialias", "axes", "keep_aspect_ratio_policy")

    @classmethod
    def axes_of(cls, node: Node, rank: int) -> list[int]:
        given = node.value("axes")
        return list(range(rank)) if given is None else cls.unique_axes(given, rank, f"for an input of rank {rank}")


class Resize_19(Resize_18):
    since_version = 19
    coordinates = COORDINATES + ("half_pixel_symmetric",)


def _gather(cls: type[Resize_10], data: Arg, out: tuple[int, ...], tables: dict) -> list[OutputPlan]:
    """The plan: a view where no axis is resized, a Gather along one resized
    axis, else a separable gather: one lookup an axis, its table a row of the
    index tensor (as long as the longest table), checked against its axis."""
    import numpy as np

    from ..core.region import Access
    from ..gpu.index_table import Check, Table

    op = cls.label()
    if not tables:
        return [one_region(cls.outputs[0], out, data.dtype, Access(data.shape, data.strides, data.offset))]
    if data.dtype.is_string:  # no device form: the same tables, on the host (as Gather's strings)
        strings = np.asarray(data.tensor.strings, dtype=object).reshape(data.shape)  # row-major, as Gather's
        picked = strings[np.ix_(*[tables.get(a, np.arange(d)) for a, d in enumerate(data.shape)])]
        return [OutputPlan(cls.outputs[0], out, data.dtype, values=picked, kernel="host")]
    if len(tables) == 1:
        from . import indexing

        (a, t), = tables.items()
        table, check = indexing.gather(op, data.shape, (len(t),), a, data.strides)
        itype = np.int64 if data.size >= 1 << 31 else np.int32
        return gather_made(cls.outputs[0], data, t.astype(itype), table, Check(check.bounds, op, "the made indices",
                                                                               NONNEG, check.what))
    axes = sorted(tables)
    bounds = tuple(data.shape[a] for a in axes)
    made = separable_index([tables[a] for a in axes], bounds)
    width = made.shape[1]
    table = Table.over(out, tuple(0 if k in tables else s for k, s in enumerate(data.strides)), (0,) * len(out),
                       tuple((data.strides[a], t * width, a) for t, a in enumerate(axes)))
    return gather_made(cls.outputs[0], data, made, table, Check(bounds, op, "the made indices", NONNEG, inner=width))


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
TYPES = {10: BASE_TYPES, 13: ("bfloat16",)}
VERSIONS = versions(TYPES, Resize_10, Resize_11, Resize_13, Resize_18, Resize_19)

SPEC = OpSpec(
    "Resize",
    VERSIONS,
    (
        Param("scales", "tensor", "The scale of each resized axis (float; a list or a tensor file).", "1,1,2,2"),
        Param("sizes", "tensor", "The output size of each resized axis, instead of --scales (opset 11+).", "1,1,4,6"),
        Param("roi", "tensor", "Starts then ends of each axis's region, for tf_crop_and_resize (opset 11+).",
              "0,0,0.2,0.2,1,1,0.8,0.8"),
        Param("mode", "str", "nearest (default); linear and cubic are arithmetic, which onnxop does not run.",
              "nearest", choices=MODES),
        Param("coordinate_transformation_mode", "str", "How an output position maps to an input one (opset 11+; "
              "default half_pixel; half_pixel_symmetric: opset 19+).", "asymmetric",
              choices=COORDINATES + ("half_pixel_symmetric", "tf_half_pixel_for_nn")),
        Param("nearest_mode", "str", "How a position between two elements rounds (opset 11+; default "
              "round_prefer_floor).", "floor", choices=NEAREST),
        Param("axes", "ints", "The axes --scales or --sizes apply to (opset 18+; default all).", "2,3"),
        Param("keep_aspect_ratio_policy", "str", "With --sizes: stretch (default), not_larger or not_smaller "
              "(opset 18+).", "not_larger", choices=POLICIES),
        Param("exclude_outside", "int", "1: a pick outside the input weighs 0 (opset 11+).", "0", choices=("0", "1")),
        Param("extrapolation_value", "float", "tf_crop_and_resize's value outside the input (opset 11+).", "0.0"),
        Param("antialias", "int", "Modes linear and cubic only (opset 18+).", "0", choices=("0", "1")),
        Param("cubic_coeff_a", "float", "Mode cubic only (opset 11+).", "-0.75"),
    ),
    summary="Resize by nearest neighbour (ONNX Resize, mode nearest).",
    description="Resize each input by --scales or to --sizes, each output element the input element nearest "
    "its position (mode nearest, every coordinate_transformation_mode and nearest_mode), through the GPU "
    "gather kernels; the index tables are made on the host as onnx.reference makes them.",
    example="onnxop resize x.npy --scales 1,1,2,2 -o y.npy",
)
