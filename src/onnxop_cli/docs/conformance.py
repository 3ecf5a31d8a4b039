"""``onnxop conformance``: run ONNX backend node-test folders through onnxop.

A node test is a folder holding ``model.onnx`` (one node) and
``test_data_set_*/input_*.pb`` / ``output_*.pb``, as onnx's backend test
generator writes them. The operator, its attributes, its constant inputs and
the opset are taken from the model (``ops/model.py``); every data set's inputs go
through the same path the operator commands take (the GPU kernels), and the
output must equal ``output_0.pb`` exactly: shape, type and every bit (ONNX's
own runner allows a tolerance; moving bytes needs none).

With no folder, onnx's own node tests of every operator onnxop runs are built
from the installed onnx package into a temporary folder (``nodetests.py``)
and run. Models with another operator, more than one node, or inputs that are
not tensors are skipped with the reason. Any other problem with a case fails
that case, not the run.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import OnnxopError, UsageError

MODEL = "model.onnx"


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
    """The cases in ``dirs``; with none, onnx's node tests of onnxop's operators."""
    if not dirs:
        import tempfile

        from .nodetests import write_all

        with tempfile.TemporaryDirectory(prefix="onnxop-node-tests-") as folder:
            write_all(Path(folder))
            return [run_case(path, name, backend) for path, name in find_cases([Path(folder)])]
    return [run_case(folder, name, backend) for folder, name in find_cases(dirs)]


def run_case(folder: Path, name: str, backend: str | None = None) -> CaseResult:
    from ..ops import model as onnx_model
    from ..ops import op_version

    operator, opset, sets, current = None, None, None, ""
    try:
        model = _load_model(folder / MODEL)
        node_proto, opset_value = onnx_model.the_node(model)
        operator, opset = node_proto.op_type, opset_value
        op = op_version(node_proto.op_type, opset_value)
        operator = f"{op.op_type}-{op.since_version}"
        kinds = {v.type.WhichOneof("value") for v in (*model.graph.input, *model.graph.output)}
        if kinds - {"tensor_type"}:
            raise Skip(f"{', '.join(sorted(kinds - {'tensor_type'}))} values; onnxop runs tensors")
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
    except onnx_model.Unsupported as e:
        return CaseResult(name, operator, opset, sets, "skipped", str(e))
    except Skip as e:
        return CaseResult(name, operator, opset, None, "skipped", str(e))
    except (Fail, OnnxopError) as e:
        where = f"{current}: " if current else ""
        return CaseResult(name, operator, opset, sets, "failed", f"{where}{e}")
    except Exception as e:  # noqa: BLE001 - one bad folder fails its case, never the whole run
        where = f"{current}: " if current else ""
        detail = f"{where}internal error: {type(e).__name__}: {' '.join(str(e).split())[:200]}"
        return CaseResult(name, operator, opset, sets, "failed", detail)


def _index(name: str) -> int:
    m = re.search(r"(\d+)$", name)
    return int(m.group(1)) if m else -1


def _load_model(path: Path):
    import onnx

    try:
        return onnx.load(str(path), load_external_data=False)
    except Exception as e:  # noqa: BLE001 - protobuf raises several kinds
        raise Fail(f"{MODEL} cannot be read: {' '.join(str(e).split())[:200]}") from None


def _run_data_set(model, node_proto, opset: int, data_set: Path, backend: str | None) -> None:
    """Run one data set; raises Fail (or an OnnxopError) if it does not match."""
    from ..core import apply as core
    from ..ops import model as onnx_model
    from ..io.tensorproto import read_pb

    inputs = _named_files(model, data_set, "input", onnx_model.graph_inputs(model))
    outputs = _named_files(model, data_set, "output", [o.name for o in model.graph.output])

    def constant(name: str):
        if name in inputs:
            return read_pb(inputs[name])
        found = onnx_model.initializer(model, name, data_set.parent)
        if found is None:
            raise Fail(f"input {name!r} has no data (no input file, no initializer)")
        return found

    from ..ops.family_model import is_family
    from ..ops import op_version

    if is_family(op_version(node_proto.op_type, opset)):
        _run_family(node_proto, opset, inputs, outputs, constant, backend)
        return
    node = onnx_model.build_node(node_proto, opset, constant)
    data_name = node_proto.input[0]
    if data_name not in inputs:
        raise Fail(f"no input file for {data_name!r}")
    if not node_proto.output or node_proto.output[0] not in outputs:
        raise Fail("no output_*.pb for the node's output")
    tensor = read_pb(inputs[data_name])
    expected = read_pb(outputs[node_proto.output[0]])
    result = core.apply(node, tensor, backend=backend)
    _compare(result.output, expected, node_proto.output[0])


def _run_family(node_proto, opset: int, inputs, outputs, constant, backend) -> None:
    """An operator with tensor inputs (family_model.py): every output compared."""
    from ..core.family import apply_node
    from ..ops.family_model import build_family_node, node_inputs
    from ..io.tensorproto import read_pb

    node = build_family_node(node_proto, opset)
    missing = [o for o in node_proto.output if o and o not in outputs]
    if missing:
        raise Fail(f"no output_*.pb for the node's output {missing[0]!r}")
    result = apply_node(node, node_inputs(node_proto, constant), backend=backend)
    if len(result.outputs) != len(node_proto.output):
        raise Fail(f"{len(result.outputs)} outputs, expected {len(node_proto.output)}")
    for actual, name in zip(result.outputs, node_proto.output):
        _compare(actual, read_pb(outputs[name]), name)


def _named_files(model, data_set: Path, kind: str, names: list[str]) -> dict[str, Path]:
    """``input_3.pb`` -> the graph's fourth input name, and so on."""
    files = {}
    for path in data_set.glob(f"{kind}_*.pb"):
        i = _index(path.stem)
        if 0 <= i < len(names):
            files[names[i]] = path
    return files


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
        from ..render.values import format_values

        where = np.unravel_index(int(diff[0]), actual.shape)
        at = f"{name}[{', '.join(str(int(i)) for i in where)}]"
        got, want = (format_values(t.to_numpy()[where]) for t in (actual, expected))
        raise Fail(f"{len(diff)} of {actual.size} elements differ; first {at} = {got}, expected {want}")


def summary(results: list[CaseResult]) -> str:
    count = {s: sum(r.status == s for r in results) for s in ("passed", "failed", "skipped")}
    return f"{count['passed']} passed, {count['failed']} failed, {count['skipped']} skipped"
