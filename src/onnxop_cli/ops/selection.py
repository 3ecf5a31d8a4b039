"""CenterCropPad and BitCast: a crop or pad around the centre and a bit
reinterpretation, each a few pieces (ops/tensor_op.py). Compress is
ops/compress.py, OneHot ops/one_hot.py.

- CenterCropPad-18: each of ``axes`` cropped or zero-padded to ``shape``
  around its centre (an odd difference puts the extra element at the end);
  a fill and one copy.
- BitCast-26: the same bits read as ``to`` (of the same width), same shape.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..core.region import Fill, c_strides, load
from ..errors import OpError
from .base import BASE_TYPES, Node, versions
from .plan import same_elements
from .tensor_op import Arg, OutputPlan, Piece, TensorOp, element_bytes
from .spec import OpSpec, Param


class CenterCropPad_18(TensorOp):
    op_type = "CenterCropPad"
    since_version = 18
    inputs = ("input_data", "shape")
    outputs = ("output_data",)
    attribute_names = ("axes",)
    optional = ("axes",)
    input_types = {"shape": "Tind"}
    constraints = {"Tind": ("int32", "int64")}

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        data, shape_arg = args[0], args[1]
        assert data is not None and shape_arg is not None
        r = len(data.shape)
        given = node.value("axes")
        axes = list(range(r)) if given is None else cls.unique_axes(given, r, f"for an input of rank {r}")
        sizes = shape_arg.ints(cls.label(), "shape")
        if len(sizes) != len(axes):
            raise OpError(f"{cls.label()}: shape {sizes} has {len(sizes)} values for {len(axes)} axes")
        if any(s < 0 for s in sizes):
            raise OpError(f"{cls.label()}: shape {sizes} has a negative size")
        out_shape, src_start, dst_start, box = list(data.shape), [0] * r, [0] * r, list(data.shape)
        for a, s in zip(axes, sizes):
            d = data.shape[a]
            out_shape[a] = s
            if s < d:
                src_start[a], box[a] = (d - s) // 2, s
            elif s > d:
                dst_start[a] = (s - d) // 2
        out = c_strides(out_shape)
        zero = b"" if data.dtype.is_string else element_bytes(0, data.dtype)
        # the zeros only where the box leaves room (a pure crop writes every element once, not twice)
        pieces = [] if box == out_shape else [Piece(tuple(out_shape), out, 0, Fill(zero))]
        pieces.append(Piece(tuple(box), out, sum(i * s for i, s in zip(dst_start, out)),
                            load(0, box, data.strides, sum(i * s for i, s in zip(src_start, data.strides)))))
        return [OutputPlan(cls.outputs[0], tuple(out_shape), data.dtype, pieces=pieces)]


class BitCast_26(TensorOp):
    op_type = "BitCast"
    since_version = 26
    inputs = ("input",)
    outputs = ("output",)
    attribute_names = ("to",)

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        from ..core.tensor import dtype_by_onnx

        data = args[0]
        assert data is not None
        try:
            to = dtype_by_onnx(int(node.value("to")))  # type: ignore[call-overload]
        except Exception:  # noqa: BLE001 - an unknown TensorProto number
            raise OpError(f"{cls.label()}: to {node.value('to')} is not an ONNX tensor type") from None
        if to.onnx_name not in cls.allowed_types():
            raise OpError(f"{cls.label()}: cannot cast to {'string' if to.is_string else to}")
        if to.bits != data.dtype.bits:
            raise OpError(f"{cls.label()}: {data.dtype} ({data.dtype.bits} bits) and {to} ({to.bits} bits) "
                          "differ in width; BitCast keeps the bits")
        return [same_elements(cls.outputs[0], data, to)]  # re-laid out where they do not lie in order


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
CENTER_CROP_PAD_TYPES = {18: BASE_TYPES + ("bfloat16",)}

CENTER_CROP_PAD = OpSpec(
    "CenterCropPad",
    versions(CENTER_CROP_PAD_TYPES, CenterCropPad_18),
    (
        Param("shape", "tensor", "The size of each of --axes after cropping or padding (int64 or int32).", "2,2"),
        Param("axes", "ints", "The axes --shape applies to (default: all).", "1"),
    ),
    summary="Crop or pad around the centre (ONNX CenterCropPad).",
    description="Crop or zero-pad each input around its centre to --shape along --axes, through the GPU "
    "pieces kernel.",
    example="onnxop center-crop-pad x.npy --shape 2,2 --axes 1",
)

# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
BIT_CAST_TYPES = {
    26: (
        "float", "double", "float16", "bool", "complex64", "complex128", "int8", "int16", "int32", "int64",
        "uint8", "uint16", "uint32", "uint64", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
        "float8e5m2fnuz", "int4", "uint4", "float4e2m1", "float8e8m0", "int2", "uint2",
    ),
}

BITCAST = OpSpec(
    "BitCast",
    versions(BIT_CAST_TYPES, BitCast_26),
    (Param("to", "int", "The type to read the bits as, of the same width: its name (int32, float16) or TensorProto "
           "number.", "6", type_name=True),),
    summary="Read bits as another type of one width (ONNX BitCast).",
    description="Reinterpret each input's bits as --to (same width, same shape), through the GPU flat copy "
    "kernel (or the pieces kernel for Fortran-order and big-endian inputs).",
    example="onnxop bit-cast x.npy --to 6 -o bits.npy",
)
