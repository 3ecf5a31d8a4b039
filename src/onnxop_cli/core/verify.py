"""``run --verify``: each node onnxop ran, run again on onnxruntime's CPU
provider (onnx.reference where onnxruntime has no kernel for it or its
types) on the same inputs, and compared bit for bit: NaN payloads and -0.0
count; where onnxruntime differs, onnx.reference (the semantics onnxop
answers to) decides. The first divergence stops the run, naming the node, the output, the
first element that differs and both values' bytes.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..errors import Mismatch, OnnxopError
from .partition import ONNXOP, Region, kind, place_name

if TYPE_CHECKING:
    from .tensor import Tensor


class Diverged(Mismatch):
    """A node onnxop ran gave other bits than the other runtime."""


class Verifier:
    """Called after each region (core/others.py run's ``inspect``)."""

    def __init__(self, opsets, ir_version: int, folder: Path = Path(".")) -> None:
        self.opsets, self.ir_version = list(opsets), ir_version
        self.folder = folder  # the model's: a Constant's value in external data is read from there
        self.by: Counter = Counter()  # (operator, runtime that agreed) -> nodes
        # where onnxruntime differed and onnx.reference agreed: onnxruntime's first difference on each
        # such node, told with the summary (the run's outputs can differ from onnxruntime's own run)
        self.differs: list[str] = []

    def __call__(self, region: Region, value: Callable[[str], Tensor]) -> None:
        if region.runtime != ONNXOP:
            return
        for k, node in enumerate(region.nodes):
            label = _label(node, region.places[len(region.copies) + k] if region.places else None)
            ins = {n: value(n) for n in node.input if n}
            outs = [n for n in node.output if n]
            made, by = self._again(node, label, ins, outs)
            try:
                _all_same(label, outs, value, made, by)
            except Diverged as first:
                if by != "onnxruntime":
                    raise
                # onnxruntime reads a few edge cases its own way (a Slice's end of INT64_MAX under a
                # negative step is numpy's None there, not ONNX's clamp): onnx.reference, the semantics
                # onnxop answers to, decides; where it differs too, onnxruntime's difference is told
                try:
                    made, by = self._again(node, label, ins, outs, reference=True)
                    _all_same(label, outs, value, made, by)
                except OnnxopError:
                    raise first from None
                self.differs.append(str(first).removeprefix("--verify: "))
            self.by[(kind(node), by)] += 1

    def _again(self, node, label: str, ins: dict[str, Tensor], outs: list[str], reference: bool = False):
        from onnx import ModelProto, helper

        from . import other_common, other_onnxruntime
        from .others import inlined, typed_input

        alone = _all_named(inlined(node, self.folder), {*ins, *outs})
        g = helper.make_graph([alone], "node", [typed_input(n, t) for n, t in ins.items()],
                              [helper.make_empty_tensor_value_info(n) for n in outs])
        m = ModelProto(ir_version=self.ir_version, graph=g)
        m.opset_import.extend(self.opsets)
        made = None
        if not reference:
            try:
                made = other_onnxruntime.run_tensors(m, outs, ins)
                by = "onnxruntime"
            except OnnxopError:
                raise
            except Exception:  # noqa: BLE001 - no kernel for this operator or type: the reference runs it
                pass
        if made is None:
            try:
                made = _reference(m).run(outs, other_common.as_arrays(ins))
            except Exception as e:  # noqa: BLE001
                raise OnnxopError(f"--verify: {label}: neither onnxruntime nor "
                                  f"onnx.reference runs it: {other_common.first_line(e)}") from None
            by = "onnx.reference"
        return list(other_common.as_tensors(outs, made, label).values()), by

    def summary(self) -> list[dict]:
        return [{"op": op, "runtime": by, "nodes": n} for (op, by), n in sorted(self.by.items())]


def _reference(m):
    """onnx.reference's evaluator of ``m``, where it departs from ONNX's spec on a node onnxop runs
    corrected, so that it does not call onnxop's right bytes a divergence where onnxruntime has no
    kernel for the type (bfloat16, float8): a Slice under a negative step clamps its start to
    [0, dim - 1] and its end to [-1, dim - 1] (numpy's slicing, which onnx.reference uses, makes
    x[-3:-3:-1] of two elements empty where ONNX takes x[0]), and Expand, OneHot and Resize's
    nearest mode copy their values (onnx.reference computes them: Expand as data * ones, quieting a
    signalling NaN, OneHot as hot * (on - off) + off, which makes -0.0 off values 0.0, every off value
    NaN where the on value is, and fails on bool values; Resize as weights times values, so a NaN
    reaches its neighbours and -0.0 is 0.0: it runs on the elements' labels, 1 to n in float64, exact,
    and each output takes the element its label names). A Squeeze given an empty axes tensor drops
    every size-1 axis, as onnxruntime and onnxop read it (docs/cli-details.md), where onnx.reference
    drops none. Shape's start and end are clamped to [0, rank] after a negative one has rank added, as
    ONNX says (onnx.reference's Shape-15 slices to rank + end, which below -rank counts from the back
    again: a rank-3 input's end of -5 kept one dimension). A Cast (CastLike) to its input's own type is its input (onnx.reference casts a float8
    through float32, turning a NaN's payload into its canonical one). Resize's labels take strings
    too, and Scatter, which onnx.reference has no implementation of, is its ScatterElements. numpy's
    warnings stay quiet."""
    import warnings

    import numpy as np
    from onnx.reference import ReferenceEvaluator
    from onnx.reference.op_run import OpRun

    class Expand(OpRun):
        def _run(self, data, shape):
            return (np.broadcast_to(data, np.broadcast_shapes(data.shape, tuple(int(d) for d in shape))).copy(),)

    class Slice(OpRun):
        def _run(self, data, starts, ends, axes=None, steps=None):
            axes = range(len(starts)) if axes is None else [int(a) % data.ndim for a in axes]
            steps = [1] * len(starts) if steps is None else steps
            out = data
            for a, s, e, step in zip(axes, starts, ends, steps):
                n, s, e, step = data.shape[a], int(s), int(e), int(step)
                s, e = s + n if s < 0 else s, e + n if e < 0 else e
                s, e = (min(max(s, 0), n), min(max(e, 0), n)) if step > 0 else \
                    (min(max(s, 0), n - 1), min(max(e, -1), n - 1))
                out = np.take(out, np.arange(s, e, step, dtype=np.int64), axis=a)
            return (out,)

    class OneHot(OpRun):
        def _run(self, indices, depth, values, axis=None):
            from onnx.reference.ops.op_one_hot import _one_hot

            hot = _one_hot(indices, depth, axis=axis, dtype=np.bool_)
            return (np.where(hot, values[1], values[0]).astype(values.dtype),)

    from onnx.reference.ops.op_resize import Resize as Computed

    class Resize(Computed):
        def _run(self, X, *args, **kw):
            if kw.get("mode") != "nearest" or kw.get("coordinate_transformation_mode") == "tf_crop_and_resize" \
                    or not X.size:
                return super()._run(X, *args, **kw)
            at = super()._run(np.arange(1, X.size + 1, dtype=np.float64).reshape(X.shape), *args, **kw)[0]
            return (X.reshape(-1)[at.astype(np.int64) - 1],)  # each element's source, by its label

    from onnx.reference.ops.op_scatter_elements import ScatterElements

    class Scatter(ScatterElements):  # Scatter-9 and -11, deprecated: ScatterElements by its old name
        def _run(self, data, indices, updates, axis=None):
            return super()._run(data, indices, updates, axis=axis)

    class Squeeze(OpRun):
        def _run(self, data, axes=None):
            return (np.squeeze(data, axis=tuple(int(a) for a in axes) if len(axes) else None),)

    class Shape(OpRun):
        def _run(self, data, end=None, start=None):
            n = data.ndim
            s, e = (min(max(v + n if v < 0 else v, 0), n) for v in (start or 0, n if end is None else end))
            return (np.array(data.shape[s:e], dtype=np.int64),)

    node = m.graph.node[0]
    types = {v.name: v.type.tensor_type.elem_type for v in m.graph.input}
    to = next((a.i for a in node.attribute if a.name == "to"), None) if node.op_type == "Cast" else \
        types.get(node.input[1]) if node.op_type == "CastLike" and len(node.input) > 1 else None
    if to is not None and to == types.get(node.input[0]):  # a cast to its own type is its input

        class Same:
            def run(self, outs, feeds):
                return [feeds[node.input[0]]]

        return Same()
    by_input = len(node.input) > 1 and node.input[1] != ""  # (Slice-1's starts, Squeeze-1's axes: attributes)
    fixed = [Expand, OneHot, Resize, Scatter, Shape] + ([Slice, Squeeze] if by_input else [])

    class Quiet:
        def run(self, *args):
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                return ReferenceEvaluator(m, new_ops=fixed).run(*args)

    return Quiet()


def _all_named(node, taken: set[str]):
    """The node with a name of its own for each output it leaves out (''): onnxruntime's
    Split (1.32) dereferences an omitted output and the process dies (SIGSEGV), where
    onnxop and onnx.reference make the parts and drop the unnamed ones. onnxop's
    operators make each output alike whether it is named or not."""
    if all(node.output):
        return node
    from onnx import NodeProto

    named = NodeProto()
    named.CopyFrom(node)
    for k, out in enumerate(named.output):
        if not out:
            fresh = f"unnamed_{k}"
            while fresh in taken:
                fresh += "_"
            named.output[k] = fresh
            taken.add(fresh)
    return named


def _label(node, place: int | None) -> str:
    """``node 3 'tr' (Transpose)``: its index in the model (in its If branch, for a branch's), its name
    where it has one, its operator."""
    return f"node {place_name(node, place)} ({kind(node)})"


def _all_same(label: str, outs: list[str], value: Callable[[str], Tensor], made: list, by: str) -> None:
    for n, theirs in zip(outs, made):
        _same(label, n, value(n), theirs, by)


def _same(label: str, name: str, ours: Tensor, theirs: Tensor, by: str) -> None:
    import numpy as np

    where = f"--verify: {label} output {name!r}"
    if tuple(ours.shape) != tuple(theirs.shape) or ours.dtype is not theirs.dtype:
        raise Diverged(f"{where}: onnxop made {tuple(ours.shape)} {ours.dtype}, "
                       f"{by} {tuple(theirs.shape)} {theirs.dtype}")
    if ours.size == 0:  # nothing to differ (an empty Constant: Resize's unused roi)
        return
    if ours.dtype.is_string:
        a, b = ours.strings.reshape(-1), theirs.strings.reshape(-1)
        diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        first = diff[0] if diff else None
        shown = (lambda s, i: repr(bytes(s.strings.reshape(-1)[i])))
    else:
        a, b = _elements(ours), _elements(theirs)
        diff = np.flatnonzero((a != b).reshape(a.shape[0], -1).any(axis=1))
        first = int(diff[0]) if len(diff) else None
        shown = (lambda t, i: "0x" + _elements(t)[i].tobytes()[::-1].hex())
    if first is None:
        return
    at = ", ".join(str(int(i)) for i in np.unravel_index(first, ours.shape))
    raise Diverged(f"{where}: {len(diff)} of {ours.size} elements differ; first [{at}]: "
                   f"onnxop {shown(ours, first)}, {by} {shown(theirs, first)}")


def _elements(t: Tensor):
    """One row of bytes per element (sub-byte types: one element per byte)."""
    import numpy as np

    a = np.ascontiguousarray(t.to_numpy()).reshape(-1)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return a.view(np.uint8).reshape(a.size, -1) if a.size else a.view(np.uint8).reshape(0, 1)
