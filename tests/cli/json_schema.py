"""The schema of every ``--json`` document (one per command, and the error
document), and a validator: ``document(stdout, command)`` is the one strict
JSON document ``stdout`` holds, checked against its schema. docs/json.md
documents every key (tests/cli/test_json_schema.py checks it)."""

from __future__ import annotations

import json

import pytest

from onnxop_cli.ops import SPECS

# A spec is a type (or a tuple of types; None stands for null), a one-item list
# [spec] for a list of those, or a dict: fixed keys ("key?" is optional; no
# other keys allowed) or {str: spec} for a mapping with any keys.

NUMBER = (int, float)
FLOATLIKE = (int, float, str, None)  # "inf", "-inf", "nan" are strings; null when undefined

COMMON = {"command": (str, None), "status": str, "exit_code": int}
ERROR = COMMON | {"message": str, "written?": [str], "failed?": {"input": str, "output": (str, None)}}
TENSOR = {"name": str, "path": (str, None), "shape": [int], "dtype": str, "values?": [(int, float, str, bool)]}
RUN = {"inputs": [TENSOR], "outputs": [TENSOR | {"kernel?": str}], "timings": {str: NUMBER}}  # kernel: operator commands
KERNEL = {"name": str, "reason": str}
SCHEDULES = {str: KERNEL}  # gpu/choose.py's questions asked, and their answers
OP = COMMON | {
    "op": str,
    "opset": int,
    "attributes": {str: (int, [int])},
    "backend": str,
    "adapter": str,
    "runs": [RUN],
    "timings": {str: NUMBER},
    "kernel": (KERNEL, None),
    "schedules": SCHEDULES,
    "refused?": [{"input": str, "output": (str, None), "message": str}],  # --keep-going; output null: printed
    "any_type?": bool,  # --any-type
}
# run of a graph (docs/json.md): the operator document's keys but --keep-going's and --any-type's, then a whole
# run's nodes and traffic, or a split run's (--others, --verify, --dump) runtimes and regions
GRAPH_RUN = {k: v for k, v in OP.items() if k not in ("refused?", "any_type?")}
TRANSFERS = {"uploaded": int, "read_back": int}
WHOLE_RUN = GRAPH_RUN | {
    "nodes": [{"name": str, "op": str, "inputs": [str], "outputs": [str]}],
    "gathers": int,
    "transfers": TRANSFERS,
    "host_values": {str: int},
    "kernels": [str],
}
SPLIT_RUN = GRAPH_RUN | {
    "ran": {str: {str: int}},
    "regions": [{"runtime": str, "nodes": int}],
    "transfers": TRANSFERS,
    "verified": ([{"op": str, "runtime": str, "nodes": int}], None),
    "onnxruntime_differs": ([str], None),
    "dumped": ({str: str}, None),
}
COMPARED = {"path": str, "name": str, "shape": [int], "dtype": str}
COMPARE = COMMON | {  # docs/cli-details.md
    "same": bool,
    "rule": {"mode": str, "rtol": (NUMBER, None), "atol": (NUMBER, None), "ulp": (int, None)},
    "pairs": [{
        "a": COMPARED, "b": COMPARED, "same": bool, "mode": str, "problem": (str, None), "count": int,
        "differing": int, "max_abs": (NUMBER, str, None), "max_rel": (NUMBER, str, None), "max_ulp": (int, None),
        "nan_vs_number": (int, None),
        "first": [{"index": [int], "a": (NUMBER, str, bool, [FLOATLIKE]), "b": (NUMBER, str, bool, [FLOATLIKE]),
                   "a_bits?": str, "b_bits?": str}],
    }],
    "paired_only": bool,
    "only_a": [str],
    "only_b": [str],
    "left_out": [str],
}
STATS = {"min": FLOATLIKE, "max": FLOATLIKE, "mean": FLOATLIKE, "std": FLOATLIKE, "nan": int, "count": int}
HISTOGRAM = {"edges": [NUMBER], "counts": [int], "other": int}
GRAPH_VALUE = {"name": str, "kind": str, "shape": ([(int, str, None)], None), "dtype": (str, None)}
GRAPH = {
    "opsets": {str: int},
    "inputs": [GRAPH_VALUE],
    "outputs": [GRAPH_VALUE],
    "nodes": [{"op": str, "domain": str, "opset": (int, None), "name": str, "inputs": [str], "outputs": [str],
               "attributes": {str: (int, float, str, [(int, float, str)])}}],
    "initializers": int,
}
SHOW = COMMON | {
    "files": [
        {
            "path": str,
            "tensors": [
                {
                    "name": str, "shape": [int], "dtype": str, "order": str, "byteorder": str,
                    "stats": (STATS, None), "histogram?": (HISTOGRAM, None),
                }
            ],
            "graph?": GRAPH,  # docs/cli-details.md: show --graph, or a model with no initializers
        }
    ]
}
ADAPTER = {"name": str, "backend": str, "adapter_type": str, "driver": str}
INFO = COMMON | {
    "backend": str,
    "adapters": [ADAPTER],
    "chosen": ADAPTER | {"limits": {str: int}, "features": [str]},
    "engine": str,
    "kernels": [
        {"name": str, "shader": str, "features": [str], "limits": {str: int}, "runs_on": [ADAPTER | {"engine": str}]}
    ],
    "kernel": KERNEL,
    "schedules": SCHEDULES,
}
ROUND = {"wall_s": NUMBER, "other_cpu_s": NUMBER, "other_share": (NUMBER, None), "flagged": bool}
BENCH_ROW = {
    "size": int,
    "engine": (str, None),
    "measure": str,
    "kernel": (str, None),
    "gbps_median": NUMBER,
    "gbps_min": NUMBER,
    "gbps_max": NUMBER,
    "rounds_used": int,
    "kernel_per_copy": (NUMBER, None),
    "kernel_per_memcpy": (NUMBER, None),
    "verified": (bool, None),
}
BENCH_ENGINE = {
    "engine": str,
    "adapter": str,
    "backend": str,
    "driver": str,
    "timing": str,
    "chosen_kernel": str,
    "chosen_reason": str,
    "calibration_gbps": {str: NUMBER},
    "buffers": str,
    "schedules": {str: KERNEL | {"gbps": {str: NUMBER}}},
}
BENCH = COMMON | {
    "adapter": str,
    "backend": str,
    "driver": str,
    "date": str,
    "timing": str,
    "repeats": int,
    "warmup": int,
    "chosen_kernel": str,
    "chosen_reason": str,
    "calibration_gbps": {str: NUMBER},
    "buffers": str,
    "cpus": int,
    "load_average": [NUMBER],
    "engines": [BENCH_ENGINE],
    "rounds": {str: [ROUND]},
    "rows": [BENCH_ROW],
}
COUNTS = {"passed": int, "failed": int, "skipped": int}
DOC_TENSOR = {"name": str, "shape": [int], "dtype": str}
EXAMPLE = {
    "page": str,
    "name": str,
    "op": (str, None),
    "opset": (int, None),
    "attributes": {str: (int, [int])},
    "inputs": [DOC_TENSOR],
    "outputs": [DOC_TENSOR],
    "problem": (str, None),
    "rendered?": str,
    "result?": str,
    "output?": (str, None),
    "reason?": (str, None),
    "details?": [str],
    "shown?": (str, None),
}
DOC_EXAMPLES = COMMON | {
    "examples": [EXAMPLE],
    "kernel": (KERNEL, None),
    "schedules": SCHEDULES,
    "summary?": COUNTS,
}
CONFORMANCE = COMMON | {
    "runtime": str,
    "outcomes": {str: int},
    "cases": [
        {
            "case": str,
            "runtime": str,
            "outcome": str,
            "name": str,
            "operator": (str, None),
            "opset": (int, None),
            "data_sets": (int, None),
            "result": str,
            "detail": (str, None),
        }
    ],
    "summary": COUNTS,
    "kernel": (KERNEL, None),
    "schedules": SCHEDULES,
    "runtime_about?": str,
    "message?": str,  # nothing ran: why
}
CASES = COMMON | {
    "folder?": str,
    "written?": [str],
    "cases?": [{"name": str, "class": str, "operator": str, "opset": int, "error": (str, None)}],
}
SCHEMAS = {
    "cases": CASES,
    "error": ERROR, "flatten": OP, "unsqueeze": OP, "run": (WHOLE_RUN, SPLIT_RUN),
    **{spec.command: OP for spec in SPECS.values()}, "show": SHOW, "info": INFO, "doc-examples": DOC_EXAMPLES,
    "conformance": CONFORMANCE, "bench": BENCH, "compare": COMPARE, "version": COMMON | {"versions": {str: (str, None)}},
}


def problems(value, spec, where="$") -> list[str]:
    """Every way ``value`` departs from ``spec`` (empty when it conforms)."""
    if isinstance(spec, list):
        if not isinstance(value, list):
            return [f"{where}: expected a list, got {value!r}"]
        return [p for i, v in enumerate(value) for p in problems(v, spec[0], f"{where}[{i}]")]
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            return [f"{where}: expected an object, got {value!r}"]
        if set(spec) == {str}:
            return [p for k, v in value.items() for p in problems(v, spec[str], f"{where}.{k}")]
        out = []
        keys = {k.rstrip("?"): k for k in spec}
        for key, raw in keys.items():
            if key in value:
                out += problems(value[key], spec[raw], f"{where}.{key}")
            elif not raw.endswith("?"):
                out.append(f"{where}: missing {key!r}")
        out += [f"{where}: unexpected {k!r}" for k in value if k not in keys]
        return out
    options = spec if isinstance(spec, tuple) else (spec,)
    for option in options:
        if option is None and value is None:
            return []
        if isinstance(option, (list, dict)):
            if not problems(value, option, where):
                return []
        elif option is not None and isinstance(value, option) and not (isinstance(value, bool) and option is not bool):
            return []
    return [f"{where}: {value!r} is not {spec}"]


def document(out: str, schema: str) -> dict:
    """stdout is exactly one strict JSON document that matches ``schema``."""
    doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert problems(doc, SCHEMAS[schema]) == []
    return doc


def keys_of(spec) -> set[str]:
    if isinstance(spec, list):
        return keys_of(spec[0])
    if isinstance(spec, tuple):
        return set().union(*(keys_of(s) for s in spec))
    if isinstance(spec, dict):
        names = {k.rstrip("?") for k in spec if isinstance(k, str)}
        return names.union(*(keys_of(v) for v in spec.values()))
    return set()
