"""OneHot-9/11/28: ``values[0]`` everywhere, ``values[1]`` where the new
axis' index equals the index (negative ones count from ``depth``; out of
range: nowhere). One pass of the kernel gpu/render/one_hot.py renders over the output, the
indices read on the device (gpu/word_kernels.py); strings a fill and one
one-element piece per index, on the host. Negative axes count from the
back in every version: OneHot-9's own default is -1.
"""

from __future__ import annotations

import functools
import math
from collections import abc
from typing import Optional, Sequence

from ..core.region import Fill, c_strides
from ..errors import OpError
from .base import BASE_TYPES, Node, versions
from .tensor_op import Arg, OutputPlan, Piece, TensorOp, element_bytes
from .spec import OpSpec, Param

NUMBERS = ("double", "float", "float16", "int16", "int32", "int64", "int8", "uint16", "uint32", "uint64", "uint8")


class OneHot_9(TensorOp):
    op_type = "OneHot"
    since_version = 9
    inputs = ("indices", "depth", "values")
    outputs = ("output",)
    attribute_names = ("axis",)
    optional = ("axis",)
    input_types = {"indices": "T1", "depth": "T2", "values": "T3"}
    constraints = {"T1": NUMBERS, "T2": NUMBERS}
    data_input = 2
    literal_types = {"values": "float", "depth": "int64"}

    @classmethod
    def constraint_types(cls, constraint: str) -> frozenset[str]:
        return cls.allowed_types() if constraint == "T3" else super().constraint_types(constraint)

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        import numpy as np

        indices, depth_arg, values = args
        assert indices is not None and depth_arg is not None and values is not None
        if depth_arg.size != 1:
            raise OpError(f"{cls.label()}: depth must be one value, got shape {depth_arg.shape}")
        given = np.asarray(depth_arg.values()).reshape(-1)[0]
        if given.dtype.kind == "f" and not math.isfinite(float(given)):  # int() of it was a ValueError or OverflowError
            raise OpError(f"{cls.label()}: depth {float(given)} must be a finite number of at least 1")
        depth = int(given)
        if depth < 1:
            raise OpError(f"{cls.label()}: depth {depth} must be at least 1")
        if values.size != 2 or len(values.shape) != 1:
            raise OpError(f"{cls.label()}: values must be [off_value, on_value], got shape {values.shape}")
        r = len(indices.shape)
        axis = cls.check_axis(int(node.value("axis", -1)), -(r + 1), r, f"for an output of rank {r + 1}")  # type: ignore[call-overload]
        shape = indices.shape[:axis] + (depth,) + indices.shape[axis:]
        if values.dtype.is_string:
            off, on = (bytes(v) for v in values.tensor.strings.reshape(-1))  # type: ignore[union-attr]
        else:
            raw = np.asarray(values.values()).reshape(-1)
            off, on = element_bytes(raw[0], values.dtype), element_bytes(raw[1], values.dtype)
        inner = math.prod(indices.shape[axis:])
        # the pieces (a fill, one element per index) read the indices on the host: built only when asked
        # for -- by summaries, which cut them to the shown entries, and by the string path
        pieces = _HotPieces(lambda: _hot_pieces(indices, shape, depth, inner, off, on))
        from ..gpu.word_kernels import LIMIT

        # the kernel reads the indices row-major as they lie (any byte order): strings (no GPU form) and
        # depths past the kernel's u32 arithmetic keep the pieces
        if values.dtype.is_string or depth >= LIMIT:
            return [OutputPlan(cls.outputs[0], shape, values.dtype, pieces=pieces)]  # type: ignore[arg-type]
        runner = functools.partial(_run_kernel, depth, inner, indices.dtype.numpy.kind, indices.dtype.bits, off, on,
                                   math.prod(shape), values.dtype.bits)
        if indices.tensor.order == "F" and sum(d > 1 for d in indices.shape) > 1:
            # Fortran-ordered indices of rank 2 or more: their positions are not the output's order, so the
            # kernel reads a row-major copy made on the host (the pieces, one dispatch an index, took 56 s for
            # 100,000 indices)
            runner = functools.partial(_row_major_indices, indices, runner)
        # the pieces too for a summary only where they are few: a piece per index, each looked at in Python
        # to cut them to the shown entries (2 million indices printed: 0.6 GB and 2 minutes, where the
        # kernel streamed through with only the shown elements kept takes the time of the output)
        few = math.prod(indices.shape) <= SUMMARY_PIECES
        return [OutputPlan(cls.outputs[0], shape, values.dtype, pieces=pieces if few else None,  # type: ignore[arg-type]
                           runner=runner, kernel="one-hot")]


SUMMARY_PIECES = 4096  # indices up to which the kernel's plan also carries its pieces (as Compress's runs)


def _hot_pieces(indices: Arg, shape: tuple[int, ...], depth: int, inner: int, off: bytes, on: bytes) -> list[Piece]:
    """OneHot as pieces: ``off`` everywhere, then one ``on`` element per index
    in range. Indices as ONNX casts them to int64 (floats truncated toward
    zero; NaN and infinities out of range), as the kernel reads them."""
    import numpy as np

    pieces = [Piece(shape, c_strides(shape), 0, Fill(off))]
    for flat, j in enumerate(np.asarray(indices.values()).reshape(-1).tolist()):
        if isinstance(j, float):
            if not math.isfinite(j):
                continue
            j = int(j)
        j = j + depth if j < 0 else j
        if not 0 <= j < depth:
            continue
        outer, rest = divmod(flat, inner) if inner else (0, 0)
        pieces.append(Piece((), (), outer * depth * inner + j * inner + rest, Fill(on)))
    return pieces


class _HotPieces(abc.Sequence):
    """A list of pieces made on first use."""

    def __init__(self, make) -> None:
        self._make, self._made = make, None

    def _list(self) -> list[Piece]:
        if self._made is None:
            self._made = self._make()
        return self._made

    def __len__(self) -> int:
        return len(self._list())

    def __getitem__(self, i):  # type: ignore[override]
        return self._list()[i]

    def __iter__(self):
        return iter(self._list())


def _row_major_indices(indices: Arg, runner, gpu, sources, sink) -> int:
    import numpy as np

    from ..core.sources import MemoryBytes
    from ..gpu.pieces import Source

    a = np.asarray(indices.values())
    c = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
    return runner(gpu, [Source(MemoryBytes(c)), *sources[1:]], sink)


def _run_kernel(depth, inner, kind, index_bits, off, on, count, bits, gpu, sources, sink) -> int:
    from ..gpu.word_kernels import run_one_hot

    return run_one_hot(gpu, sources, sink, depth=depth, inner=inner, index_kind=kind, index_bits=index_bits,
                       off=off, on=on, count=count, bits=bits)



# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
ONE_HOT_TYPES = {9: BASE_TYPES, 11: (), 28: ("bfloat16",)}  # 11: the text's negative axes

ONE_HOT = OpSpec(
    "OneHot",
    versions(ONE_HOT_TYPES, OneHot_9),
    (
        Param("depth", "tensor", "The length of the new axis.", "4"),
        Param("values", "tensor", "[off_value, on_value], a file (its type is the output's) or a list "
              "(float32).", "0,1"),
        Param("axis", "int", "Where the new axis goes (default -1, the last).", "0"),
    ),
    summary="One-hot encode index tensors (ONNX OneHot).",
    description="For each index file, a tensor with a new --axis of --depth: on_value where its index is "
    "the element's index, off_value elsewhere, in one pass of the GPU's one-hot kernel (strings: on the host).",
    example="onnxop one-hot i.npy --depth 4 --values 0,1",
)
