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

from ..errors import OnnxopError, OutOfScope, UsageError

MODEL = "model.onnx"


@dataclass(frozen=True)
class CaseResult:
    name: str
    operator: str | None  # "Flatten-25", the op type of a skipped model, "graph"; None: not read
    opset: int | None  # None: the model was not read that far
    data_sets: int | None  # None: skipped, or failed before the data sets were counted
    status: str  # "passed", "failed" or "skipped"
    detail: str = ""

    @property
    def op_type(self) -> str:
        """What the per-operator summary counts it under: Flatten, graph, ?."""
        return (self.operator or "?").split("-")[0]


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


def run_all(dirs: list[Path], backend: str | None = None, op: str | None = None) -> list[CaseResult]:
    """The cases in ``dirs``; with none, onnx's node tests of onnxop's operators.
    ``op`` keeps only the cases of that operator (an op type)."""
    if op is not None:
        op = _known_op(op)
    if not dirs:
        import tempfile

        from .nodetests import write_all

        with tempfile.TemporaryDirectory(prefix="onnxop-node-tests-") as folder:
            write_all(Path(folder), [op] if op and op != CONSTANT else None)
            return _selected(find_cases([Path(folder)]), backend, op)
    return _selected(find_cases(dirs), backend, op)


CONSTANT = "Constant"


def _known_op(op: str) -> str:
    """An operator of the registry (its one-node cases) or one a graph may hold (Constant)."""
    from ..ops import OPERATORS
    from ..ops.model import supported

    known = list(dict.fromkeys([*OPERATORS, *supported()]))
    names = {n.lower(): n for n in known}
    if op.lower() not in names:
        raise UsageError(f"--op {op!r}: onnxop runs {', '.join(known)}")
    return names[op.lower()]


def _selected(cases: list[tuple[Path, str]], backend: str | None, op: str | None) -> list[CaseResult]:
    results = []
    for path, name in cases:
        r = run_case(path, name, backend)
        if op is None or r.op_type == op:
            results.append(r)
    return results


def run_case(folder: Path, name: str, backend: str | None = None) -> CaseResult:
    """One node test: every data set through the graph executor (graph.py),
    one node or many, each output compared bit for bit. Whatever goes wrong
    fails this case only, with its reason."""
    from ..ops.model import Unsupported, load_graph

    operator, opset, sets, current = None, None, None, ""
    try:
        model = _load_model(folder / MODEL)
        operator = _operator(model)
        g = load_graph(model, folder)
        opset = g.opset
        if len(g.nodes) == 1 and g.nodes[0].op is not None:
            operator = f"{g.nodes[0].op.op_type}-{g.nodes[0].op.since_version}"
        data_sets = sorted(
            (p for p in folder.iterdir() if p.is_dir() and p.name.startswith("test_data_set_")),
            key=lambda p: _index(p.name),
        )
        if not data_sets:
            raise Fail("no test_data_set_* folders")
        sets = len(data_sets)
        for data_set in data_sets:
            current = data_set.name
            _run_data_set(g, data_set, backend)
        current = ""
        return CaseResult(name, operator, opset, sets, "passed")
    except Unsupported as e:
        return CaseResult(name, operator, opset, None, "skipped", str(e))
    except Skip as e:
        return CaseResult(name, operator, opset, None, "skipped", str(e))
    except OutOfScope as e:  # float arithmetic: allowed by the operator, not run by onnxop
        return CaseResult(name, operator, opset, None, "skipped", _scope_reason(e))
    except (Fail, OnnxopError) as e:
        where = f"{current}: " if current else ""
        return CaseResult(name, operator, opset, sets, "failed", f"{where}{e}")
    except Exception as e:  # noqa: BLE001 - one unreadable case must not end the run
        where = f"{current}: " if current else ""
        text = " ".join(str(e).split())[:200]
        return CaseResult(name, operator, opset, sets, "failed", f"{where}internal error: {type(e).__name__}: {text}")


def _scope_reason(e: OutOfScope) -> str:
    """The refusal without the node and input names, so the per-operator
    summary says it once: "float16 inputs: out of scope"."""
    m = re.search(r" is (\S+): onnxop runs", e.message)
    return f"{m.group(1)} inputs: out of scope" if m else e.message


def _operator(model) -> str | None:
    """The op type of a one-node model; "graph" for several nodes."""
    nodes = list(model.graph.node)
    if len(nodes) == 1:
        return nodes[0].op_type
    return "graph" if nodes else None


def _index(name: str) -> int:
    m = re.search(r"(\d+)$", name)
    return int(m.group(1)) if m else -1


def _load_model(path: Path):
    import onnx

    try:
        return onnx.load(str(path), load_external_data=False)
    except Exception as e:  # noqa: BLE001 - protobuf raises several kinds
        raise Fail(f"{MODEL} cannot be read: {' '.join(str(e).split())[:200]}") from None


def _run_data_set(g, data_set: Path, backend: str | None) -> None:
    """Run one data set; raises Fail (or an OnnxopError) if it does not match."""
    from ..core import graph
    from ..io.tensorproto import read_pb

    inputs = _files(data_set, "input")
    outputs = _files(data_set, "output")
    if len(inputs) != len(g.inputs):
        raise Fail(f"{len(inputs)} input_*.pb for the graph's {len(g.inputs)} inputs ({', '.join(g.inputs)})")
    if len(outputs) != len(g.outputs):
        raise Fail(f"{len(outputs)} output_*.pb for the graph's {len(g.outputs)} outputs ({', '.join(g.outputs)})")
    feeds = {name: read_pb(path) for name, path in zip(g.inputs, inputs)}
    results, _ = graph.run_to_memory(graph.plan(g, feeds, backend=backend), backend=backend)
    for actual, path, name in zip(results, outputs, g.outputs):
        compare(actual, read_pb(path), name)


def _files(data_set: Path, kind: str) -> list[Path]:
    """``input_0.pb``, ``input_1.pb``, ... in order; a gap fails the case."""
    found = sorted((p for p in data_set.glob(f"{kind}_*.pb") if _index(p.stem) >= 0), key=lambda p: _index(p.stem))
    if [_index(p.stem) for p in found] != list(range(len(found))):
        raise Fail(f"{data_set.name}: {kind}_N.pb files are not numbered 0, 1, ...")
    return found


def _bits(values):
    """Elements as unsigned integers of their width (NaN payloads, -0.0 and
    the 4- and 2-bit types, one per byte once unpacked, compare exactly)."""
    import numpy as np

    a = np.ascontiguousarray(values).reshape(-1)
    if a.dtype.itemsize in (1, 2, 4, 8):
        return a.view(f"u{a.dtype.itemsize}").reshape(-1, 1)
    return a.view("u1").reshape(a.size, a.dtype.itemsize)  # complex128: 16 bytes


def compare(actual, expected, name: str) -> None:
    """Equal shape, type and bits (NaN payloads and -0.0 included); Fail names
    the first element that differs."""
    import numpy as np

    if actual.shape != expected.shape:
        raise Fail(f"shape {actual.shape} != expected {expected.shape}")
    if actual.dtype is not expected.dtype:
        raise Fail(f"type {actual.dtype} != expected {expected.dtype}")
    if actual.size == 0:
        return
    if actual.dtype.is_string:
        got, want = actual.strings.reshape(-1), expected.strings.reshape(-1)
        diff = [i for i, (a, b) in enumerate(zip(got, want)) if a != b]
    else:
        got, want = _bits(actual.to_numpy()), _bits(expected.to_numpy())
        diff = list(np.flatnonzero((got != want).any(axis=1)))
    if diff:
        from ..render.values import format_values

        where = np.unravel_index(int(diff[0]), actual.shape)
        at = f"{name}[{', '.join(str(int(i)) for i in where)}]"
        got, want = (format_values(np.asarray(t.to_numpy()[where])) for t in (actual, expected))
        raise Fail(f"{len(diff)} of {actual.size} elements differ; first {at} = {got}, expected {want}")


_compare = compare


def per_operator(results: list[CaseResult]) -> list[str]:
    """``Flatten: 11 passed, 0 failed, 1 skipped (skipped: ...)``, per operator."""
    by_op: dict[str, list[CaseResult]] = {}
    for r in results:
        by_op.setdefault(r.op_type, []).append(r)
    lines = []
    for op, rs in sorted(by_op.items()):
        reasons = sorted({r.detail for r in rs if r.status == "skipped"})
        why = f" (skipped: {'; '.join(reasons)})" if reasons else ""
        lines.append(f"{op}: {summary(rs)}{why}")
    return lines


def summary(results: list[CaseResult]) -> str:
    count = {s: sum(r.status == s for r in results) for s in ("passed", "failed", "skipped")}
    return f"{count['passed']} passed, {count['failed']} failed, {count['skipped']} skipped"
