"""What the elementwise operators share (ops/arithmetic.py, ops/logic.py,
ops/cast.py, ops/range.py): the integer and bool types they run, the
refusal of the rest, numpy's broadcasting, and the one runner that hands a
kernel description to gpu/elementwise.py (``--json`` kernel ``elementwise``).

Float inputs are refused (``OutOfScope``: conformance skips those cases):
WGSL's float operations are not correctly rounded, so a float Add or Div
could not equal onnx.reference bit for bit; in a graph such a node is for
``--others``. Opsets before 7 broadcast only by the ``broadcast`` and
``axis`` attributes: ``broadcast=0`` (equal shapes) runs, ``broadcast=1`` is
refused.
"""

from __future__ import annotations

import functools
from typing import ClassVar, Optional, Sequence

from ..errors import OpError, OutOfScope
from .base import Node, versions
from .tensor_op import Arg, OutputPlan, TensorOp, broadcast_shape, broadcast_strides

INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
INTEGERS = frozenset((*INTS, "bool"))  # what the kernel runs (ONNX names = numpy names for these)
FLOATS = ("float16", "float", "double")
LEGACY = ("axis", "consumed_inputs", "broadcast")  # the opset 1 attributes of the binary operators


def refuse_out_of_scope(op: type[TensorOp], args: Sequence[Optional[Arg]], what: str = "arithmetic") -> None:
    """Every given input integer or bool, else OutOfScope naming the type."""
    for arg in args:
        if arg is None or arg.dtype.onnx_name in INTEGERS:
            continue
        if arg.dtype.is_string:
            why = f"{what} of strings is not in its scope"
        else:
            why = (f"float {what} is not in its scope (WGSL float operations are not correctly rounded, so they "
                   "could not match onnx.reference bit for bit)")
        name = "string" if arg.dtype.is_string else arg.dtype.name
        raise OutOfScope(f"{op.label()}: input {arg.name} is {name}: onnxop runs {op.op_type} on integer and "
                         f"bool tensors only; {why}", reason=f"{name} inputs")


def runner(kernel_op: str, args: Sequence[Arg], out: str, shape: tuple[int, ...], where: str,
           konst: Sequence[int] = (0, 0, 0, 0), take: Optional[Sequence[int]] = None, **modes):
    """The OutputPlan runner of one elementwise kernel over ``args`` broadcast
    to ``shape``; ``take``: the node's inputs they are (default: the first
    ``len(args)``; CastLike's target and Range's scalars are not read);
    ``modes``: the kernel's Cast attributes (saturate, round_mode)."""
    from ..gpu.render.elementwise import Elementwise, Operand

    if any(a.offset for a in args):  # the kernel reads each input from its first element (_run's sources)
        raise RuntimeError(f"{where}: an elementwise input that starts inside its storage is not supported")
    kernel = Elementwise(kernel_op, tuple(Operand(a.dtype.numpy.name, getattr(a.tensor, "byteswap", 0))
                                          for a in args), out, **modes)
    strides = tuple(broadcast_strides(a, shape) for a in args)
    take = tuple(range(len(args)) if take is None else take)
    return functools.partial(_run, kernel, shape, strides, tuple(konst), where, take)


def _run(kernel, shape, strides, konst, where, take, gpu, sources, sink) -> int:
    from ..gpu.elementwise import run_elementwise

    return run_elementwise(gpu, kernel, [sources[i] for i in take], sink, shape=shape, strides=strides,
                           konst=konst, where=where)


def check_count(op: type[TensorOp], shape: tuple[int, ...], args: Sequence[Arg]) -> None:
    import math

    from ..gpu.elementwise import LIMIT

    for n, what in ((math.prod(shape), "output"), *((a.size, f"input {a.name}") for a in args)):
        if n >= LIMIT:
            raise OpError(f"{op.label()}: the {what} has {n} elements; the elementwise kernel takes fewer than "
                          f"{LIMIT}")


class Elementwise(TensorOp):
    """An operator of one elementwise kernel over its inputs broadcast."""

    kernel_op: ClassVar[str] = ""  # the key of gpu/render/elementwise.py's EXPRESSIONS
    boolean_result: ClassVar[bool] = False  # comparisons make bool
    what: ClassVar[str] = "arithmetic"

    @classmethod
    def kernel_of(cls, node: Node, args: Sequence[Arg]) -> str:
        return cls.kernel_op

    @classmethod
    def in_scope(cls, proto, types: Sequence[Optional[str]]) -> bool:
        """Whether a node of this operator with inputs of ``types`` (ONNX
        names; None: not known) is one onnxop runs: every input integer or
        bool (ops/nodekinds.py sends the others to --others)."""
        return all(t in INTEGERS for t in types)

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        given = [a for a in args if a is not None]
        refuse_out_of_scope(cls, given, cls.what)
        names = [a.name if not cls.variadic else f"{a.name} {k}" for k, a in enumerate(given)]
        if "broadcast" in cls.attribute_names:
            if int(node.value("broadcast", 0)):  # type: ignore[call-overload]
                raise OpError(f"{cls.label()}: broadcast=1 (the opset 1-6 rule) is not supported; "
                              "opset 7 and later broadcast as numpy does")
            if len({a.shape for a in given}) > 1:
                shapes = " and ".join(str(a.shape) for a in given)
                raise OpError(f"{cls.label()}: without broadcast=1 the inputs must have one shape, got {shapes}")
        shape = broadcast_shape(cls.op_type, [a.shape for a in given], names)
        check_count(cls, shape, given)
        out_dtype = given[0].dtype
        if cls.boolean_result:
            from ..core.tensor import dtype_by_name

            out_dtype = dtype_by_name("bool")
        kernel_op = cls.kernel_of(node, given)
        run = runner(kernel_op, given, out_dtype.numpy.name, shape, cls.label())
        # a batch checks every job's divisors before any job writes (cli/tensor_ops.py): the kernel, its output dropped
        from ..gpu.render.elementwise import DIVIDES

        check = (lambda gpu, sources: run(gpu, sources, lambda chunk: None)) if kernel_op in DIVIDES else None
        return [OutputPlan(cls.outputs[0], shape, out_dtype, runner=run, kernel="elementwise", precheck=check)]


def make_versions(op_type: str, base: type[Elementwise], types: dict[int, tuple[str, ...]],
                  changes: dict[int, dict]) -> tuple[type[Elementwise], ...]:
    """Every version of ``op_type``: a class per opset in ``changes`` (its
    class attributes: the attributes that opset has), the type table as data."""
    rules = [type(f"{op_type}_{since}", (base,), {"op_type": op_type, "since_version": since,
                                                     "__module__": base.__module__, **attrs})
             for since, attrs in sorted(changes.items())]
    return versions(types, *rules)


def legacy(*names: str) -> dict:
    return {"attribute_names": names, "optional": names}


BINARY_LEGACY = {1: legacy(*LEGACY), 6: legacy("axis", "broadcast"), 7: legacy()}
