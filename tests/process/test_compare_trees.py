"""scripts/compare_trees.py, the byte comparison a kernel port lands on, runs
every node case whose inputs are tensors: a 0-d input onnx stores as a numpy
scalar (OneHot's depth) is a tensor too, not a case left out unseen."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
# The script's list of cases is under test, not a kernel or an engine: one backend (conftest).
ONE_BACKEND = True


def test_a_case_with_a_scalar_input_is_run_and_recorded(tmp_path, backend, monkeypatch):
    """The script's one-tree half (--run-here), in this process: onnx's collect_testcases gives it
    only OneHot's module's cases (building every operator's, to keep one, was about 14 CPU s); what
    the script does with them -- which it runs, how it records them -- is the script's own."""
    from onnx.backend.test.case import node

    from onnxop_cli.docs.nodetests import _module_cases

    spec = importlib.util.spec_from_file_location("compare_trees", ROOT / "scripts" / "compare_trees.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.setattr(node, "collect_testcases", lambda op_type=None: list(_module_cases("onehot")))
    out = tmp_path / "out"
    out.mkdir()
    assert script.main([str(ROOT), str(ROOT), "--seeds", "0", "--run-here", str(out), "--backend", backend,
                        "--only", "test_onehot_with_axis"]) == 0
    assert json.loads((out / "errors.json").read_text()) == {}
    recorded = np.load(out / "test_onehot_with_axis-0.npz")
    assert bytes(recorded["o0_meta"]) == b"<f4(2, 10, 2)"
