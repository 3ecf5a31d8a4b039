"""NonZero: the coordinates of the input's non-zero elements, in row-major
order, as an int64 tensor of shape (rank, count).

NonZero-9 has the types of its day, NonZero-13 adds bfloat16 (a TYPES row:
the rule never changed). Zero is what numpy's nonzero says: -0.0 is zero,
every NaN is not, a complex number is zero when both parts are, an empty
string is zero.

The output's shape depends on the data, as Compress's does on its
condition: the plan counts the non-zero elements on the host, and the
coordinates are written by the GPU kernel (gpu/nonzero.py,
gpu/render/nonzero.py), which counts again and must agree. A scalar's output
is (0, count): no element, no kernel (the ONNX reference's rule;
onnxruntime answers (1, count)). Strings have no GPU form: their
coordinates are found on the host (--json says ``kernel: host``).
"""

from __future__ import annotations

import functools
from typing import Any, Optional, Sequence

from .base import BASE_TYPES, Node, versions
from .tensor_op import Arg, OutputPlan, TensorOp
from .spec import OpSpec

KERNEL = "nonzero"


class NonZero_9(TensorOp):
    op_type = "NonZero"
    since_version = 9
    inputs = ("X",)
    outputs = ("Y",)

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        import numpy as np

        from ..core.tensor import dtype_by_name

        data = args[0]
        assert data is not None
        if not data.dtype.is_string:  # the kernel's refusal, before the count below reads every element on the
            # host (a 4.3 GB file: 18 s and 4.3 GB of RSS, then refused)
            from ..gpu.nonzero import refuse_unindexable

            refuse_unindexable(cls.label(), data.size)
        values = data.tensor.strings.reshape(data.shape) if data.dtype.is_string else data.values()  # type: ignore[union-attr]
        total = int(np.count_nonzero(values))
        shape = (len(data.shape), total)
        int64 = dtype_by_name("int64")
        if not data.shape:  # a scalar, strings' too (numpy's nonzero refuses a 0-d array): (0, count), nothing to write
            return [OutputPlan(cls.outputs[0], shape, int64, values=np.zeros(shape, np.int64), kernel="none")]
        if data.dtype.is_string:
            found = np.array(np.nonzero(values), dtype=np.int64).reshape(shape)
            return [OutputPlan(cls.outputs[0], shape, int64, values=found, kernel="host")]
        return [OutputPlan(cls.outputs[0], shape, int64, runner=functools.partial(_run, data, total), kernel=KERNEL)]


def _run(data: Arg, total: int, gpu: Any, sources: Sequence[Any], sink: Any) -> int:
    from ..gpu.indexed import Data
    from ..gpu.nonzero import nonzero_indices

    source = sources[0]
    elements = Data(source.data, data.shape, data.dtype.bits, source.swap, data.strides)
    return nonzero_indices(gpu, elements, data.dtype.onnx_name, total, sink)


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
TYPES = {9: BASE_TYPES, 13: ("bfloat16",)}
VERSIONS = versions(TYPES, NonZero_9)

SPEC = OpSpec(
    "NonZero",
    VERSIONS,
    (),
    summary="Coordinates of the non-zero elements (ONNX NonZero).",
    description="For each input, the coordinates of its non-zero elements in row-major order: an int64 tensor "
    "of shape (rank, count), written by the GPU nonzero kernel (-0.0 is zero, a NaN is not).",
    example="onnxop non-zero x.npy -o nz.npy",
)
