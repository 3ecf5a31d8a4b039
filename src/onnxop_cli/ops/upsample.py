"""Upsample: Resize's ancestor (opsets 7-9), Resize-10's nearest pick on the
GPU's gather (ops/resize.py): output size ``floor(size * scale)`` along each
axis, element ``i`` of an axis the input's ``floor(i / scale)``, as
onnxruntime runs it (``asymmetric`` coordinates). onnx.reference runs only
whole scales (``np.repeat``); onnxruntime runs the rest, and onnxop with it.

- Upsample-1: ``height_scale`` and ``width_scale`` of a 4-D (N, C, H, W)
  input; modes nearest and bilinear.
- Upsample-7: ``scales`` an attribute (floats), one per axis, each at least 1.
- Upsample-9: ``scales`` an input (a float tensor).
- Upsample-10: ONNX deprecated it for Resize; the checker and onnxruntime
  refuse such a node, and so does onnxop, naming the two ways out.

Modes ``linear`` and ``bilinear`` are arithmetic (``OutOfScope``, as Resize's).
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..errors import OpError
from .base import BASE_TYPES, Node, versions
from .resize import Resize_10
from .spec import OpSpec, Param
from .tensor_op import Arg, OutputPlan



class Upsample_1(Resize_10):
    op_type = "Upsample"
    since_version = 1
    inputs = ("X",)
    attribute_names = ("height_scale", "mode", "width_scale")
    optional = ("mode",)
    modes = ("nearest", "bilinear")  # Resize-10's settings refuse the others in one line

    @classmethod
    def tensors(cls, node: Node, args: Sequence[Optional[Arg]]) -> dict:
        import numpy as np

        data = args[0]
        assert data is not None
        if len(data.shape) != 4:
            raise OpError(f"{cls.label()}: input {data.name} has shape {data.shape}; Upsample-1 takes 4-D "
                          "(N, C, H, W) inputs")
        scales = [1.0, 1.0, node.value("height_scale"), node.value("width_scale")]
        return {"scales": np.asarray(scales, dtype=np.float32)}

    @classmethod
    def checked(cls, given: dict, n: int, shape: tuple[int, ...]):
        scales, sizes, roi = super().checked(given, n, shape)
        if (scales < 1).any():
            raise OpError(f"{cls.label()}: scales {scales.tolist()} must all be at least 1 (Upsample only grows; "
                          "Resize shrinks)")
        return scales, sizes, roi


class Upsample_7(Upsample_1):
    since_version = 7
    attribute_names = ("mode", "scales")
    modes = ("nearest", "linear")

    @classmethod
    def tensors(cls, node: Node, args: Sequence[Optional[Arg]]) -> dict:
        import numpy as np

        return {"scales": np.asarray(node.value("scales"), dtype=np.float32).reshape(-1)}


class Upsample_9(Upsample_7):
    since_version = 9
    inputs = ("X", "scales")
    attribute_names = ("mode",)
    tensors = Resize_10.tensors


class Upsample_10(Upsample_9):
    since_version = 10

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        raise OpError(f"{cls.label()}: ONNX deprecated Upsample at opset 10 (its checker and onnxruntime refuse "
                      "it); use Resize, or opset 9 (--opset 9)")


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
FIRST = ("bool", "int32", "int64", "float16", "float", "double")
TYPES = {1: FIRST, 7: tuple(t for t in BASE_TYPES if t not in FIRST)}
VERSIONS = versions(TYPES, Upsample_1, Upsample_7, Upsample_9, Upsample_10)

SPEC = OpSpec(
    "Upsample",
    VERSIONS,
    (
        Param("scales", "tensor", "The scale of each axis, each at least 1 (float; a list, or at opset 9 a tensor "
              "file).", "1,1,2,3"),
        Param("height_scale", "float", "Upsample-1's scale of axis 2 of a 4-D input (opsets 1-6).", "2.0"),
        Param("width_scale", "float", "Upsample-1's scale of axis 3 of a 4-D input (opsets 1-6).", "3.0"),
        Param("mode", "str", "nearest (default); linear and bilinear (opsets 1-6) are arithmetic, which onnxop "
              "does not run.", "nearest", choices=("nearest", "linear", "bilinear")),
    ),
    summary="Grow tensors by nearest neighbour (ONNX Upsample).",
    description="Grow each input by --scales, output element i of an axis the input's floor(i / scale) (mode "
    "nearest, as onnxruntime runs it), through the GPU gather kernels. ONNX replaced Upsample by Resize at "
    "opset 10: give --opset 9 or 7.",
    example="onnxop upsample x.npy --scales 1,1,2,2 --opset 9",
)
