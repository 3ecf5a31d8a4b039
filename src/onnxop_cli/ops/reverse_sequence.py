"""ReverseSequence: for each batch entry b, the first sequence_lens[b]
elements along time_axis reversed, the rest kept.

ReverseSequence-10 has the types of its day; ReverseSequence-28 adds
bfloat16. Each length is checked on the device to lie in [0, time steps]
(gpu/indexed.py), and the reversal is one indexed gather.
"""

from __future__ import annotations

from typing import Optional, Sequence

from . import indexing
from .base import BASE_TYPES, Node, versions
from .tensor_op import Arg, OutputPlan, TensorOp
from .indexed_plan import gather_plan, layout
from .spec import OpSpec, Param


class ReverseSequence_10(TensorOp):
    op_type = "ReverseSequence"
    since_version = 10
    inputs = ("input", "sequence_lens")
    outputs = ("Y",)
    attribute_names = ("batch_axis", "time_axis")
    optional = ("batch_axis", "time_axis")
    input_types = {"sequence_lens": "I"}
    constraints = {"I": ("int64",)}

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        data, lens = args
        assert data is not None and lens is not None
        ds, _ = layout(data, lens)
        table, check = indexing.reverse_sequence(
            cls.label(), data.shape, lens.shape, int(node.value("batch_axis", 1)), int(node.value("time_axis", 0)),
            ds,
        )
        return gather_plan(cls.outputs[0], data, lens, table, check)


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
TYPES = {10: BASE_TYPES, 28: ("bfloat16",)}
VERSIONS = versions(TYPES, ReverseSequence_10)

SPEC = OpSpec(
    "ReverseSequence",
    VERSIONS,
    (
        Param("sequence_lens", "tensor", "The length of each batch entry's sequence (int64, one per entry).",
              "4,3,2,1"),
        Param("batch_axis", "int", "The batch axis: 0 or 1 (default 1).", "0"),
        Param("time_axis", "int", "The time axis: 1 or 0 (default 0).", "1"),
    ),
    summary="Reverse sequences of a batch (ONNX ReverseSequence).",
    description="For each input file, the first --sequence-lens[b] elements of batch entry b along --time-axis "
    "reversed and the rest kept, through the GPU indexed gather; each length is checked against the time axis.",
    example="onnxop reverse-sequence x.npy --sequence-lens 3,1",
)
