"""onnxop reads onnx's node-test cases module by module (docs/nodetests.py)
and must leave onnx's own registry as onnx would have it: every case once.
A module already imported is run again to find its cases; its new copies
once went into the registry too, so a later ``load_model_tests(kind="node")``
in the same process listed those cases twice (tests/gpu/test_backend.py
failed whenever a worker had run test_input_layouts.py first)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import importlib, warnings
warnings.simplefilter("ignore")
import onnx.backend.test.case.node as registry
importlib.import_module("onnx.backend.test.case.node.transpose")  # imported first, as onnx's runner does
from onnxop_cli.docs import nodetests
assert len(nodetests._module_cases("transpose")) == len(registry._NodeTestCases) > 0
nodetests._module_cases("concat")  # not imported yet: its cases join the registry once
names = [c.name for c in registry._NodeTestCases]  # what load_model_tests(kind="node") returns, once it has
                                                   # imported the other modules (6 CPU s: not done here)
print(len(names), len(set(names)), sum(n.startswith("test_concat") for n in names))
"""


def test_reading_a_module_s_cases_leaves_onnx_s_registry_without_repeats():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600, check=True)
    total, distinct, concat = (int(x) for x in out.stdout.split())
    assert total == distinct and concat > 0, out.stdout
