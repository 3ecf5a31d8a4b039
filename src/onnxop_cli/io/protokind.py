""".pb files that hold no TensorProto: an ONNX optional or sequence.

ONNX's node tests store an optional input as a serialized ``OptionalProto``
and a sequence as a ``SequenceProto``. Parsed as a TensorProto -- protobuf
parses any message as any other -- the name (field 1) becomes the dims, as
the ASCII codes of its letters, and the value (field 3) a "segment". So a
TensorProto with a segment, or with no name and dims that spell text, is
parsed again as what it likely is, and named: an optional (one value, or
none) or a sequence (of how many). The bytes cannot tell an optional that
holds one tensor from a sequence of one: the node test's model can, when
the file sits in its ``test_data_set_N/`` folder, and is asked.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

ELEM = {0: "values", 1: "tensors", 2: "sparse tensors", 3: "sequences", 4: "maps", 5: "optionals"}
ONE = {0: "a value", 1: "a tensor", 2: "a sparse tensor", 3: "a sequence", 4: "a map", 5: "an optional"}


def suspicious(proto) -> bool:
    """Whether this TensorProto is more likely another message."""
    dims = list(proto.dims)
    spelled = bool(dims) and all(32 <= d < 127 for d in dims)
    if proto.HasField("segment"):  # a real segmented tensor has dims of its own
        return not dims or spelled
    has_data = proto.HasField("raw_data") or any(len(getattr(proto, f)) for f in (
        "float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data"))
    return not proto.name and spelled and not has_data


def describe(data: bytes, label: str, path: Optional[Path] = None, segment: bool = True) -> Optional[str]:
    """The message for ``data`` when it is an optional or a sequence, else None
    (``segment``: the TensorProto reading found a value in field 3; without
    one, only a name -- field 1 as text -- says it is another message)."""
    import onnx
    from google.protobuf.message import DecodeError

    seq = onnx.SequenceProto()
    try:
        seq.ParseFromString(bytes(data))
    except (DecodeError, RuntimeError, ValueError):
        return None
    if isinstance(seq.name, bytes) or not seq.name.isprintable() or seq.elem_type not in ELEM:
        return None  # (a real segmented tensor's dims make no printable name)
    if not segment and not seq.name:
        return None
    name = f" {seq.name!r}" if seq.name else ""
    values = len(seq.tensor_values) + len(seq.sparse_tensor_values) + len(seq.sequence_values) + len(seq.map_values)
    values += len(seq.optional_values)
    kind = _declared(path) if path is not None else None
    if kind == "optional" or (kind is None and values <= 1):
        what = "an optional" if kind else "an optional (or a sequence of at most one)"
        held = "holding no value" if values == 0 else f"holding {ONE[seq.elem_type]}"
        what = f"{what}{name} {held}"
    else:
        what = f"a sequence{name} of {values} {ELEM[seq.elem_type]}"
    return (f"{label}: holds {what} (an ONNX OptionalProto or SequenceProto), not a tensor; "
            "onnxop reads one TensorProto per .pb")


def _declared(path: Path) -> Optional[str]:
    """What the node test's model declares for ``input_N.pb``/``output_N.pb``:
    "optional", "sequence", or None when there is no model to ask."""
    found = re.fullmatch(r"(input|output)_(\d+)\.pb", path.name)
    model_path = path.parent.parent / "model.onnx"
    if not found or not model_path.is_file():
        return None
    try:
        from ..core.onnx_lazy import load_model

        graph = load_model(str(model_path)).graph
        declared = graph.input if found.group(1) == "input" else graph.output
        initializers = {t.name for t in graph.initializer}
        declared = [v for v in declared if v.name not in initializers]
        kind = declared[int(found.group(2))].type.WhichOneof("value")
    except Exception:  # noqa: BLE001 - only a better message is at stake
        return None
    return {"optional_type": "optional", "sequence_type": "sequence"}.get(kind)
