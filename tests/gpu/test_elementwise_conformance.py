"""onnx's own node tests of the integer elementwise operators through
``onnxop conformance``'s runner: each integer and bool case passes bit for
bit; the float (and string) cases are skipped as out of scope, never failed.
Every Cast and CastLike case passes. A second reference for kernels that fan
out over engines and backends in test_elementwise.py and test_cast.py: on the
first backend only (CI's Mesa 22.3 matrix logged no kernel that only these
cases dispatched on gl, dawn-vulkan or dawn-gl)."""

from __future__ import annotations

import pytest

from onnxop_cli.docs.conformance import run_all

ONE_BACKEND = True

# op -> the cases that must pass (onnx 1.23's integer and bool node tests)
PASSING = {
    "Add": 6, "Sub": 6, "Mul": 6, "Div": 7, "Mod": 10, "Min": 8, "Max": 8,
    "Equal": 8, "Less": 6, "LessOrEqual": 6, "Greater": 6, "GreaterOrEqual": 6,
    "Not": 3, "And": 8, "Or": 8, "Xor": 8, "Range": 1,
    "Cast": 60, "CastLike": 56,  # every case: every type pair onnx tests (tests/gpu/test_cast.py)
}


@pytest.mark.parametrize("op", sorted(PASSING))
def test_integer_node_tests_pass_and_floats_are_skipped(backend, op):
    results = run_all([], backend, op)
    failed = [(r.name, r.detail) for r in results if r.status == "failed"]
    assert not failed
    assert sum(r.status == "passed" for r in results) >= PASSING[op]
    assert all("out of scope" in r.detail for r in results if r.status == "skipped")
