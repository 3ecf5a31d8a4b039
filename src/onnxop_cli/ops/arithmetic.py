"""Integer arithmetic: Add, Sub, Mul, Div, Mod, Neg, Abs, Min, Max, one
generated kernel each (ops/elementwise.py, gpu/render/elementwise.py).

Overflow wraps as numpy and onnxruntime wrap (two's complement, every bit of
int64 and uint64 on the device). Div truncates toward zero, as onnxruntime
and onnx.reference (since onnx 1.16 it divides integers exactly) both do;
INT_MIN / -1 wraps to INT_MIN. Mod: ``fmod=0`` takes the divisor's sign
(numpy's mod), ``fmod=1`` the dividend's (numpy's fmod). A zero divisor is
an error naming the output element, never a value. Min and Max take one to
three inputs (the kernel's three input bindings).
"""

from __future__ import annotations

from typing import Sequence

from ..errors import OpError
from .base import Node
from .elementwise import BINARY_LEGACY, FLOATS, INTS, Elementwise, legacy, make_versions
from .tensor_op import Arg
from .spec import OpSpec, Param

_B = Param("B", "tensor", "The second operand, broadcast against the first (a tensor file, or a list of the "
           "first's type).", "b.npy")


class Binary(Elementwise):
    inputs = ("A", "B")
    outputs = ("C",)


class Unary(Elementwise):
    inputs = ("X",)
    outputs = ("Y",)


class Mod(Binary):
    kernel_op = "ModFloor"

    @classmethod
    def kernel_of(cls, node: Node, args: Sequence[Arg]) -> str:
        fmod = int(node.value("fmod", 0))  # type: ignore[call-overload]
        if fmod not in (0, 1):
            raise OpError(f"{cls.label()}: fmod must be 0 or 1, got {fmod}")
        return "ModTrunc" if fmod else "ModFloor"


class Extreme(Elementwise):
    inputs = ("data_0",)
    outputs = ("min",)
    variadic = "data_0"

    @classmethod
    def in_scope(cls, proto, types) -> bool:
        """More than three inputs are the others' (--others): the kernel has three input bindings."""
        return len(types) <= 3 and super().in_scope(proto, types)

    @classmethod
    def kernel_of(cls, node: Node, args: Sequence[Arg]) -> str:
        if len(args) > 3:
            raise OpError(f"{cls.label()}: onnxop takes one to three inputs (the kernel's three bindings), "
                          f"got {len(args)}")
        return ("Cast", cls.kernel_op, cls.kernel_op + "3")[len(args) - 1]  # one input: itself


def _binary(op: str) -> type[Binary]:
    return type(op, (Binary,), {"kernel_op": op, "__module__": __name__})


ADD_TYPES = {1: FLOATS, 6: ("int32", "int64", "uint32", "uint64"), 13: ("bfloat16",),
             14: ("int8", "int16", "uint8", "uint16")}
MOD_TYPES = {10: FLOATS + INTS, 13: ("bfloat16",), 28: ()}
NEG_TYPES = {1: FLOATS, 6: ("int8", "int16", "int32", "int64"), 13: ("bfloat16",)}
ABS_TYPES = {1: FLOATS, 6: INTS, 13: ("bfloat16",)}
MINMAX_TYPES = {1: FLOATS, 6: (), 8: (), 12: INTS, 13: ("bfloat16",)}
UNARY_LEGACY = {1: legacy("consumed_inputs"), 6: legacy()}
# (Min and Max took integers from opset 12, long after they began to broadcast in 8)
MINMAX_LEGACY = {1: legacy("consumed_inputs"), 6: legacy(), 8: legacy()}


def _spec(op: str, versions, summary: str, rule: str, params=(_B,), example: str = "") -> OpSpec:
    command = "".join(("-" + c.lower()) if c.isupper() and i else c.lower() for i, c in enumerate(op))
    return OpSpec(op, versions, tuple(params), summary=f"{summary} (ONNX {op}).",
                  description=f"For each input file (integer or bool), {rule}, in one pass of the GPU's "
                  "elementwise kernel (generated for the operator and type). Float inputs are refused.",
                  example=example or f"onnxop {command} a.npy --b b.npy -o c.npy")


ADD = _spec("Add", make_versions("Add", _binary("Add"), ADD_TYPES, BINARY_LEGACY),
            "Add integer tensors, broadcast", "A + B (wrapping on overflow)")
SUB = _spec("Sub", make_versions("Sub", _binary("Sub"), ADD_TYPES, BINARY_LEGACY),
            "Subtract integer tensors, broadcast", "A - B (wrapping on overflow)")
MUL = _spec("Mul", make_versions("Mul", _binary("Mul"), ADD_TYPES, BINARY_LEGACY),
            "Multiply integer tensors, broadcast", "A * B (wrapping on overflow)")
DIV = _spec("Div", make_versions("Div", _binary("Div"), ADD_TYPES, BINARY_LEGACY),
            "Divide integer tensors, broadcast", "A / B truncated toward zero (a zero divisor is an error)")
MOD = _spec("Mod", make_versions("Mod", Mod, MOD_TYPES, {10: legacy("fmod"), 28: legacy("fmod")}),
            "Remainder of integer tensors, broadcast",
            "the remainder of A / B: with the divisor's sign, or with --fmod 1 the dividend's",
            (_B, Param("fmod", "int", "0 (default): the remainder takes the divisor's sign; 1: the dividend's.",
                       "1", choices=("0", "1"))), "onnxop mod a.npy --b b.npy --fmod 1 -o c.npy")
NEG = _spec("Neg", make_versions("Neg", type("Neg", (Unary,), {"kernel_op": "Neg", "__module__": __name__}),
                                 NEG_TYPES, UNARY_LEGACY),
            "Negate signed integer tensors", "-X (INT_MIN stays INT_MIN)", (), "onnxop neg x.npy -o y.npy")
ABS = _spec("Abs", make_versions("Abs", type("Abs", (Unary,), {"kernel_op": "Abs", "__module__": __name__}),
                                 ABS_TYPES, UNARY_LEGACY),
            "Absolute value of integer tensors", "|X| (INT_MIN stays INT_MIN)", (), "onnxop abs x.npy -o y.npy")
MIN = _spec("Min", make_versions("Min", type("Min", (Extreme,), {"kernel_op": "Min", "__module__": __name__}),
                                 MINMAX_TYPES, MINMAX_LEGACY),
            "Elementwise minimum of integer tensors", "the smallest of the files' elements", (),
            "onnxop min a.npy b.npy -o m.npy")
MAX = _spec("Max", make_versions("Max", type("Max", (Extreme,), {"kernel_op": "Max", "outputs": ("max",),
                                                                  "__module__": __name__}),
                                 MINMAX_TYPES, MINMAX_LEGACY),
            "Elementwise maximum of integer tensors", "the largest of the files' elements", (),
            "onnxop max a.npy b.npy -o m.npy")
SPECS = (ADD, SUB, MUL, DIV, MOD, NEG, ABS, MIN, MAX)
