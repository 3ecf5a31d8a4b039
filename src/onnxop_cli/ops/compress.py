"""Compress-9/11/28: the slices (or, without ``axis``, the elements of the
flattened input) where the bool ``condition`` is true; a condition shorter
than the axis selects from its part, a longer one is refused. A Gather of
the kept positions (Gather's table and kernels, ops/indexed_plan.gather_made)
unless the runs of consecutive kept slices are few and long: then one piece
per run (ops/tensor_op.py). (11: the text adds negative axes, which Compress-9
takes too, as onnx.reference and onnxruntime do; 28: bfloat16.)
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Optional, Sequence

from ..core.region import Access, c_strides, load
from ..errors import OpError
from ..gpu.tiling import boxes
from . import indexing
from .base import BASE_TYPES, Node, versions
from .tensor_op import Arg, OutputPlan, Piece, TensorOp
from .indexed_plan import NONNEG, gather_made
from .spec import OpSpec, Param


class Compress_9(TensorOp):
    op_type = "Compress"
    since_version = 9
    inputs = ("input", "condition")
    outputs = ("output",)
    attribute_names = ("axis",)
    optional = ("axis",)
    input_types = {"condition": "T1"}
    constraints = {"T1": ("bool",)}

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
            # values past the end that are all false select nothing: onnx.reference and onnxruntime give the
            # same output for them; a true one there is an index past the end (onnx.reference fails,
            # onnxruntime drops it), so it is refused
            past = np.flatnonzero(flags[length:])
            if len(past):
                raise OpError(f"{cls.label()}: condition has {len(flags)} values, more than the {length} "
                              f"{'elements' if axis is None else f'slices along axis {k}'} it selects from, "
                              f"and value {length + int(past[0])} is true")
            flags = flags[:length]
        chosen = np.flatnonzero(flags)
        cuts = np.flatnonzero(np.diff(chosen) != 1) + 1  # where a run of consecutive kept positions starts
        gather = len(chosen) and not data.dtype.is_string and _gathers(data, k, len(chosen), len(cuts) + 1)
        # a gather's plan keeps its pieces too (the same output) for summaries, which make only the
        # shown entries from them (core/summary.py), where they are few enough to plan cheaply
        pieces = None if gather and len(cuts) >= SUMMARY_RUNS else []
        shape = (len(chosen),) if k is None else data.shape[:k] + (len(chosen),) + data.shape[k + 1:]
        out = c_strides(shape)
        at = 0
        # without an axis the flat (row-major) elements, a scalar's one among them: boxes of whole inner axes
        flat = Access(data.shape, data.strides) if data.shape else Access((1,), (1,))
        for start, n in [] if pieces is None else _runs(chosen, cuts):
            if k is None:
                for box in boxes(flat, start, start + n):
                    dims = (box.extent,) + flat.shape[box.axis + 1:]
                    pieces.append(Piece(dims, c_strides(dims), at, load(0, dims, flat.strides[box.axis:], box.origin)))
                    at += box.count
                continue
            dims = list(data.shape)
            dims[k] = n
            pieces.append(Piece(tuple(dims), out, at * out[k], load(0, dims, data.strides, start * data.strides[k])))
            at += n
        if gather:
            plan = _compress_gather(cls, data, k, chosen)
            plan[0].pieces = pieces
            return plan
        return [OutputPlan(cls.outputs[0], tuple(shape), data.dtype, pieces=pieces)]


# Compress runs as a Gather (gpu/indexed.py) unless its runs are few and long: a piece per run is one
# dispatch, and one upload of all the source it spans (along an inner axis: nearly all of it), while
# the gather reads the source once, by vec4 slabs where the slices are whole vectors, else an element
# at a time -- slower than a piece's copy only for a few runs of 64 bytes or more (e.g. 2 runs of
# 126-2046 B: the pieces 2.0-2.6x faster; 2 runs of 4-30 B: the gather 1.8-2.6x; 16 runs of 1 MiB:
# the pieces 1.2x; 64 of 256 KiB: the gather 1.4x; the benchmark's 256 runs of ~36 B: the gather ~6x.
# Mesa 22.3, 16 MiB float32, load 4.5-5 on 2 cores, 2026-12-02). Measured on the element kernel: slices of
# one or two words along an inner axis now gather by gpu/indexed_variants.py, 1.5-2x faster again
# (benchmarks/gather_lines_ab.py), so there these thresholds err toward the pieces; not re-measured.
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
    dims = [(d, s) for d, s in zip(data.shape, data.strides) if d > 1]
    source, indices = data, chosen
    if k is not None:
        table, check = indexing.gather(op, data.shape, chosen.shape, k, data.strides)
    elif all(s == r for (_, s), r in zip(dims, c_strides([d for d, _ in dims]))):
        source = replace(data, shape=(data.size,), strides=(1,))
        table, check = indexing.gather(op, source.shape, chosen.shape, 0)
    else:
        indices = np.stack(np.unravel_index(chosen, data.shape), axis=-1).astype(chosen.dtype)
        table, check = indexing.gather_nd(op, data.shape, indices.shape, 0, data.strides)
    return gather_made(cls.outputs[0], source, indices, table, replace(check, mode=NONNEG))


def _runs(chosen, cuts) -> list[tuple[int, int]]:
    """The sorted positions ``chosen`` as (start, count) runs of consecutive
    ones, each starting at ``chosen[cut]`` for a cut in ``cuts`` (and at the first)."""
    if not len(chosen):
        return []
    bounds = [0, *cuts.tolist(), len(chosen)]
    return [(int(chosen[a]), b - a) for a, b in zip(bounds, bounds[1:])]


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
COMPRESS_TYPES = {9: BASE_TYPES, 11: (), 28: ("bfloat16",)}  # 11: the text's negative axes

COMPRESS = OpSpec(
    "Compress",
    versions(COMPRESS_TYPES, Compress_9),
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
