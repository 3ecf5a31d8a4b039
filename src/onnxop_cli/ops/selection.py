"""CenterCropPad, Compress, OneHot and BitCast: a crop or pad around the
centre, a selection by a condition, a one-hot expansion and a bit
reinterpretation, each a few pieces (ops/family.py).

- CenterCropPad-18: each of ``axes`` cropped or zero-padded to ``shape``
  around its centre (an odd difference puts the extra element at the end);
  a fill and one copy.
- Compress-9/11/28: the slices (or, without ``axis``, the elements of the
  flattened input) where the bool ``condition`` is true; a condition shorter
  than the axis selects from its part, a longer one is refused. A Gather of
  the kept positions (Gather's table and kernels) unless the runs of
  consecutive kept slices are few and long: then one piece per run.
  (11: negative axes; 28: bfloat16.)
- OneHot-9/11/28: ``values[0]`` everywhere, ``values[1]`` where the new axis'
  index equals the index (negative ones count from ``depth``; out of range:
  nowhere). One pass of shaders/one_hot.wgsl over the output, the indices
  read on the device (gpu/one_hot.py); strings a fill and one one-element
  piece per index, on the host.
- BitCast-26: the same bits read as ``to`` (of the same width), same shape.
"""

from __future__ import annotations

import functools
import math
from collections import abc
from dataclasses import replace
from typing import Optional, Sequence

from ..errors import OpError
from ..core.view import c_strides
from . import indexing
from .base import BASE_TYPES, FLOAT8, Node, versions
from .family import Arg, OutputPlan, Piece, TensorOp, element_bytes
from .indexed_plan import NONNEG, gather_made
from .spec import OpSpec, Param


class CenterCropPad_18(TensorOp):
    op_type = "CenterCropPad"
    since_version = 18
    inputs = ("input_data", "shape")
    outputs = ("output_data",)
    attribute_names = ("axes",)
    optional = ("axes",)
    input_types = {"shape": "Tind"}
    constraints = {"Tind": ("int32", "int64")}

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        data, shape_arg = args[0], args[1]
        assert data is not None and shape_arg is not None
        r = len(data.shape)
        given = node.value("axes")
        axes = list(range(r)) if given is None else cls.unique_axes(given, r, f"for an input of rank {r}")
        sizes = shape_arg.ints(cls.label(), "shape")
        if len(sizes) != len(axes):
            raise OpError(f"{cls.label()}: shape {sizes} has {len(sizes)} values for {len(axes)} axes")
        if any(s < 0 for s in sizes):
            raise OpError(f"{cls.label()}: shape {sizes} has a negative size")
        out_shape, src_start, dst_start, box = list(data.shape), [0] * r, [0] * r, list(data.shape)
        for a, s in zip(axes, sizes):
            d = data.shape[a]
            out_shape[a] = s
            if s < d:
                src_start[a], box[a] = (d - s) // 2, s
            elif s > d:
                dst_start[a] = (s - d) // 2
        out = c_strides(out_shape)
        zero = b"" if data.dtype.is_string else element_bytes(0, data.dtype)
        # the zeros only where the box leaves room (a pure crop writes every element once, not twice)
        pieces = [] if box == out_shape else [Piece(tuple(out_shape), out, 0, fill=zero)]
        pieces.append(Piece(tuple(box), out, sum(i * s for i, s in zip(dst_start, out)), 0, data.strides,
                            sum(i * s for i, s in zip(src_start, data.strides))))
        return [OutputPlan(cls.outputs[0], tuple(out_shape), data.dtype, pieces=pieces)]


class Compress_9(TensorOp):
    op_type = "Compress"
    since_version = 9
    inputs = ("input", "condition")
    outputs = ("output",)
    attribute_names = ("axis",)
    optional = ("axis",)
    input_types = {"condition": "T1"}
    constraints = {"T1": ("bool",)}
    negative_axes = False

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        import numpy as np

        data, cond = args[0], args[1]
        assert data is not None and cond is not None
        if len(cond.shape) != 1:
            raise OpError(f"{cls.label()}: condition must be 1-D, got shape {cond.shape}")
        flags = np.asarray(cond.values(), dtype=bool).reshape(-1)
        axis = node.value("axis")
        r = len(data.shape)
        if axis is None:
            length, k = data.size, None
        else:
            k = cls.check_axis(int(axis), -r, r - 1, f"for an input of rank {r}")  # type: ignore[call-overload]
            length = data.shape[k]
        if len(flags) > length:
            raise OpError(f"{cls.label()}: condition has {len(flags)} values, more than the "
                          f"{length} {'elements' if axis is None else f'slices along axis {k}'} it selects from")
        chosen = np.flatnonzero(flags)
        cuts = np.flatnonzero(np.diff(chosen) != 1) + 1  # where a run of consecutive kept positions starts
        gather = len(chosen) and not data.dtype.is_string and _gathers(data, k, len(chosen), len(cuts) + 1)
        # a gather's plan keeps its pieces too (the same output) for summaries, which make only the
        # shown entries from them (core/summary.py), where they are few enough to plan cheaply
        pieces = None if gather and len(cuts) >= SUMMARY_RUNS else []
        at = 0
        for start, n in [] if pieces is None else _runs(chosen, cuts):
            if k is None:
                for dims, src_strides, origin in _row_major_boxes(data.shape, data.strides, start, start + n):
                    pieces.append(Piece(dims, c_strides(dims), at, 0, src_strides, origin))
                    at += math.prod(dims)
                continue
            dims = list(data.shape)
            dims[k] = n
            out = c_strides(data.shape[:k] + (len(chosen),) + data.shape[k + 1:])
            pieces.append(Piece(tuple(dims), out, at * out[k], 0, data.strides, start * data.strides[k]))
            at += n
        if gather:
            plan = _compress_gather(cls, data, k, chosen)
            plan[0].pieces = pieces
            return plan
        shape = (len(chosen),) if k is None else data.shape[:k] + (len(chosen),) + data.shape[k + 1:]
        return [OutputPlan(cls.outputs[0], tuple(shape), data.dtype, pieces=pieces)]


# Compress runs as a Gather (gpu/indexed.py) unless its runs are few and long: a piece per run is one
# dispatch, and one upload of all the source it spans (along an inner axis: nearly all of it), while
# the gather reads the source once, by vec4 slabs where the slices are whole vectors, else an element
# at a time -- slower than a piece's copy only for a few runs of 64 bytes or more (e.g. 2 runs of
# 126-2046 B: the pieces 2.0-2.6x faster; 2 runs of 4-30 B: the gather 1.8-2.6x; 16 runs of 1 MiB:
# the pieces 1.2x; 64 of 256 KiB: the gather 1.4x; the benchmark's 256 runs of ~36 B: the gather ~6x.
# Mesa 22.3, 16 MiB float32, load 4.5-5 on 2 cores, 2026-12-02)
GATHER_BELOW = 64  # mean bytes a run copies (per line of its box) below which the gather runs
GATHER_ABOVE = 32  # runs above which the gather runs, however long


SUMMARY_RUNS = 4096  # runs up to which a gather's plan also carries its pieces
MOST_INDICES = (128 << 20) // 4  # the gather's indices fit one binding (as u32) of WebGPU's least maximum


def _gathers(data: Arg, k: Optional[int], kept: int, runs: int) -> bool:
    """Whether Compress runs as a Gather (see GATHER_BELOW) rather than a piece per run."""
    inner = 1 if k is None else math.prod(data.shape[k + 1:])
    if data.size >= 1 << 32 or kept * (1 if k is not None else max(1, len(data.shape))) > MOST_INDICES:
        return False
    return runs > GATHER_ABOVE or kept * inner * data.dtype.bits < GATHER_BELOW * 8 * runs


def _compress_gather(cls: type[Compress_9], data: Arg, k: Optional[int], chosen) -> list[OutputPlan]:
    """Compress as Gather's table and kernels: the kept positions are its
    indices, along ``k`` or (None) into the flattened input, row-major or
    not (then one lookup per axis, GatherND's table). int32 indices where
    they fit and the slices are not whole vectors (those take the vec4
    kernel, which reads int64 ones)."""
    import numpy as np

    op = cls.label()
    slab = 1 if k is None else math.prod(data.shape[k + 1:])
    wide = data.size >= 1 << 31 or (slab * data.dtype.bits) % 128 == 0
    chosen = chosen.astype(np.int64 if wide else np.int32)
    if k is not None:
        table, check = indexing.gather(op, data.shape, chosen.shape, k, data.strides)
        return gather_made(cls.outputs[0], data, chosen, table, replace(check, mode=NONNEG))
    dims = [(d, s) for d, s in zip(data.shape, data.strides) if d > 1]
    if all(s == r for (_, s), r in zip(dims, c_strides([d for d, _ in dims]))):
        flat = replace(data, shape=(data.size,), strides=(1,))
        table, check = indexing.gather(op, flat.shape, chosen.shape, 0)
        return gather_made(cls.outputs[0], flat, chosen, table, replace(check, mode=NONNEG))
    where = np.stack(np.unravel_index(chosen, data.shape), axis=-1).astype(chosen.dtype)
    table, check = indexing.gather_nd(op, data.shape, where.shape, 0, data.strides)
    return gather_made(cls.outputs[0], data, where, table, replace(check, mode=NONNEG))


def _runs(chosen, cuts) -> list[tuple[int, int]]:
    """The sorted positions ``chosen`` as (start, count) runs of consecutive
    ones, each starting at ``chosen[cut]`` for a cut in ``cuts`` (and at the first)."""
    if not len(chosen):
        return []
    bounds = [0, *cuts.tolist(), len(chosen)]
    return [(int(chosen[a]), b - a) for a, b in zip(bounds, bounds[1:])]


def _row_major_boxes(shape, strides, start: int, end: int):
    """Flat (row-major) elements [start, end) of a tensor as boxes: (dims,
    source strides, source offset), each all of the axes after its first."""
    rank = len(shape)
    inner = [1] * rank
    for k in range(rank - 2, -1, -1):
        inner[k] = inner[k + 1] * shape[k + 1]
    e = start
    while e < end:
        a = next(k for k in range(rank) if e % inner[k] == 0 and end - e >= inner[k])
        index = [(e // inner[k]) % shape[k] for k in range(rank)]
        extent = min(shape[a] - index[a], (end - e) // inner[a])
        origin = sum(i * s for i, s in zip(index, strides))
        yield (extent,) + tuple(shape[a + 1:]), tuple(strides[a:]), origin
        e += extent * inner[a]


class Compress_11(Compress_9):
    since_version = 11
    negative_axes = True


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
    negative_axes = False
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
        depth = int(np.asarray(depth_arg.values()).reshape(-1)[0])
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
        from ..gpu.one_hot import LIMIT

        # the kernel reads the indices row-major as they lie (any byte order): strings (no GPU form),
        # Fortran-ordered indices of rank 2 or more (their positions are not the output's order) and depths
        # past the kernel's u32 arithmetic keep the pieces
        if (values.dtype.is_string or depth >= LIMIT
                or (indices.tensor.order == "F" and sum(d > 1 for d in indices.shape) > 1)):
            return [OutputPlan(cls.outputs[0], shape, values.dtype, pieces=pieces)]  # type: ignore[arg-type]
        runner = functools.partial(_run_kernel, depth, inner, indices.dtype.numpy.kind, indices.dtype.bits, off, on,
                                   math.prod(shape), values.dtype.bits)
        return [OutputPlan(cls.outputs[0], shape, values.dtype, pieces=pieces,  # type: ignore[arg-type]
                           runner=runner, kernel="one-hot")]


def _hot_pieces(indices: Arg, shape: tuple[int, ...], depth: int, inner: int, off: bytes, on: bytes) -> list[Piece]:
    """OneHot as pieces: ``off`` everywhere, then one ``on`` element per index
    in range. Indices as ONNX casts them to int64 (floats truncated toward
    zero; NaN and infinities out of range), as the kernel reads them."""
    import numpy as np

    pieces = [Piece(shape, c_strides(shape), 0, fill=off)]
    for flat, j in enumerate(np.asarray(indices.values()).reshape(-1).tolist()):
        if isinstance(j, float):
            if not math.isfinite(j):
                continue
            j = int(j)
        j = j + depth if j < 0 else j
        if not 0 <= j < depth:
            continue
        outer, rest = divmod(flat, inner) if inner else (0, 0)
        pieces.append(Piece((), (), outer * depth * inner + j * inner + rest, fill=on))
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


def _run_kernel(depth, inner, kind, index_bits, off, on, count, bits, gpu, sources, sink) -> int:
    from ..gpu.one_hot import run_one_hot

    return run_one_hot(gpu, sources, sink, depth=depth, inner=inner, index_kind=kind, index_bits=index_bits,
                       off=off, on=on, count=count, bits=bits)


class OneHot_11(OneHot_9):
    since_version = 11
    negative_axes = True


class BitCast_26(TensorOp):
    op_type = "BitCast"
    since_version = 26
    inputs = ("input",)
    outputs = ("output",)
    attribute_names = ("to",)

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        from ..core.tensor import dtype_by_onnx
        from ..core.view import View

        data = args[0]
        assert data is not None
        try:
            to = dtype_by_onnx(int(node.value("to")))  # type: ignore[call-overload]
        except Exception:  # noqa: BLE001 - an unknown TensorProto number
            raise OpError(f"{cls.label()}: to {node.value('to')} is not an ONNX tensor type") from None
        if to.onnx_name not in cls.allowed_types():
            raise OpError(f"{cls.label()}: cannot cast to {'string' if to.is_string else to}")
        if to.bits != data.dtype.bits:
            raise OpError(f"{cls.label()}: {data.dtype} ({data.dtype.bits} bits) and {to} ({to.bits} bits) "
                          "differ in width; BitCast keeps the bits")
        if data.tensor.byteswap == 0 and View(data.shape, data.strides).is_identity():
            return [OutputPlan(cls.outputs[0], data.shape, to, copy=0, kernel="copy")]
        piece = Piece(data.shape, c_strides(data.shape), 0, 0, data.strides)  # re-laid out, same width
        return [OutputPlan(cls.outputs[0], data.shape, to, pieces=[piece])]


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
CENTER_CROP_PAD_TYPES = {18: BASE_TYPES + ("bfloat16",)}

CENTER_CROP_PAD = OpSpec(
    "CenterCropPad",
    versions(CENTER_CROP_PAD_TYPES, CenterCropPad_18),
    (
        Param("shape", "tensor", "The size of each of --axes after cropping or padding (int64 or int32).", "2,2"),
        Param("axes", "ints", "The axes --shape applies to (default: all).", "1"),
    ),
    summary="Crop or pad around the centre (ONNX CenterCropPad).",
    description="Crop or zero-pad each input around its centre to --shape along --axes, through the GPU "
    "pieces kernel.",
    example="onnxop center-crop-pad x.npy --shape 2,2 --axes 1",
)

# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
COMPRESS_TYPES = {9: BASE_TYPES, 28: ("bfloat16",)}

COMPRESS = OpSpec(
    "Compress",
    versions(COMPRESS_TYPES, Compress_9, Compress_11),
    (
        Param("condition", "tensor", "Which slices (or flattened elements) to keep: a bool list or file.",
              "1,0,1"),
        Param("axis", "int", "The axis to select along (default: the flattened input).", "0"),
    ),
    summary="Keep the slices selected by a condition (ONNX Compress).",
    description="Keep each input's slices along --axis (or elements of the flattened input) where "
    "--condition is true, through the GPU gather kernels (a strided GPU copy per run where the runs are few and "
    "long).",
    example="onnxop compress x.npy --condition 1,0,1 --axis 0",
)

# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
ONE_HOT_TYPES = {9: BASE_TYPES, 28: ("bfloat16",)}

ONE_HOT = OpSpec(
    "OneHot",
    versions(ONE_HOT_TYPES, OneHot_9, OneHot_11),
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

# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
BIT_CAST_TYPES = {
    26: (
        "float", "double", "float16", "bool", "complex64", "complex128", "int8", "int16", "int32", "int64",
        "uint8", "uint16", "uint32", "uint64", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
        "float8e5m2fnuz", "int4", "uint4", "float4e2m1", "float8e8m0", "int2", "uint2",
    ),
}

BITCAST = OpSpec(
    "BitCast",
    versions(BIT_CAST_TYPES, BitCast_26),
    (Param("to", "int", "The type to read the bits as, a TensorProto number of the same width.", "6"),),
    summary="Read bits as another type of one width (ONNX BitCast).",
    description="Reinterpret each input's bits as --to (same width, same shape), through the GPU flat copy "
    "kernel (or the pieces kernel for Fortran-order and big-endian inputs).",
    example="onnxop bit-cast x.npy --to 6 -o bits.npy",
)
