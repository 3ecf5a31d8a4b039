"""``onnxop doc-examples PAGE --check`` as a process: an example onnxop
refuses fails alone, with onnxop's message, and the page's other examples
are still checked (exit 1, not a usage error that hides them). Every
refusal of the one apply path counts the same, whichever source the example
came from (the official examples already did this)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BACKEND = os.environ.get("ONNXOP_TEST_BACKENDS", "vulkan").split(",")[0]

EXAMPLE = ("{name}\nNode:\nExpand(x, shape) -> (y)\nInputs:\nx: shape=(1,), dtype=int8\n[1]\n"
           "shape: shape=({n},), dtype=int64\n[{shape}]\nOutputs:\ny: shape=(2,), dtype=int8\n[1, 1]\n")
HUGE = "4294967296, 4294967296, 4294967296"


def test_an_example_refused_as_too_large_fails_alone(tmp_path: Path):
    page = tmp_path / "Expand-13.txt"
    page.write_text("Expand#\nSince version: 13\nExamples#\n" + EXAMPLE.format(name="test_huge", n=3, shape=HUGE)
                    + EXAMPLE.format(name="test_ok", n=1, shape="2"))
    run = subprocess.run([sys.executable, "-m", "onnxop_cli", "-b", BACKEND, "doc-examples", page.name, "--check"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    refusal = (f"Expand: output shape ({HUGE}) is too large: its non-zero dimensions times the 1-byte element "
               "size exceed 2**63 - 1 bytes")
    assert run.returncode == 1, (run.stdout, run.stderr)
    lines = run.stdout.splitlines()
    assert lines[1].split()[:3] == ["Expand-13.txt", "test_huge", "FAILED"] and lines[1].endswith(refusal)
    assert lines[2].split() == ["Expand-13.txt", "test_ok", "passed", "y", "(2,)", "int8", "2/2", "values", "on",
                                "the", "page"]
    assert f"FAILED test_huge (Expand-13.txt): {refusal}" in lines
    assert lines[-1] == "1 passed, 1 failed" and run.stderr == ""
