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
  triangle (shaders/pieces.wgsl runs them; the host path runs strings);
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

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Optional, Sequence

from ..errors import OpError
from ..core.view import View, c_strides, f_strides
from ..core.pieces import Piece
from .base import Node, OpVersion

if TYPE_CHECKING:
    import numpy as np

    from ..core.tensor import DType, Tensor


@dataclass
class Arg:
    """One input tensor as an op's plan sees it: shape, type, the element
    strides of its storage (row-major, or Fortran's), and its values on
    demand -- for the small inputs that decide shapes (pads, split, k), read
    on the host; large ones (data, indices) stay bytes for the kernel."""

    name: str
    shape: tuple[int, ...]
    dtype: DType
    tensor: Tensor = field(repr=False)
    strides: tuple[int, ...] = ()
    offset: int = 0  # the element where it starts in its storage (a graph value that views a larger base)

    def __post_init__(self) -> None:
        if not self.strides and self.shape:
            self.strides = f_strides(self.shape) if self.tensor.order == "F" else c_strides(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def values(self) -> np.ndarray:
        return self.tensor.to_numpy()

    def ints(self, op: str, what: str) -> list[int]:
        """The values of an integer input (pads, split, k) as Python ints."""
        if not (self.dtype.onnx_name.startswith("int") or self.dtype.onnx_name.startswith("uint")):
            raise OpError(f"{op}: {what} must be an integer tensor, got {self.dtype}")
        return [int(v) for v in self.values().reshape(-1)]


Runner = Callable[..., int]  # runner(gpu, sources: list[ByteSource], sink, *, args) -> bytes written


@dataclass
class OutputPlan:
    """One output of a node: its name, shape, type and how its bytes are made
    (exactly one of pieces, runner, values, copy, view -- except a runner that
    equals its pieces, kept for summaries and as its fallback: Where's)."""

    name: str
    shape: tuple[int, ...]
    dtype: DType
    pieces: Optional[list[Piece]] = None
    runner: Optional[Runner] = None
    values: Any = None  # a numpy array (metadata results: Shape, Size)
    copy: Optional[int] = None
    view: Optional[View] = None  # one region: this view of input 0's elements as they lie, read row-major
    kernel: str = "pieces"  # what --json says moved the bytes: pieces, copy, <op>, none
    # checks a runner can make only on the device (indices in range), run for every job of a
    # batch before any job writes: precheck(gpu, sources) raises OpError
    precheck: Optional[Callable[..., None]] = None
    # a runner whose output is an index map (the indexed gathers): cut(edge) -> a runner of only the
    # elements a summary shows (core/shown_values.py), or None
    cut: Optional[Callable[[int], Optional[Runner]]] = None
    # an indexed gather's map for a few elements: read_from(flat output positions) -> (data input,
    # data element positions) or None (core/value_bytes.py: print mode's values made where read)
    read_from: Optional[Callable[[Any], Any]] = None

    @property
    def size(self) -> int:
        return math.prod(self.shape)


class TensorOp(OpVersion):
    """A version of an operator whose inputs are tensors (see the module docs)."""

    variadic: ClassVar[str] = ""  # the input that takes any number of tensors
    variadic_output: ClassVar[bool] = False
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


def fill_piece(shape: tuple[int, ...], value: bytes, offset: int = 0, strides: tuple[int, ...] | None = None) -> Piece:
    """A box of the output filled with one value (row-major by default)."""
    return Piece(tuple(shape), c_strides(shape) if strides is None else tuple(strides), offset, fill=value)


def copy_piece(arg_index: int, arg: Arg, dst_strides: tuple[int, ...], dst_offset: int = 0) -> Piece:
    """The whole input ``arg`` copied into a box of the output."""
    return Piece(arg.shape, tuple(dst_strides), dst_offset, arg_index, arg.strides, 0)


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
