"""What every operator version shares: its schema names, a pure shape rule and
the index map (a strided view) that says where each output element comes from.

Shape logic is pure Python. It never touches the GPU and never sees bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from ..errors import OpError
from ..core.region import Access

if TYPE_CHECKING:
    from ..core.tensor import DType


@dataclass(frozen=True)
class Node:
    """One ONNX node as onnxop runs and prints it.

    ``attributes`` holds only the attributes the user gave (the docs omit
    defaults); ``inputs`` the constant integer inputs after the data input
    (Reshape's shape, Slice's starts, ...), by their ONNX names, where the
    node's opset makes them inputs. ``opset`` is the opset the user asked for
    (``op`` is the version it selects). ``any_type`` (the CLI's --any-type,
    never set by conformance or a model) runs the index map on a type the
    opset's type list excludes: moving bytes does not depend on the type.
    """

    op: type[OpVersion]
    attributes: dict[str, object] = field(default_factory=dict)
    inputs: dict[str, tuple[int, ...]] = field(default_factory=dict)
    opset: int | None = None
    outputs: int | None = None  # how many outputs the node has, where the op lets it choose (Split)
    any_type: bool = False

    @property
    def op_type(self) -> str:
        return self.op.op_type

    def value(self, name: str, default: object = None) -> object:
        """A parameter, wherever this opset keeps it (attribute or input)."""
        if name in self.attributes:
            return self.attributes[name]
        return self.inputs.get(name, default)

    @property
    def axes(self) -> tuple[int, ...] | None:
        axes = self.value("axes")
        return None if axes is None else tuple(int(a) for a in axes)  # type: ignore[union-attr]

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self.op.output_shape(self, shape)

    def view(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int = 0) -> Access:
        """Where each output element (row-major) comes from in an input of
        ``shape`` laid out with ``strides`` (elements) from ``offset``."""
        return self.op.view(self, shape, strides, offset)


class OpVersion:
    """One version of an operator, as ONNX's reference keeps them: one class per change."""

    op_type: ClassVar[str]
    since_version: ClassVar[int]
    inputs: ClassVar[tuple[str, ...]]  # ONNX input names; the first is the data
    outputs: ClassVar[tuple[str, ...]]
    attribute_names: ClassVar[tuple[str, ...]] = ()  # the attributes this version has
    optional: ClassVar[tuple[str, ...]] = ()  # attributes and inputs that may be left out
    negative_axes: ClassVar[bool] = True
    variadic: ClassVar[str] = ""  # the input that takes any number of tensors (Concat's)
    variadic_output: ClassVar[bool] = False  # any number of outputs (Split's)
    all_versions: ClassVar[tuple[type["OpVersion"], ...]] = ()  # every version of the operator (ops/__init__ sets it)
    type_table: ClassVar[dict[int, tuple[str, ...]]] = {}  # the operator's: opset -> ONNX type names it added (versions())

    @classmethod
    def label(cls) -> str:
        return cls.op_type

    @classmethod
    def params(cls) -> tuple[str, ...]:
        """Every parameter of this version: attributes, then constant inputs."""
        return cls.attribute_names + cls.inputs[1:]

    @classmethod
    def allowed_types(cls) -> frozenset[str]:
        """ONNX names (``float``, ``int4``) of the types this version allows:
        what it and every earlier version of the operator added (the
        operator's TYPES table, which versions() hands every version)."""
        return frozenset(t for since, added in cls.type_table.items() if since <= cls.since_version for t in added)

    @classmethod
    def output_shape(cls, node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
        raise NotImplementedError

    @classmethod
    def view(cls, node: Node, shape: tuple[int, ...], strides: tuple[int, ...], offset: int = 0) -> Access:
        """The index map. A reshape moves no element: the output is the input
        read in row-major order, whatever its own layout."""
        return Access(tuple(shape), tuple(strides), offset)

    @classmethod
    def expanded_inputs(cls, count: int) -> list[str]:
        """The names of a node's ``count`` tensor inputs: a view operator's
        one tensor is its data (its other inputs are constants of the node)."""
        return list(cls.inputs[: min(count, 1)])

    @classmethod
    def check_args(cls, node: Node, args) -> None:
        """Refusals before the plan: none for a view operator (its plan checks
        its one input in the order it always has: shape rule, then type)."""

    @classmethod
    def plan(cls, node: Node, args) -> list:
        """A view operator as a plan (ops/tensor_op.py): one output of one
        region, the index map over the input's elements as they lie (its
        layout's strides and offset), read row-major."""
        from ..core.tensor import check_shape
        from .plan import one_region

        data = args[0]
        shape = tuple(cls.output_shape(node, data.shape))
        # a shape numpy cannot hold (Unsqueeze past 64 dimensions) is no file numpy could read
        check_shape(shape, data.dtype.numpy_itemsize, cls.op_type, noun="output shape")
        if not node.any_type:
            check_type(node, data.dtype)
        return [one_region(cls.outputs[0], shape, data.dtype, node.view(data.shape, data.strides, data.offset))]

    @classmethod
    def check_axis(cls, axis: int, low: int, high: int, what: str) -> int:
        """Check ``axis`` against [low, high] and count a negative one from the back.

        ``low`` is -rank of the axis space; versions without negative axes use 0.
        """
        allowed_low = low if cls.negative_axes else 0
        if not allowed_low <= axis <= high:
            note = (
                f" (negative axes need opset 11; this is {cls.op_type}-{cls.since_version})"
                if axis < 0 and not cls.negative_axes
                else ""
            )
            span = f" [{allowed_low}, {high}]" if allowed_low <= high else ": there is no axis"  # rank 0, not [0, -1]
            raise OpError(
                f"{cls.label()}: axis {axis} is out of range{span} {what}{note}"
            )
        return axis - low if axis < 0 else axis

    @classmethod
    def unique_axes(cls, axes, rank: int, what: str) -> list[int]:
        """Normalised ``axes`` of a rank-``rank`` space, each named once."""
        seen: dict[int, int] = {}
        for axis in axes:
            norm = cls.check_axis(int(axis), -rank, rank - 1, what)
            if norm in seen:
                raise OpError(
                    f"{cls.label()}: axes {seen[norm]} and {axis} both name axis {norm}; axes must be unique"
                    if seen[norm] != axis
                    else f"{cls.label()}: axis {axis} appears more than once; axes must be unique"
                )
            seen[norm] = int(axis)
        return list(seen)


def versions(types: dict[int, tuple[str, ...]], *rules: type[OpVersion]) -> tuple[type[OpVersion], ...]:
    """Every version of one operator, oldest first, as onnx.defs numbers them.

    ``rules`` are the classes written out, one per change of behaviour (the
    ONNX reference's shape); ``types`` says which tensor types each opset
    added. An opset in ``types`` that changed nothing else gets a class made
    here: the rule in effect, under its own since_version. Type lists are
    data; a class is code only where the code changes.
    """
    found: list[type[OpVersion]] = []
    for since in sorted(set(types) | {r.since_version for r in rules}):
        rule = [r for r in rules if r.since_version <= since][-1]
        if rule.since_version != since:
            name = f"{rule.op_type}_{since}"
            rule = type(name, (rule,), {"since_version": since, "__module__": rule.__module__, "__qualname__": name})
        rule.type_table = types
        found.append(rule)
    return tuple(found)


def check_type(node: Node, dtype: "DType") -> None:
    """Refuse a tensor type the node's operator version does not allow, naming
    the version (and opset) that introduced it."""
    op = node.op
    if dtype.onnx_name in op.allowed_types():
        return
    name = "string" if dtype.is_string else dtype.name  # numpy calls it "object"
    opset = node.opset if node.opset is not None else op.since_version
    where = f"opset {opset} ({op.op_type}-{op.since_version})"
    later = [v for v in op.all_versions if dtype.onnx_name in v.allowed_types()]
    if not later:
        raise OpError(f"{op.op_type}: no opset allows {name}")
    first = later[0].since_version
    raise OpError(
        f"{op.op_type}: {where} does not allow {name}; "
        f"{name} was added in {op.op_type}-{first} (opset {first})"
    )


def size_of(shape) -> int:
    return math.prod(shape)


# The types of every ONNX opset that widened the tensor types of most operators.
BASE_TYPES = (
    "float", "double", "float16", "bool", "complex64", "complex128", "int8", "int16",
    "int32", "int64", "uint8", "uint16", "uint32", "uint64", "string",
)
FLOAT8 = ("float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz")
# The rows onnx.defs added to the type lists of most operators from opset 23 on (a TYPES table
# spreads them: {..., **LATE_TYPES}).
LATE_TYPES = {23: ("float4e2m1",), 24: ("float8e8m0",), 25: ("int2", "uint2")}
