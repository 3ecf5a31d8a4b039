"""Pad: each axis grown (or, with negative pads, cropped) at both ends.

Pad-1 takes ``paddings`` and Pad-2 ``pads`` as attributes with a float
``value``; Pad-11 moves pads and ``constant_value`` to inputs and widens the
types; Pad-13 adds bool, complex, string and bfloat16; Pad-18 the ``axes``
input; Pad-19 ``wrap`` mode; 21, 23, 24 and 25 the 8-, 4- and 2-bit types.

``pads`` is ``[b_1, ..., b_n, e_1, ..., e_n]`` for the axes padded. A negative
pad crops first; the positive ones then pad the cropped axis by the mode:
constant (a fill value), edge (the end element repeated), reflect (mirrored
on the end elements, numpy's ``reflect``: pads beyond the axis length keep
mirroring) or wrap (periodic). An axis of length 0 can only be padded with a
constant. ONNX's reference runs numpy's pad, which is what this follows.

The plan: constant mode is one fill of the output and one copy of the
(cropped) input into its box. The other modes cut each axis of the output
into runs that read the input forwards, backwards or one element over and
over; runs that repeat periodically are one run with a repeat axis, so pads
far beyond the axis length stay a few pieces. The pieces are the products of
the axes' runs.
"""

from __future__ import annotations

import itertools
from typing import Optional, Sequence

from ..errors import OpError
from ..core.region import Fill, c_strides, load
from .base import FLOAT8, LATE_TYPES, Node, versions
from .tensor_op import Arg, OutputPlan, Piece, TensorOp, element_bytes
from .spec import OpSpec, Param

MODES = ("constant", "reflect", "edge")


class Pad_1(TensorOp):
    op_type = "Pad"
    since_version = 1
    inputs = ("data",)
    outputs = ("output",)
    attribute_names = ("paddings", "mode", "value")
    optional = ("mode", "value")
    modes = MODES
    pads_name = "paddings"

    @classmethod
    def raw_pads(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[int]:
        return [int(v) for v in node.value(cls.pads_name, ())]  # type: ignore[union-attr]

    @classmethod
    def axes_of(cls, node: Node, args: Sequence[Optional[Arg]], rank: int) -> list[int]:
        return list(range(rank))

    @classmethod
    def fill_value(cls, node: Node, args: Sequence[Optional[Arg]], data: Arg) -> bytes:
        return element_bytes(float(node.value("value", 0.0)), data.dtype)  # type: ignore[arg-type]

    @classmethod
    def plan(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[OutputPlan]:
        data = args[0]
        assert data is not None
        mode = str(node.value("mode", "constant"))
        if mode not in cls.modes:
            raise OpError(f"{cls.label()}: mode {mode!r} is not one of {', '.join(cls.modes)} (at opset "
                          f"{node.opset or cls.since_version}{'; wrap needs opset 19' if mode == 'wrap' else ''})")
        r = len(data.shape)
        axes = cls.axes_of(node, args, r)
        pads = cls.raw_pads(node, args)
        if len(pads) != 2 * len(axes):
            raise OpError(f"{cls.label()}: pads {pads} has {len(pads)} values; it needs 2 x {len(axes)} "
                          f"(a begin and an end for each of {'axes ' + str(axes) if len(axes) != r else f'the {r} axes'})")
        begin, end = [0] * r, [0] * r
        for i, a in enumerate(axes):
            begin[a], end[a] = pads[i], pads[len(axes) + i]
        shape = tuple(d + b + e for d, b, e in zip(data.shape, begin, end))
        for k, n in enumerate(shape):
            if n < 0:
                raise OpError(f"{cls.label()}: pads {begin[k]} and {end[k]} crop axis {k} of length "
                              f"{data.shape[k]} below zero")
        crop = [max(0, -b) for b in begin]
        # what is left of each axis once both negative pads crop it: none where they overlap (a begin
        # of 3 and an end of -3 on an axis of 2 keep nothing, and the axis is all pad), never fewer
        kept = [max(0, d + min(b, 0) + min(e, 0)) for d, b, e in zip(data.shape, begin, end)]
        grow_b, grow_e = [max(0, b) for b in begin], [max(0, e) for e in end]
        out = c_strides(shape)
        base = sum(c * s for c, s in zip(crop, data.strides))
        if data.dtype.is_string:
            fill = cls.string_fill(node, args)
        else:
            fill = cls.fill_value(node, args, data) if mode == "constant" else b""
        if mode == "constant":
            pieces = [Piece(shape, out, 0, Fill(fill))]
            if all(kept):
                pieces.append(Piece(tuple(kept), out, sum(b * s for b, s in zip(grow_b, out)),
                                    load(0, kept, data.strides, base)))
            return [OutputPlan(cls.outputs[0], shape, data.dtype, pieces=pieces)]
        for k in range(r):
            if kept[k] == 0 and grow_b[k] + grow_e[k] > 0:
                raise OpError(f"{cls.label()}: mode {mode} cannot pad axis {k}: it has no elements "
                              f"{'after cropping' if data.shape[k] else '(length 0)'}; only constant mode can")
        if 0 in shape:
            return [OutputPlan(cls.outputs[0], shape, data.dtype, pieces=[])]
        per_axis = [segments(mode, kept[k], grow_b[k], grow_e[k]) for k in range(r)]
        pieces = []
        for combo in itertools.product(*per_axis):
            dims, dst, src = [], [], []
            dst_off, src_off = 0, base
            for k, (start, src_start, subaxes) in enumerate(combo):
                dst_off += start * out[k]
                src_off += src_start * data.strides[k]
                for count, dstep, sstep in subaxes:
                    dims.append(count)
                    dst.append(dstep * out[k])
                    src.append(sstep * data.strides[k])
            pieces.append(Piece(tuple(dims), tuple(dst), dst_off, load(0, dims, src, src_off)))
        return [OutputPlan(cls.outputs[0], shape, data.dtype, pieces=pieces)]

    @classmethod
    def string_fill(cls, node: Node, args: Sequence[Optional[Arg]]) -> bytes:
        return b""


def runs(mode: str, n: int, b: int, e: int) -> list[tuple[int, int, int, int, int, int]]:
    """The output axis as runs (dst start, length, src start, step, count,
    gap): the input itself, then the pads, each cut where the mode turns
    (edge: one run; wrap: at each period; reflect: at each end). A run with
    ``count`` > 1 repeats every ``gap`` entries: the whole periods of a pad
    are one such run per turn of the period, so the work (and the plan's
    memory) is a few runs whatever the pads -- never one per period."""
    out = [(b, n, 0, 1, 1, 0)]
    period = 0 if mode == "edge" or n == 1 else n if mode == "wrap" else 2 * (n - 1)
    for lo, hi in ((-b, 0), (n, n + e)):
        t = lo
        while t < hi:
            if period and t % period == 0 and hi - t >= 2 * period:  # whole periods: one repeated run per turn
                count = (hi - t) // period
                m = 0
                while m < period:
                    length, src, step = _turn(mode, n, period, m, period)
                    out.append((t + m + b, length, src, step if length > 1 else 0, count, period))
                    m += length
                t += count * period
                continue
            length, src, step = _turn(mode, n, period, t % period if period else t, hi - t)
            out.append((t + b, length, src, step if length > 1 else 0, 1, 0))
            t += length
    return out


def _turn(mode: str, n: int, period: int, m: int, room: int) -> tuple[int, int, int]:
    """The run (length, src start, step) at phase ``m`` of the period, at most ``room`` long."""
    if not period:  # edge, or an axis of one element: the end element, over and over
        length, src, step = room, (0 if m < 0 else n - 1), 0
    elif mode == "wrap":
        length, src, step = n - m, m, 1
    elif m < n:  # reflect: period 2(n - 1), up 0..n-1 then down n-2..1
        length, src, step = n - m, m, 1
    else:
        length, src, step = period - m, period - m, -1
    return min(length, room), src, step


def segments(mode: str, n: int, b: int, e: int) -> list[tuple[int, int, list[tuple[int, int, int]]]]:
    """Runs grouped: equal runs at equal spacing become one segment with a
    repeat axis. Each is (dst start, src start, [(count, dst step, src step), ...])."""
    if b == 0 and e == 0:
        return [(0, 0, [(n, 1, 1)])]
    groups: dict[tuple[int, int, int], list[int]] = {}
    out = []
    for start, length, src, step, count, gap in runs(mode, n, b, e):
        if count > 1:  # already a repeat
            out.append((start, src, [(count, gap, 0), (length, 1, step)]))
        else:
            groups.setdefault((length, src, step), []).append(start)
    for (length, src, step), starts in groups.items():
        i = 0
        while i < len(starts):
            j = i + 1
            if j < len(starts):
                gap = starts[j] - starts[i]
                while j + 1 < len(starts) and starts[j + 1] - starts[j] == gap:
                    j += 1
                count = j - i + 1
            else:
                gap, count = 0, 1
            inner = (length, 1, step)
            out.append((starts[i], src, [(count, gap, 0), inner] if count > 1 else [inner]))
            i += count
    return out


class Pad_2(Pad_1):
    since_version = 2
    attribute_names = ("pads", "mode", "value")
    pads_name = "pads"


class Pad_11(Pad_2):
    since_version = 11
    inputs = ("data", "pads", "constant_value")
    attribute_names = ("mode",)
    optional = ("mode", "constant_value")
    input_types = {"pads": "tensor(int64)"}
    constraints = {"tensor(int64)": ("int64",)}

    @classmethod
    def raw_pads(cls, node: Node, args: Sequence[Optional[Arg]]) -> list[int]:
        pads = args[1]
        assert pads is not None
        if len(pads.shape) != 1:
            raise OpError(f"{cls.label()}: pads must be 1-D, got shape {pads.shape}")
        return pads.ints(cls.label(), "pads")

    @classmethod
    def constant(cls, args: Sequence[Optional[Arg]]) -> Optional[Arg]:
        value = args[2] if len(args) > 2 else None
        if value is not None and value.size != 1:
            raise OpError(f"{cls.label()}: constant_value must be one element, got shape {value.shape}")
        return value

    @classmethod
    def fill_value(cls, node: Node, args: Sequence[Optional[Arg]], data: Arg) -> bytes:
        value = cls.constant(args)
        if value is None:
            return element_bytes(0, data.dtype)
        if data.dtype.is_packed:  # the element's own bits (float4 is no integer)
            raw = value.tensor.data.to_array()  # type: ignore[union-attr]
            return int(raw.reshape(-1)[0] & ((1 << data.dtype.bits) - 1)).to_bytes(4, "little")
        return element_bytes(value.values().reshape(-1)[0], data.dtype)

    @classmethod
    def string_fill(cls, node: Node, args: Sequence[Optional[Arg]]) -> bytes:
        value = cls.constant(args)
        if value is None:
            return b""
        return bytes(value.tensor.strings.reshape(-1)[0])  # type: ignore[union-attr]


class Pad_18(Pad_11):
    since_version = 18
    inputs = ("data", "pads", "constant_value", "axes")
    optional = ("mode", "constant_value", "axes")
    input_types = {"pads": "tensor(int64)", "axes": "Tind"}
    constraints = {"tensor(int64)": ("int64",), "Tind": ("int32", "int64")}

    @classmethod
    def axes_of(cls, node: Node, args: Sequence[Optional[Arg]], rank: int) -> list[int]:
        axes = args[3] if len(args) > 3 else None
        if axes is None:
            return list(range(rank))
        return cls.unique_axes(axes.ints(cls.label(), "axes"), rank, f"for an input of rank {rank}")


class Pad_19(Pad_18):
    since_version = 19
    modes = MODES + ("wrap",)


# opset -> the types that version added (onnx.defs' lists; tests/unit/test_opsets.py holds them to it)
TYPES = {
    1: ("float", "double", "float16"),
    11: ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
    13: ("bool", "complex64", "complex128", "string", "bfloat16"),
    21: FLOAT8 + ("int4", "uint4"),
    **LATE_TYPES,  # 23: float4e2m1, 24: float8e8m0, 25: int2 and uint2
}
VERSIONS = versions(TYPES, Pad_1, Pad_2, Pad_11, Pad_18, Pad_19)

SPEC = OpSpec(
    "Pad",
    VERSIONS,
    (
        Param("pads", "tensor", "Comma-separated begins then ends for each padded axis; negative crops "
              "(a list or an int64 tensor file).", "0,1,0,1"),
        Param("mode", "str", "constant (default), reflect, edge or wrap (opset 19+).", "reflect",
              choices=("constant", "reflect", "edge", "wrap")),
        Param("constant_value", "tensor", "The fill of constant mode, of the data's type (opset 11+; default 0; "
              "nan, -0.0 and a tensor file keep their bits).", "nan"),
        Param("axes", "tensor", "The axes --pads applies to (opset 18+; default all).", "1,2"),
        Param("paddings", "ints", "Begins then ends for each axis (opset 1 only).", "0,1,0,1"),
        Param("value", "float", "The fill of constant mode (opset 1 to 10).", "0.5"),
    ),
    summary="Pad or crop tensors at both ends of each axis (ONNX Pad).",
    description="Pad each input: --pads begins then ends per axis (negative crops), in --mode constant, "
    "reflect, edge or wrap, through the GPU pieces kernel.",
    example="onnxop pad x.npy --pads 0,1,0,1 --mode reflect",
)
