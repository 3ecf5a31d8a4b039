"""The --json document of an operator command follows one schema whatever the
operator's kind (docs/json.md): a view operator's (Flatten) and a tensor
operator's (Pad) have the same fields, name the backend that ran (not
"auto"), report the copy kernel and the schedules, give each output's plan
kernel and each literal input's values. Real processes, one per command:
what a document says about the device is the process's own."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

ONNXOP = [sys.executable, "-m", "onnxop_cli"]


def _document(backend: str, cwd, *argv: str) -> dict:
    done = subprocess.run([*ONNXOP, "--backend", backend, *argv, "--json"], cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _fields(doc: dict) -> dict:
    run = doc["runs"][0]
    return {"top": sorted(doc), "run": sorted(run), "input": sorted(run["inputs"][0]),
            "output": sorted(run["outputs"][0])}


def test_view_and_tensor_operators_write_one_schema(backend, tmp_path):
    np.save(tmp_path / "a.npy", np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    view = _document(backend, tmp_path, "flatten", "a.npy", "--axis", "1", "-o", "f.npy")
    tensor = _document(backend, tmp_path, "pad", "a.npy", "--pads", "0,0,1,0,0,0", "-o", "p.npy")
    assert _fields(view) == _fields(tensor)
    assert view["backend"] == tensor["backend"] == backend
    assert view["adapter"] == tensor["adapter"]
    assert view["kernel"] is not None and view["schedules"] == {}
    assert [o["kernel"] for o in view["runs"][0]["outputs"]] == ["view"]
    assert [o["kernel"] for o in tensor["runs"][0]["outputs"]] == ["pieces"]
    assert [o["path"] for d in (view, tensor) for o in d["runs"][0]["outputs"]] == ["f.npy", "p.npy"]
    assert tensor["runs"][0]["inputs"][1] == {"name": "pads", "path": None, "shape": [6], "dtype": "int64",
                                              "values": [0, 0, 1, 0, 0, 0]}
