"""Scatter: the name ScatterElements had before opset 11 (Scatter-9), kept
as an alias; Scatter-11 (deprecated by ONNX in favour of ScatterElements)
takes negative indices. No reduction: updates replace.
"""

from __future__ import annotations

from .base import BASE_TYPES, versions
from .scatter_elements import REDUCTION, ScatterElements_11
from .spec import OpSpec, Param


class Scatter_9(ScatterElements_11):
    op_type = "Scatter"
    since_version = 9
    negative_indices = False


class Scatter_11(Scatter_9):
    since_version = 11
    negative_indices = True


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
TYPES = {9: BASE_TYPES}
VERSIONS = versions(TYPES, Scatter_9, Scatter_11)

SPEC = OpSpec(
    "Scatter",
    VERSIONS,
    (
        Param("indices", "tensor", "Where each update goes along --axis (int32 or int64, the updates' shape).",
              "idx.npy"),
        Param("updates", "tensor", "The values to write (a tensor file, or a list of the data's type).", "u.npy"),
        Param("axis", "int", "The axis the indices run along.", "0"),
    ),
    summary="ScatterElements under its opset 9-10 name (ONNX Scatter).",
    description="For each data file, a copy with each of --updates written at the position its entry of "
    "--indices names along --axis (ScatterElements without a reduction), on the GPU.",
    example="onnxop scatter x.npy --indices i.npy --updates u.npy",
)

del REDUCTION
