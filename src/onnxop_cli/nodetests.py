"""onnx's own backend node tests for the operators onnxop runs, built offline.

The cases come from onnx's machinery: importing ``onnx.backend.test.case.node.<op>``
runs its ``export*`` methods, whose ``expect(...)`` calls register the test
models and data (seeded as onnx seeds them). They are written the way onnx's
``backend-test-tools generate-data`` writes node tests: ``<name>/model.onnx``
and ``<name>/test_data_set_0/{input,output}_<i>.pb``. Only single-node cases
are kept (onnx adds ``*_expanded`` function expansions of some operators).
Cases whose inputs are sequences or optionals (two of Identity's) are written
without data: conformance reports them as skipped, since onnxop runs tensors.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from .ops import OPERATORS


def node_testcases(op_types=None) -> list:
    """The registered single-node cases of ``op_types`` (default: every operator onnxop runs)."""
    import onnx.backend.test.case.node as node_cases

    wanted = set(op_types or OPERATORS)
    for op_type in wanted:
        importlib.import_module(f"onnx.backend.test.case.node.{op_type.lower()}")
    return [
        c for c in node_cases._NodeTestCases
        if len(c.model.graph.node) == 1 and c.model.graph.node[0].op_type in wanted
    ]


def is_tensor_case(case) -> bool:
    graph = case.model.graph
    return all(v.type.HasField("tensor_type") for v in (*graph.input, *graph.output))


def write_case(case, out: Path) -> Path:
    from onnx import numpy_helper

    folder = out / case.name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.onnx").write_bytes(case.model.SerializeToString())
    if not is_tensor_case(case):
        return folder
    for i, (inputs, outputs) in enumerate(case.data_sets):
        data_set = folder / f"test_data_set_{i}"
        data_set.mkdir(exist_ok=True)
        for kind, values, infos in (("input", inputs, case.model.graph.input),
                                    ("output", outputs, case.model.graph.output)):
            for j, value in enumerate(values):
                proto = numpy_helper.from_array(value, infos[j].name)
                (data_set / f"{kind}_{j}.pb").write_bytes(proto.SerializeToString())
    return folder


def write_all(out: Path, op_types=None, only=None) -> list[Path]:
    return [write_case(c, out) for c in node_testcases(op_types) if not only or c.name in only]
