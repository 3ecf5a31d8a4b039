"""What every operator version shares: its schema names and a pure shape rule.

Shape logic is pure Python. It never touches the GPU and never sees bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ..errors import OpError


@dataclass(frozen=True)
class Node:
    """One ONNX node as onnxop runs and prints it.

    ``attributes`` holds only the attributes the user gave (the docs omit
    defaults). ``axes`` is Unsqueeze's axes, wherever this opset keeps them.
    ``opset`` is the opset the user asked for (``op`` is the version it selects).
    """

    op: type[OpVersion]
    attributes: dict[str, object] = field(default_factory=dict)
    axes: tuple[int, ...] | None = None
    opset: int | None = None

    @property
    def op_type(self) -> str:
        return self.op.op_type

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self.op.output_shape(self, shape)


class OpVersion:
    """One version of an operator, as ONNX's reference keeps them: one class per change."""

    op_type: ClassVar[str]
    since_version: ClassVar[int]
    inputs: ClassVar[tuple[str, ...]]
    outputs: ClassVar[tuple[str, ...]]
    negative_axes: ClassVar[bool] = True
    types_added: ClassVar[tuple[str, ...]] = ()  # ONNX type names this version adds

    @classmethod
    def label(cls) -> str:
        return cls.op_type

    @classmethod
    def allowed_types(cls) -> frozenset[str]:
        """ONNX names (``float``, ``int4``) of the types this version allows:
        what it and every earlier version of the operator added."""
        return frozenset(
            t for klass in cls.__mro__ for t in vars(klass).get("types_added", ())
        )

    @classmethod
    def output_shape(cls, node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
        raise NotImplementedError

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
            raise OpError(
                f"{cls.label()}: axis {axis} is out of range [{allowed_low}, {high}] {what}{note}"
            )
        return axis - low if axis < 0 else axis
