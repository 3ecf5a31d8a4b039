"""scripts/compare_trees.py, the byte comparison a kernel port lands on, runs
every node case whose inputs are tensors: a 0-d input onnx stores as a numpy
scalar (OneHot's depth) is a tensor too, not a case left out unseen."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
# The script's list of cases is under test, not a kernel or an engine: one backend (conftest).
ONE_BACKEND = True


def test_a_case_with_a_scalar_input_is_run_and_recorded(tmp_path, backend):
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run([sys.executable, str(ROOT / "scripts" / "compare_trees.py"), str(ROOT), str(ROOT), "--seeds", "0",
                    "--run-here", str(out), "--backend", backend, "--only", "test_onehot_with_axis"],
                   check=True, timeout=300, capture_output=True)
    assert json.loads((out / "errors.json").read_text()) == {}
    recorded = np.load(out / "test_onehot_with_axis-0.npz")
    assert bytes(recorded["o0_meta"]) == b"<f4(2, 10, 2)"
