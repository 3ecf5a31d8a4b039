"""benchmarks/dawn_host_mapped.py, the probe of Dawn's host-mapped-pointer
buffers (docs/performance.md): on this machine's Vulkan adapter the buffer
over host memory must carry random bytes exactly both ways. Its timings are
not checked (benchmarks measure, tests don't)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pydawn")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "dawn_host_mapped.py"


def test_host_mapped_buffers_carry_bytes_exactly_both_ways():
    done = subprocess.run([sys.executable, str(SCRIPT), "--size", "256K", "--rounds", "1"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    if "not offered by this adapter" in done.stdout:
        pytest.skip(done.stdout.strip())
    assert "host memory -> buffer, exact: True" in done.stdout
    assert "buffer -> host memory, exact: True" in done.stdout
    assert "host-mapped vs staged, per round:" in done.stdout
