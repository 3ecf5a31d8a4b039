"""An engine is imported only when chosen: a run on Dawn never imports the
wgpu package, and one on wgpu never imports pydawn (checked in a fresh
process, through sys.modules, on each engine's backends under test)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import random_array

CODE = """
import json, sys
from onnxop_cli.cli.main import run
code = run(sys.argv[1:])
print(json.dumps([code, sorted({m.split(".")[0] for m in sys.modules} & {"wgpu", "pydawn"})]))
"""


def _run(args: list[str], cwd: Path) -> tuple[int, list[str]]:
    done = subprocess.run([sys.executable, "-c", CODE, *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    code, engines = json.loads(done.stdout.splitlines()[-1])
    return code, engines


def test_a_run_imports_only_its_engine(backend, tmp_path, rng):
    x = random_array(rng, (3, 4, 5), np.float32)
    np.save(tmp_path / "x.npy", x)
    code, engines = _run(["flatten", "x.npy", "--axis", "2", "--backend", backend, "-o", "y.npy", "-q"], tmp_path)
    assert code == 0
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), x.reshape(12, 5))
    assert engines == (["pydawn"] if backend.startswith("dawn-") else ["wgpu"])


@pytest.mark.parametrize("engine", ["wgpu", "dawn"])
def test_help_and_info_of_no_engine_import_it(engine, tmp_path):
    """``--engine X --help`` chooses nothing: neither package is loaded."""
    code, engines = _run(["--engine", engine, "flatten", "--help"], tmp_path)
    assert code == 0 and engines == []
