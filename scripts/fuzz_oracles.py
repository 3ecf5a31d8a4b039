"""What scripts/fuzz_ops.py compares onnxop's outputs with: onnx.reference's
outputs on the same values, and where onnx.reference computes what is a copy,
or differs from the spec, the second opinions -- the elements copied (found by
running it on position labels), Expand spelled as Where, an own-type cast's
input, onnxruntime's outputs."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

def same_bits(want, got) -> str | None:
    """None when ``got`` has ``want``'s shape, dtype and bits (NaN payloads, -0.0; strings equal); else what
    differs. Its own (not onnxop_cli.backend's assert_same_bits, whose messages it keeps): the oracle
    borrows nothing from src/."""
    got = list(got)
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if not isinstance(g, np.ndarray):
            return f"output {i} is a {type(g).__name__}"
        if g.shape != w.shape:
            return f"output {i}: shape {g.shape}, expected {w.shape}"
        if g.dtype != w.dtype:
            return f"output {i}: dtype {g.dtype}, expected {w.dtype}"
        if w.dtype == object:
            same = [a == b for a, b in zip(g.reshape(-1), w.reshape(-1))]
            if not all(same):
                return f"output {i}: element {same.index(False)} differs"
            continue
        if not g.size:
            continue
        gb, wb = (np.ascontiguousarray(a).view(np.uint8).reshape(a.size, -1) for a in (g, w))
        differ = np.flatnonzero((gb != wb).any(axis=1))
        if differ.size:
            return (f"output {i}: {differ.size} of {g.size} elements differ in their bits; first at flat index "
                    f"{differ[0]}: {g.reshape(-1)[differ[0]]!r}, expected {w.reshape(-1)[differ[0]]!r}")
    return None


def reference(model: onnx.ModelProto, inputs: list) -> list | None:
    names = [i.name for i in model.graph.input]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = [np.asarray(x) for x in ReferenceEvaluator(model).run(None, dict(zip(names, inputs)))]
    except Exception:  # a case onnx.reference cannot run is no evidence either way
        return None
    if any(x.dtype == object and not all(isinstance(v, str) for v in x.reshape(-1)) for x in found):
        return None  # strings mixed with numbers: onnx.reference's Triu writes a 0 for a string's zero
    return [native(x) for x in found]


def onnxruntime_outputs(model: onnx.ModelProto, inputs: list) -> list | None:
    """onnxruntime's CPU outputs, the second opinion where onnx.reference differs from the spec (it computes
    Expand as data * ones, quieting a signalling NaN, and Resize's nearest mode as weights times values)."""
    try:
        import onnxruntime

        session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        names = [i.name for i in model.graph.input]
        return [native(np.asarray(x)) for x in session.run(None, dict(zip(names, inputs)))]
    except Exception:  # noqa: BLE001 (no kernel for the type, or no onnxruntime)
        return None


# operators each of whose output elements is one of the data's or a zero fill (Pad's default constant)
COPIES = {"Expand", "Resize", "Transpose", "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Slice", "Identity", "Tile",
          "Concat", "Pad", "Gather", "Where", "ReverseSequence", "Split", "DepthToSpace", "SpaceToDepth"}


def copied_outputs(model: onnx.ModelProto, inputs: list) -> list | None:
    """Where onnx.reference (or onnxruntime) computes what is a copy -- Expand as data * ones, Resize's
    nearest mode as weights times values: a signalling NaN quieted, -0.0 lost, a 64-bit integer rounded
    through float64 -- the outputs as the elements of the data that the reference's output takes, found
    by running it on the data's flat positions + 1 as float64 (exact), 0 standing for a zero fill.
    For graphs of one data input (the others initializers or indices) and such operators only."""
    nodes = model.graph.node
    if any(n.op_type not in COPIES or "linear" in str(n.attribute) or "cubic" in str(n.attribute)
           or (n.op_type == "Pad" and len(n.input) > 2 and n.input[2]) for n in nodes):
        return None
    data_name = nodes[0].input[0]
    names = [i.name for i in model.graph.input]
    if data_name not in names:
        return None
    p = names.index(data_name)
    labelled = onnx.ModelProto()
    labelled.CopyFrom(model)
    labelled.graph.input[p].type.tensor_type.elem_type = onnx.TensorProto.DOUBLE
    for o in labelled.graph.output:
        o.type.tensor_type.elem_type = onnx.TensorProto.DOUBLE
    data = inputs[p]
    others = set(names) - {data_name}
    if data.dtype == object or any(n.op_type in ("Concat", "Where") and others & set(n.input) for n in nodes):
        return None  # (a second source of elements)
    labels = list(inputs)
    labels[p] = np.arange(1, data.size + 1, dtype=np.float64).reshape(data.shape)
    found = reference(labelled, labels)
    if found is None:
        return None
    flat = np.concatenate([np.zeros(1, data.dtype), np.ascontiguousarray(data).reshape(-1)])
    return [flat[f.astype(np.int64)] for f in found]


def expand_as_where(model: onnx.ModelProto) -> onnx.ModelProto | None:
    """``model`` with each Expand of a constant shape spelled Where(true, x, x) with a condition of that
    shape: the same broadcast, which onnx.reference computes as a copy (np.where), so a signalling NaN
    that goes on through a Cast stays one. None when there is no such Expand."""
    inits = {t.name: t for t in model.graph.initializer}
    nodes = model.graph.node
    if not any(n.op_type == "Expand" and n.input[1] in inits for n in nodes):
        return None
    spelled = onnx.ModelProto()
    spelled.CopyFrom(model)
    for k, n in enumerate(spelled.graph.node):
        if n.op_type == "Expand" and n.input[1] in inits:
            shape = [int(d) for d in numpy_helper.to_array(inits[n.input[1]])]
            cond = numpy_helper.from_array(np.ones(shape, dtype=bool), f"{n.output[0]}_as_where")
            spelled.graph.initializer.append(cond)
            where = helper.make_node("Where", [cond.name, n.input[0], n.input[0]], list(n.output))
            spelled.graph.node[k].CopyFrom(where)
    return spelled


def native(x: np.ndarray) -> np.ndarray:
    """``x``'s values in C order, native byte order (what onnxop returns; BitCast of a big-endian array in
    onnx.reference would reinterpret its bytes as they lie), strings as objects."""
    if x.dtype.kind in "US":
        return x.astype(object)
    return np.array(x, dtype=x.dtype.newbyteorder("=") if x.dtype.byteorder in "<>" else x.dtype, order="C")


def own_type_cast(model, inputs, got) -> bool:
    """A Cast (CastLike) to the input's own type is the input: onnx.reference casts float8 through float32,
    turning a NaN's payload into its canonical one."""
    node = model.graph.node[0]
    return (len(model.graph.node) == 1 and node.op_type in ("Cast", "CastLike") and len(got) == 1
            and got[0].dtype == inputs[0].dtype and same_bits([native(inputs[0])], got) is None)
