"""scripts/fuzz_ops.py, the differential fuzzer (onnxop against onnx.reference,
bit for bit): a few seeds of a few operators on its three paths find nothing
wrong and say how much they compared, and a wrong output is reported with its
seed and the one command that replays it. The fuzzer's real runs are long
(docs/commands.md); this is its smoke test, run in this process (tests/commands.py's run_script)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from commands import run_script
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import fuzz_ops  # noqa: E402


def test_a_few_seeds_on_every_path_find_nothing_and_count_what_they_compared(backend):
    r = run_script(ROOT / "scripts" / "fuzz_ops.py", "--seeds", "0", "--ops", "Transpose", "--mutation",
                   "layout,values", "--chains", "1", "--backend", backend)
    assert r.returncode == 0, r.stdout + r.stderr
    summary = r.stdout.strip().splitlines()[-1]
    compared = int(summary.split(" compared")[0])
    assert compared > 20 and " 0 failed" in summary and "paths ['api', 'run', 'cli']" in summary, summary


def test_a_false_result_is_reported_with_the_command_that_replays_it():
    x = np.array([1.5, -0.0], np.float32)
    node = helper.make_node("Identity", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    reports, counts = [], {"compared": 0}
    wrong = [np.array([1.5, 0.0], np.float32)]  # -0.0 lost: a false result
    fuzz_ops._judge(7, "test_identity", "run", "values", [x], wrong, counts, lambda *a: reports.append(a), model, [x])
    assert len(reports) == 1 and "false result" in reports[0][-1] and "flat index 1" in reports[0][-1], reports
    assert fuzz_ops.replay(*reports[0][:4], "vulkan") == (
        "python scripts/fuzz_ops.py --seeds 7 --case test_identity --path run --mutation values --backend vulkan")
    reports.clear()
    fuzz_ops._judge(7, "test_identity", "run", "values", [x], [x.copy()], counts, lambda *a: reports.append(a),
                    model, [x])
    assert not reports and counts["compared"] == 2
