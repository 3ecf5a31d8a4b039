"""benchmarks/dawn_transfers.py (Dawn's upload and readback against wgpu's,
docs/performance.md) runs end to end on small sizes: both engines' streaming
copies checked exact, every whole-process output checked against numpy, and
``ONNXOP_DAWN_HOST_MAPPED=0`` turns Dawn's host-mapped buffers off in a new
process. Its timings are not checked (benchmarks measure, tests don't)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pydawn")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "dawn_transfers.py"


def _run(tmp_path, env: dict[str, str], *argv: str) -> str:
    done = subprocess.run([sys.executable, str(SCRIPT), *argv, "--tmp", str(tmp_path)], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "XDG_RUNTIME_DIR": str(tmp_path), **env})
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout


def test_both_parts_run_and_check_their_outputs(tmp_path):
    out = _run(tmp_path, {}, "--part", "both", "--size", "1M", "--process-size", "64K", "--rounds", "1")
    assert "dawn: " in out and "; mapped buffers; copy exact" in out.split("dawn: ", 1)[1].splitlines()[0]
    assert "dawn staged: median upload" in out and "vs wgpu, median of per-round ratios: upload" in out
    assert "flatten: dawn vs wgpu, median per round: CPU" in out
    assert "transpose: dawn staged vs wgpu, median per round: CPU" in out


def test_the_variable_turns_host_mapped_buffers_off(tmp_path):
    out = _run(tmp_path, {"ONNXOP_DAWN_HOST_MAPPED": "0"}, "--part", "bench", "--size", "1M", "--rounds", "1")
    assert "ONNXOP_DAWN_HOST_MAPPED=0: Dawn stages every transfer" in out
    assert "; staged buffers; copy exact" in out.split("dawn: ", 1)[1].splitlines()[0]
    assert "dawn staged:" not in out  # the device stages already: no second Dawn row
