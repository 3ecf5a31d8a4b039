"""What a run on each engine imports (nothing the command does not
use). Checked by sys.modules in a fresh process, not by timing (the
whole-process figures are in docs/performance-adapters.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from onnxop_cli.gpu.engines import installed

ROOT = Path(__file__).resolve().parents[2]
WATCHED = ("wgpu", "pydawn", "rich", "onnx", "onnxruntime", "cffi", "pycparser", "ml_dtypes", "hypothesis")
# a module that counts as loaded: pycparser itself may sit in sys.modules unloaded (lazy)
LOADED = "{m.split('.')[0] for m in sys.modules if not (m == 'pycparser' and type(sys.modules[m]).__name__ == 'StandIn')}"


def run_and_list(tmp_path: Path, argv: list[str]) -> dict:
    code = (
        "import json, sys\n"
        "from onnxop_cli.cli import main as cli\n"
        f"status = cli.run({argv!r})\n"
        f"print(json.dumps({{'status': status, 'modules': sorted({LOADED} & set({WATCHED!r}))}}))"
    )
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.skipif(not installed("dawn") and not os.environ.get("CI"), reason="dawn-python is not installed")
@pytest.mark.parametrize("op", [["flatten"], ["transpose", "--perm", "3,1,2,0"]])
def test_a_dawn_run_imports_no_wgpu(tmp_path, op):
    found = run_and_list(tmp_path, [op[0], str(ROOT / "samples" / "a.npy"), *op[1:], "--engine", "dawn", "-o", "b.npy"])
    assert found == {"status": 0, "modules": ["pydawn"]}


@pytest.mark.parametrize("op", [["flatten"], ["transpose", "--perm", "3,1,2,0"]])
def test_a_wgpu_run_imports_no_dawn_and_nothing_for_rendering(tmp_path, op):
    argv = [op[0], str(ROOT / "samples" / "a.npy"), *op[1:], "--backend", "vulkan", "-o", "b.npy"]
    first = run_and_list(tmp_path, argv)  # parses wgpu.h (with pycparser) into the cache
    assert first == {"status": 0, "modules": ["cffi", "pycparser", "wgpu"]}
    found = run_and_list(tmp_path, argv)
    # cffi is wgpu-native's binding; pycparser stays unloaded once the parse is cached
    assert found == {"status": 0, "modules": ["cffi", "wgpu"]}
