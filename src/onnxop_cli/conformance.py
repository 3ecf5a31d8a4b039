"""``onnxop conformance``: run ONNX backend node-test folders through onnxop.

A node test is a folder holding ``model.onnx`` (one node) and
``test_data_set_*/input_*.pb`` / ``output_*.pb``, as onnx's backend test
generator writes them. The operator, its attributes, the axes input and the
opset are taken from the model; every data set's inputs go through the same
path ``onnxop flatten`` / ``unsqueeze`` take (the GPU kernels), and the output
must equal ``output_0.pb`` exactly: shape, type and every bit (ONNX's own
runner allows a tolerance; a copy needs none).

Models with another operator, or more than one node, are skipped with the
reason. Any other problem with a case fails that case, not the run.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import OnnxopError, UsageError

MODEL = "model.onnx"
RUNS = ("Flatten", "Unsqueeze")
ONNX_DOMAINS = ("", "ai.onnx")


@dataclass(frozen=True)
class CaseResult:
    name: str
    operator: str | None  # "Flatten-25", or the op type of a skipped model; None: not read
    opset: int | None  # None: the model was not read that far
    data_sets: int | None  # None: skipped, or failed before the data sets were counted
    status: str  # "passed", "failed" or "skipped"
    detail: str = ""


class Skip(Exception):
    """The case is not one onnxop runs."""


class Fail(Exception):
    """The case ran (or could not) and does not match."""


def find_cases(dirs: list[Path]) -> list[tuple[Path, str]]:
    """(folder, display name) of every node test in or under ``dirs``, sorted
    per argument. Symlinked folders are not followed."""
    cases: list[tuple[Path, str]] = []
    for top in dirs:
        top = Path(top)
        if not top.exists():
            raise UsageError(f"{top}: no such folder")
        if not top.is_dir():
            raise UsageError(f"{top}: not a folder (give a node-test folder or a folder of them)")
        if (top / MODEL).is_file():
            cases.append((top, top.name or str(top)))
            continue
        found = []
        for root, subdirs, files in os.walk(top, followlinks=False):
            subdirs.sort()
            if MODEL in files:
                found.append(Path(root))
                subdirs[:] = []  # a test folder's own sub-folders are its data sets
        if not found:
            raise UsageError(f"{top}: no ONNX node tests found (folders holding {MODEL})")
        cases += [(p, p.relative_to(top).as_posix()) for p in sorted(found)]
    return cases


def run_all(dirs: list[Path], backend: str | None = None) -> list[CaseResult]:
    return [run_case(folder, name, backend) for folder, name in find_cases(dirs)]


def run_case(folder: Path, name: str, backend: str | None = None) -> CaseResult:
    from .ops import op_version

    operator, opset, sets, current = None, None, None, ""
    try:
        model = _load_model(folder / MODEL)
        op_type, opset_value, node_proto = _the_node(model)
        operator, opset = op_type, opset_value
        op = op_version(op_type, opset_value)
        operator = f"{op.op_type}-{op.since_version}"
        data_sets = sorted(
            (p for p in folder.iterdir() if p.is_dir() and p.name.startswith("test_data_set_")),
            key=lambda p: _index(p.name),
        )
        if not data_sets:
            raise Fail("no test_data_set_* folders")
        sets = len(data_sets)
        for data_set in data_sets:
            current = data_set.name
            _run_data_set(model, node_proto, opset_value, data_set, backend)
        current = ""
        return CaseResult(name, operator, opset, sets, "passed")
    except Skip as e:
        return CaseResult(name, operator, opset, None, "skipped", str(e))
    except (Fail, OnnxopError) as e:
        where = f"{current}: " if current else ""
        return CaseResult(name, operator, opset, sets, "failed", f"{where}{e}")


def _index(name: str) -> int:
    m = re.search(r"(\d+)$", name)
    return int(m.group(1)) if m else -1


def _load_model(path: Path):
    import onnx

    try:
        return onnx.load(str(path), load_external_data=False)
    except Exception as e:  # noqa: BLE001 - protobuf raises several kinds
        raise Fail(f"{MODEL} cannot be read: {' '.join(str(e).split())[:200]}") from None


def _the_node(model):
    """The single Flatten/Unsqueeze node and the ai.onnx opset, or Skip/Fail."""
    from .ops import LATEST_OPSET

    nodes = list(model.graph.node)
    if len(nodes) != 1:
        kinds = ", ".join(sorted({n.op_type for n in nodes})) or "none"
        raise Skip(f"{len(nodes)} nodes ({kinds}); onnxop runs single-node {' and '.join(RUNS)} models")
    node = nodes[0]
    if node.domain not in ONNX_DOMAINS or node.op_type not in RUNS:
        where = f"{node.domain}." if node.domain not in ONNX_DOMAINS else ""
        raise Skip(f"operator {where}{node.op_type}; onnxop runs {' and '.join(RUNS)}")
    opsets = [o.version for o in model.opset_import if o.domain in ONNX_DOMAINS]
    if not opsets:
        raise Fail("the model imports no ai.onnx opset")
    opset = int(opsets[0])
    if opset > LATEST_OPSET:
        raise Skip(f"opset {opset} is newer than onnxop knows ({LATEST_OPSET})")
    return node.op_type, opset, node


def _run_data_set(model, node_proto, opset: int, data_set: Path, backend: str | None) -> None:
    """Run one data set; raises Fail (or an OnnxopError) if it does not match."""
    from . import core
    from .io.tensorproto import read_pb

    inputs = _named_files(model, data_set, "input", _graph_inputs(model))
    outputs = _named_files(model, data_set, "output", [o.name for o in model.graph.output])
    node = _build_node(node_proto, opset, inputs, model, data_set)
    data_name = node_proto.input[0]
    if data_name not in inputs:
        raise Fail(f"no input file for {data_name!r}")
    if not node_proto.output or node_proto.output[0] not in outputs:
        raise Fail("no output_*.pb for the node's output")
    tensor = read_pb(inputs[data_name])
    expected = read_pb(outputs[node_proto.output[0]])
    result = core.apply(node, tensor, backend=backend)
    _compare(result.output, expected, node_proto.output[0])


def _graph_inputs(model) -> list[str]:
    initialized = {t.name for t in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in initialized]


def _named_files(model, data_set: Path, kind: str, names: list[str]) -> dict[str, Path]:
    """``input_3.pb`` -> the graph's fourth input name, and so on."""
    files = {}
    for path in data_set.glob(f"{kind}_*.pb"):
        i = _index(path.stem)
        if 0 <= i < len(names):
            files[names[i]] = path
    return files


def _build_node(node_proto, opset: int, inputs: dict[str, Path], model, data_set: Path):
    from onnx import helper

    from .ops import flatten_node, op_version, unsqueeze_node

    attrs = {a.name: helper.get_attribute_value(a) for a in node_proto.attribute}
    op = op_version(node_proto.op_type, opset)
    known = {"Flatten": {"axis"}, "Unsqueeze": set() if getattr(op, "axes_is_input", False) else {"axes"}}
    unknown = sorted(set(attrs) - known[node_proto.op_type])
    if unknown:
        raise Fail(f"unknown attribute {unknown[0]!r} for {op.op_type}-{op.since_version}")
    if node_proto.op_type == "Flatten":
        return flatten_node(attrs.get("axis"), opset)
    if not op.axes_is_input:
        if "axes" not in attrs:
            raise Fail(f"{op.op_type}-{op.since_version} needs an axes attribute")
        return unsqueeze_node(list(attrs["axes"]), opset)
    if len(node_proto.input) < 2 or not node_proto.input[1]:
        raise Fail(f"{op.op_type}-{op.since_version} needs an axes input")
    return unsqueeze_node(_axes_input(node_proto.input[1], inputs, model, data_set), opset)


def _axes_input(name: str, inputs: dict[str, Path], model, data_set: Path) -> list[int]:
    from .io.tensorproto import read_pb, tensor_from_proto

    if name in inputs:
        axes = read_pb(inputs[name])
    else:
        init = [t for t in model.graph.initializer if t.name == name]
        if not init:
            raise Fail(f"axes input {name!r} has no data (no input file, no initializer)")
        axes = tensor_from_proto(init[0], data_set.parent, f"initializer {name!r}", name)
    if axes.dtype.name != "int64" or axes.rank > 1:
        raise Fail(f"axes must be a 1-D int64 tensor, got shape {axes.shape} of {axes.dtype}")
    return [int(a) for a in axes.to_numpy().reshape(-1)]


def _compare(actual, expected, name: str) -> None:
    """Equal shape, type and bits (NaN payloads and -0.0 included)."""
    import numpy as np

    if actual.shape != expected.shape:
        raise Fail(f"shape {actual.shape} != expected {expected.shape}")
    if actual.dtype is not expected.dtype:
        raise Fail(f"type {actual.dtype} != expected {expected.dtype}")
    if actual.dtype.is_string:
        got, want = actual.strings.reshape(-1), expected.strings.reshape(-1)
        diff = [i for i, (a, b) in enumerate(zip(got, want)) if a != b]
    else:
        bits = f"u{max(actual.dtype.itemsize, 1)}" if actual.dtype.itemsize in (1, 2, 4, 8) else None
        got_values, want_values = actual.to_numpy().reshape(-1), expected.to_numpy().reshape(-1)
        if bits is not None:
            got, want = got_values.view(bits), want_values.view(bits)
        else:  # complex128: compare as pairs of 64-bit words
            got, want = got_values.view("u8").reshape(-1, 2), want_values.view("u8").reshape(-1, 2)
        mismatch = got != want
        diff = list(np.flatnonzero(mismatch if mismatch.ndim == 1 else mismatch.any(axis=1)))
    if diff:
        from .render import format_values

        where = np.unravel_index(int(diff[0]), actual.shape)
        at = f"{name}[{', '.join(str(int(i)) for i in where)}]"
        got, want = (format_values(t.to_numpy()[where]) for t in (actual, expected))
        raise Fail(f"{len(diff)} of {actual.size} elements differ; first {at} = {got}, expected {want}")


def render(results: list[CaseResult], *, terminal: bool | None = None) -> str:
    """The table (tables.py: rich on a terminal, plain when piped) and the
    ``N passed, M failed, K skipped`` line; a value not known is ``-``."""
    from . import tables

    header = ["case", "operator", "opset", "data sets", "result"]
    rows = [
        [r.name, _cell(r.operator), _cell(r.opset), _cell(r.data_sets), r.status + (f": {r.detail}" if r.detail else "")]
        for r in results
    ]
    cols = tables.columns(header, names=("case", "operator"), right=("opset", "data sets"), status=("result",))
    return tables.render(cols, rows, terminal=terminal) + "\n" + summary(results)


def _cell(value: object) -> str:
    return "-" if value is None else str(value)


def summary(results: list[CaseResult]) -> str:
    count = {s: sum(r.status == s for r in results) for s in ("passed", "failed", "skipped")}
    return f"{count['passed']} passed, {count['failed']} failed, {count['skipped']} skipped"
