"""Operators of several tensor inputs and outputs: what an op module declares
and the plan it returns. Pure Python: shapes, types and index maps, no bytes.

An operator with tensor inputs (Concat, Split, Pad, Where, ...) subclasses
``TensorOp`` and says, as data:

- ``inputs``: its ONNX input names, in order. The first is the CLI's
  positional FILE...; ``variadic`` names an input that takes any number of
  tensors (Concat's ``inputs``); ``optional`` those that may be left out.
- ``input_types``: for each input, the name of its type constraint
  (``"T"``, ``"Tind"``, ``"B"``); ``"T"`` is the one the module's TYPES table
  lists per opset (``versions(TYPES, *classes)``, ops/base.py: a class only
  where behaviour changes), the others are in ``constraints`` (ONNX type names).
- ``outputs``: its ONNX output names; ``variadic_output`` when the count
  depends on the node (Split).

and implements ``plan(node, args) -> list[OutputPlan]``: one per output, with
its shape, type and how its bytes are made:

- ``pieces``: boxes of the output, each copied from a strided view of one
  input or filled with a value, optionally chosen per element by a mask or a
  triangle (gpu/render/pieces.py's kernels run them; the host path runs strings);
- ``runner``: an op-specific kernel, ``runner(gpu, sources, sink) -> bytes``
  (indexed kernels: gpu/<op>.py with shaders/<op>.wgsl);
- ``values``: a small result computed from metadata, no kernel (Shape, Size);
- ``copy``: the index of an input whose bytes are the output's (BitCast);
- ``view``: one region, a strided view of input 0 read in row-major order --
  every view operator's plan (ops/base.py ``OpVersion.plan``, derived from
  its ``view``): the executor moves it by the flat copy, the runs kernel or
  the strided gather, streaming its input (core/apply_tensors.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Optional, Sequence

from ..errors import OpError
from ..core.pieces import Piece  # noqa: F401 - imported from here by the ops that tile their output
from .base import Node, OpVersion
from .plan import Arg, OutputPlan  # noqa: F401 - the plan's types, imported from here by every op

if TYPE_CHECKING:
    from ..core.tensor import DType


class TensorOp(OpVersion):
    """A version of an operator whose inputs are tensors (see the module docs)."""

    input_types: ClassVar[dict[str, str]] = {}  # input name -> constraint name ("T" by default)
    constraints: ClassVar[dict[str, tuple[str, ...]]] = {}  # constraint name -> ONNX type names
    data_input: ClassVar[int] = 0  # the input whose type is "T" for messages and literal lists

    @classmethod
    def params(cls) -> tuple[str, ...]:
        return cls.attribute_names

    @classmethod
    def output_shape(cls, node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
        raise OpError(f"{cls.label()} takes tensor inputs; use its plan")

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        raise NotImplementedError

    @classmethod
    def constraint_types(cls, constraint: str) -> frozenset[str]:
        if constraint == "T":
            return cls.allowed_types()
        for klass in cls.__mro__:
            found = vars(klass).get("constraints", {}).get(constraint)
            if found is not None:
                return frozenset(found)
        raise KeyError(constraint)

    @classmethod
    def check_args(cls, node: Node, args: Sequence[Optional[Arg]]) -> None:
        """Every required input given, each type allowed (before the plan)."""
        given = {a.name for a in args if a is not None}
        missing = [n for n in cls.inputs if n not in cls.optional and n not in given]
        if missing:
            raise OpError(f"{cls.op_type}-{cls.since_version} needs input {' and '.join(missing)}")
        cls.check_types(node, args)

    @classmethod
    def check_types(cls, node: Node, args: Sequence[Optional[Arg]]) -> None:
        """Each given input's type against its constraint; inputs of one
        constraint must agree."""
        seen: dict[str, Arg] = {}
        for name, arg in zip(cls.expanded_inputs(len(args)), args):
            if arg is None:
                continue
            constraint = cls.input_types.get(name, "T")
            allowed = cls.constraint_types(constraint)
            tname = "string" if arg.dtype.is_string else arg.dtype.name
            if arg.dtype.onnx_name not in allowed:
                opset = node.opset if node.opset is not None else cls.since_version
                if constraint == "T":
                    from .base import check_type

                    try:
                        check_type(node, arg.dtype)
                    except OpError as e:
                        raise OpError(f"{e.message} (input {name})") from None
                raise OpError(
                    f"{cls.op_type}: opset {opset} ({cls.op_type}-{cls.since_version}) does not allow "
                    f"{tname} for input {name} (it takes {', '.join(sorted(allowed))})"
                )
            first = seen.setdefault(constraint, arg)
            if first.dtype != arg.dtype:
                a, b = (first.name, arg.name) if not cls.variadic else (first.tensor.name, arg.tensor.name)
                raise OpError(
                    f"{cls.op_type}: inputs {a} ({first.dtype}) and {b} ({arg.dtype}) must have the same type"
                )

    @classmethod
    def expanded_inputs(cls, count: int) -> list[str]:
        """The input names of a node given ``count`` tensors (a variadic input repeated)."""
        if not cls.variadic:
            return list(cls.inputs[:count])
        return [cls.variadic] * count


def element_bytes(value: Any, dtype: DType) -> bytes:
    """The little-endian bytes of one element of ``dtype`` (a fill value),
    padded to a word; sub-byte values in the low bits."""
    import numpy as np

    if dtype.is_packed:
        return int(np.asarray(value).astype(np.int64).reshape(-1)[0] & ((1 << dtype.bits) - 1)).to_bytes(4, "little")
    raw = np.asarray(value).astype(dtype.numpy).reshape(-1)[:1].tobytes()  # little-endian hosts only
    return raw + bytes(-len(raw) % 4)


def broadcast_shape(op: str, shapes: Sequence[tuple[int, ...]], names: Sequence[str]) -> tuple[int, ...]:
    """numpy's (ONNX's multidirectional) broadcast of ``shapes``."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(rank):
        dims = {s[k - rank + len(s)] for s in shapes if k - rank + len(s) >= 0}
        big = dims - {1}
        if len(big) > 1:
            said = ", ".join(f"{n} {tuple(s)}" for n, s in zip(names, shapes))
            raise OpError(f"{op}: shapes {said} do not broadcast (axis {k} of the result: {sorted(dims)})")
        out.append(big.pop() if big else 1)
    return tuple(out)


def broadcast_strides(arg: Arg, shape: tuple[int, ...]) -> tuple[int, ...]:
    """``arg``'s strides read over the broadcast ``shape`` (stride 0 where it is broadcast)."""
    lead = len(shape) - len(arg.shape)
    return tuple(
        0 if k < lead or arg.shape[k - lead] == 1 else arg.strides[k - lead] for k in range(len(shape))
    )
