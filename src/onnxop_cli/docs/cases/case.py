"""One case of the edge-case corpus (docs/cases/__init__.py): what a
case is, and whether its operator's schema takes its types."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EXPECTED_ERROR = "expected_error.json"
OPSET = 21


@dataclass(frozen=True)
class Case:
    name: str  # the folder: "gather_int64_index_2pow32_plus_1"
    klass: str  # "indices", "bindings", "pad", "ranks", "zero_size", "float_bits", "odd_lengths", "int64_data", "big"
    op: str
    inputs: list[tuple[str, Any]]  # (name, numpy array): every input is a graph input
    attrs: dict[str, Any] = field(default_factory=dict)
    outputs: int = 1
    error: str = ""  # why the spec requires a refusal; "" for a valid case
    opset: int = OPSET


def typed(case: Case) -> bool:
    """Whether the operator's schema at the case's opset takes every input's
    type (a type it does not take makes the case invalid, not an edge)."""
    import onnx
    from onnx import helper

    schema = onnx.defs.get_schema(case.op, case.opset)
    constraints = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    for i, (_, array) in enumerate(case.inputs):
        formal = schema.inputs[min(i, len(schema.inputs) - 1)].type_str
        name = onnx.TensorProto.DataType.Name(helper.np_dtype_to_tensor_dtype(array.dtype)).lower()
        if formal in constraints and f"tensor({name})" not in constraints[formal]:
            return False
    return True
