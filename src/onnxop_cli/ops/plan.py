"""What an operator's plan is made of (ops/tensor_op.py says how ops build
them; ops/base.py derives a view operator's): ``Arg``, one input as the plan
sees it, and ``OutputPlan``, one output and how its bytes are made. Pure
Python: shapes, types and index maps, no bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional

from ..errors import OpError
from ..core.region import Access, Convert, Load, c_strides, f_strides
from ..core.pieces import Piece

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
    """One output of a node: its name, shape, type and how its bytes are made:
    regions (``pieces``), or a ``runner`` (an indexed gather's, a scatter's:
    a runner that equals its pieces keeps them, for summaries and as its
    fallback: Where's; Cast's, whose one region converts, keeps it as the
    IR's description only: ``moves``), or metadata ``values``. A view is a
    one-region plan (``one_region``, ``view``); an input's elements as they
    are, another (``same_elements``, ``flat``): the executor runs them on the
    copy, runs or gather kernels, which need no piece table."""

    name: str
    shape: tuple[int, ...]
    dtype: DType
    pieces: Optional[list[Piece]] = None
    runner: Optional[Runner] = None
    values: Any = None  # a numpy array (metadata results: Shape, Size)
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

    @property
    def view(self) -> Optional[Access]:
        """A view's plan (``one_region``, kernel "view"): the access of input 0
        its one region reads, row-major over the output; else None."""
        if self.kernel != "view" or self.pieces is None or len(self.pieces) != 1:
            return None
        load = self.pieces[0].copied
        return None if load is None else load.at

    @property
    def moves(self) -> Optional[list[Piece]]:
        """Its pieces where moving bytes makes them (the pieces kernel, a
        summary's narrowed pieces); None where it has none or they convert
        (Cast's: only its runner makes them, core/pieces.py ``moved``)."""
        if self.pieces is None or any(isinstance(pc.value, Convert) for pc in self.pieces):
            return None
        return self.pieces

    @property
    def flat(self) -> Optional[int]:
        """The input whose elements, read from its first in storage order,
        are this output's row-major (one piece, the whole output, an identity
        access on both sides), else None. A plan that says ``kernel="copy"``
        is one (``same_elements``): the executor copies its bytes with the
        flat copy kernel."""
        if self.pieces is None or len(self.pieces) != 1 or self.runner is not None:
            return None
        pc = self.pieces[0]
        load = pc.copied
        if load is None:
            return None
        return load.input if pc.size == self.size and pc.dst.is_identity() and load.at.is_identity() else None


def same_elements(name: str, data: Arg, dtype: DType) -> OutputPlan:
    """Output ``name``: input 0's elements, row-major, as ``dtype`` of their
    width (a Cast to its own type, BitCast): one region reading them where
    they lie -- Fortran order, a window of a larger base, big-endian bytes
    the kernel swaps -- which the executor runs as the flat copy when it is
    the input's bytes in order (``OutputPlan.flat``)."""
    at = Access(data.shape, data.strides, data.offset)
    as_they_are = data.tensor.byteswap == 0 and at.is_identity()
    return one_region(name, data.shape, dtype, at, "copy" if as_they_are else "pieces")


def one_region(name: str, shape, dtype: DType, at: Access, kernel: str = "view") -> OutputPlan:
    """Output ``name`` of ``shape``: input 0 read through ``at``, row-major --
    a view operator's whole plan (ops/base.py)."""
    shape = tuple(shape)
    return OutputPlan(name, shape, dtype, pieces=[Piece(shape, c_strides(shape), 0, Load(0, at))], kernel=kernel)
