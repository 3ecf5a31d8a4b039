"""Comparisons and logic: Equal, Less, LessOrEqual, Greater, GreaterOrEqual
(integer and bool inputs, a bool output) and Not, And, Or, Xor (bool), one
generated kernel each (ops/elementwise.py, gpu/render/elementwise.py). Signed
and unsigned types compare as their own kind, int64 and uint64 by all 64
bits. Equal of floats or strings is refused (out of scope)."""

from __future__ import annotations

from .elementwise import FLOATS, INTS, Elementwise, legacy, make_versions
from .spec import OpSpec, Param

_B = Param("B", "tensor", "The second operand, broadcast against the first (a tensor file, or a list of the "
           "first's type).", "b.npy")
COMPARE_LEGACY = {1: legacy("axis", "broadcast"), 7: legacy()}


class Compare(Elementwise):
    inputs = ("A", "B")
    outputs = ("C",)
    input_types = {"A": "T", "B": "T"}
    constraints = {"T1": ("bool",)}
    boolean_result = True
    what = "comparison"


def _compare(op: str, types, changes, summary: str, rule: str, params=(_B,), example: str = "") -> OpSpec:
    base = type(op, (Compare,), {"kernel_op": op, "__module__": __name__})
    if op == "Not":
        base = type(op, (Compare,), {"kernel_op": op, "inputs": ("X",), "outputs": ("Y",),
                                     "input_types": {"X": "T"}, "__module__": __name__})
    command = "".join(("-" + c.lower()) if c.isupper() and i else c.lower() for i, c in enumerate(op))
    return OpSpec(op, make_versions(op, base, types, changes), tuple(params), summary=f"{summary} (ONNX {op}).",
                  description=f"For each input file, {rule} (bool), in one pass of the GPU's elementwise kernel "
                  "(generated for the operator and type). Float inputs are refused.",
                  example=example or f"onnxop {command} a.npy --b b.npy -o c.npy")


EQUAL = _compare("Equal", {1: ("bool", "int32", "int64"), 11: FLOATS + ("int8", "int16", "uint8", "uint16",
                                                                        "uint32", "uint64"),
                           13: ("bfloat16",), 19: ("string",)}, COMPARE_LEGACY,
                 "Compare integer tensors for equality", "A == B")
LESS = _compare("Less", {1: FLOATS, 9: INTS, 13: ("bfloat16",)}, COMPARE_LEGACY,
                "Compare integer tensors, broadcast", "A < B")
GREATER = _compare("Greater", {1: FLOATS, 9: INTS, 13: ("bfloat16",)}, COMPARE_LEGACY,
                   "Compare integer tensors, broadcast", "A > B")
LESS_OR_EQUAL = _compare("LessOrEqual", {12: FLOATS + INTS, 16: ("bfloat16",)}, {12: legacy()},
                         "Compare integer tensors, broadcast", "A <= B")
GREATER_OR_EQUAL = _compare("GreaterOrEqual", {12: FLOATS + INTS, 16: ("bfloat16",)}, {12: legacy()},
                            "Compare integer tensors, broadcast", "A >= B")
NOT = _compare("Not", {1: ("bool",)}, {1: legacy()}, "Negate bool tensors", "not X", (),
               "onnxop not x.npy -o y.npy")
AND = _compare("And", {1: ("bool",)}, COMPARE_LEGACY, "Logical and of bool tensors, broadcast", "A and B")
OR = _compare("Or", {1: ("bool",)}, COMPARE_LEGACY, "Logical or of bool tensors, broadcast", "A or B")
XOR = _compare("Xor", {1: ("bool",)}, COMPARE_LEGACY, "Logical xor of bool tensors, broadcast", "A xor B")
SPECS = (EQUAL, LESS, LESS_OR_EQUAL, GREATER, GREATER_OR_EQUAL, NOT, AND, OR, XOR)
