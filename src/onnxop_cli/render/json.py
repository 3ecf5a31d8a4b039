"""The ``--json`` documents: plain dicts, built here, printed by the CLI.

Every command prints exactly one document on stdout. Every document has
``command``, ``status`` ("ok", "failed" or "error") and ``exit_code``; the
rest depends on the command and is described in README ("JSON output") and
checked by tests/cli/test_json.py (against tests/cli/json_schema.py). Tensor values are never included (write them
with ``-o``); non-finite floats are written as the strings "inf", "-inf" and
"nan", so every document is strict JSON.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from ..core.apply_tensors import Result
    from ..ops import Node
    from ..core.tensor import Tensor

Doc = dict[str, Any]


def dumps(doc: Doc) -> str:
    """The document as strict JSON (no NaN/Infinity literals), indented, with
    lists of plain values (shapes, axes) kept on one line."""
    return _pretty(_strict(doc), 0)


def _pretty(value: Any, level: int) -> str:
    pad, inner = "  " * level, "  " * (level + 1)
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(k)}: {_pretty(v, level + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        items = [f"{inner}{_pretty(v, level + 1)}" for v in value]
        return "[\n" + ",\n".join(items) + f"\n{pad}]"
    return json.dumps(value, allow_nan=False)


def _strict(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {_strict(k) if isinstance(k, bytes) else str(k): _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, bytes):  # a name protobuf found not UTF-8: kept as a path's bytes are (os.fsdecode)
        return value.decode("utf-8", "surrogateescape")
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        return _strict(value.item())  # numpy scalars from parsed pages or stats
    return value


def base(command: str | None, status: str = "ok", exit_code: int = 0) -> Doc:
    return {"command": command, "status": status, "exit_code": int(exit_code)}


def error(command: str | None, message: str, exit_code: int, status: str = "error") -> Doc:
    """What ``--json`` prints when a command fails (the one-line message is
    also written to stderr, as without ``--json``); ``status`` is "failed"
    where a check found a mismatch."""
    return base(command, status, exit_code) | {"message": message}


def batch_failure(written: Sequence[str | Path], failed_input: str | Path, failed_output: str | Path | None) -> Doc:
    """What the error document of a flatten/unsqueeze that failed while
    running adds: the outputs written before, in order, and the failed job."""
    return {
        "written": [str(p) for p in written],
        "failed": {"input": str(failed_input), "output": None if failed_output is None else str(failed_output)},
    }


def refused_entry(refused: Any) -> Doc:
    """A job that --keep-going set aside (batch.Refused)."""
    return {
        "input": str(refused.src),
        "output": None if refused.target is None else str(refused.target),
        "message": refused.message,
    }


def tensor_entry(tensor: Tensor, path: str | Path | None) -> Doc:
    """``{"name", "path", "shape", "dtype"}`` for a tensor read or written."""
    return {
        "name": tensor.name,
        "path": None if path is None else str(path),
        "shape": list(tensor.shape),
        "dtype": tensor.dtype.name,
    }


def _constant_inputs(node: Node) -> list[Doc]:
    """The node's constant inputs (Unsqueeze's axes from 13, Slice's starts, ...)."""
    return [
        {"name": name, "path": None, "shape": [len(node.inputs[name])], "dtype": "int64",
         "values": list(node.inputs[name])}
        for name in node.op.inputs[1:]
        if name in node.inputs
    ]


def run_entry(result: Result, input_path: str | Path | None, paths: Sequence[str | Path | None] | None = None) -> Doc:
    """One node run, of either kind of operator: its inputs (the file's
    tensor, the other tensor inputs, the constant inputs: one that no file
    holds with its ``values``), its outputs (each with its ``path``, written
    or None, and the ``kernel`` of its plan) and its timings."""
    first, *others = [t for t in result.inputs if t is not None]
    return {
        "inputs": [tensor_entry(first, input_path), *map(_input_entry, others), *_constant_inputs(result.node)],
        "outputs": [tensor_entry(t, path) | {"kernel": plan.kernel}
                    for t, path, plan in zip(result.outputs, result.paths if paths is None else paths, result.plans)],
        "timings": {k: round(float(v), 6) for k, v in result.timings.items()},
    }


def _input_entry(tensor: Tensor) -> Doc:
    """A tensor input after the first: its file, or (a literal list, ``--pads 0,1``) its values."""
    entry = tensor_entry(tensor, tensor.source or None)
    if tensor.source or tensor.dtype.is_string or tensor.dtype.numpy.kind not in "biuf":
        return entry
    return entry | {"values": tensor.to_numpy().reshape(-1).tolist()}


def op_document(
    command: str,
    node: Node,
    opset: int,
    runs: Sequence[Doc],
    *,
    backend: str,
    adapter: str,
    total: float,
) -> Doc:
    """An operator command: the node, where it ran, one entry per input."""
    return base(command) | {
        "op": node.op_type,
        "opset": opset,
        "attributes": dict(node.attributes),
        "backend": backend,
        "adapter": adapter,
        "runs": list(runs),
        "timings": {"total": round(total, 6)},
    }


def show_document(files: Sequence[tuple[str, Sequence[tuple[Tensor, Doc | None]], Sequence[Doc | None]]]) -> Doc:
    """show: every file given, every tensor in it, with its statistics (and,
    with --hist, its histogram)."""

    def entry(t: Tensor, stats: Doc | None, hist: Doc | None | bool) -> Doc:
        doc = {
            "name": t.name,
            "shape": list(t.shape),
            "dtype": t.dtype.name,
            "order": t.order,
            "byteorder": "big" if t.byteswap else "little",
            "stats": stats,
        }
        if hist is not False:
            doc["histogram"] = hist
        return doc

    return base("show") | {
        "files": [
            {
                "path": path,
                "tensors": [
                    entry(t, stats, hists[i] if hists else False) for i, (t, stats) in enumerate(tensors)
                ],
            }
            for path, tensors, hists in files
        ]
    }


def info_document(
    backend: str, adapters: Sequence[Any], chosen: Any, *, engine: str = "wgpu", kernels: Sequence[Any] = ()
) -> Doc:
    """info: the adapters seen, the one chosen, its limits and features, and
    per kernel what it needs and the adapters (of every engine) that can run it."""

    def adapter(a: Any) -> Doc:
        return {
            "name": str(a),  # as flatten's and bench's "adapter" name it: "llvmpipe (...) (Vulkan, CPU)"
            "backend": a.our_backend,
            "adapter_type": a.adapter_type,
            "driver": a.driver,
        }

    return base("info") | {
        "backend": backend,
        "adapters": [adapter(a) for a in adapters],
        "chosen": adapter(chosen.info)
        | {"limits": dict(sorted(chosen.limits.items())), "features": sorted(chosen.info.features)},
        "engine": engine,
        "kernels": [
            {
                "name": k.name,
                "shader": k.shader,
                "features": list(need.features),
                "limits": dict(need.limits),
                "runs_on": [adapter(a) | {"engine": a.engine} for a in able],
            }
            for k, need, able in kernels
        ],
    }


def conformance_document(results: Sequence[Any], exit_code: int, runtime: str = "onnxop",
                         outcomes: Sequence[str] = ()) -> Doc:
    """conformance: the runtime, each node-test case and the counts (status
    "failed", exit code 1, when a case is wrong, no_error or error)."""
    doc = base("conformance", "failed" if exit_code else "ok", int(exit_code))
    doc["runtime"] = runtime
    doc["cases"] = [
        {
            "case": r.name,
            "runtime": r.runtime,
            "outcome": r.outcome,
            "name": r.name,
            "operator": r.operator,
            "opset": r.opset,
            "data_sets": r.data_sets,
            "result": r.status,
            "detail": r.detail or None,
        }
        for r in results
    ]
    doc["summary"] = {s: sum(r.status == s for r in results) for s in ("passed", "failed", "skipped")}
    doc["outcomes"] = {o: sum(r.outcome == o for r in results) for o in outcomes}
    return doc
