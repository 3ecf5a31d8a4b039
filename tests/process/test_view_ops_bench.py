"""benchmarks/view_ops.py runs end to end on a small square, checks every
tool's output against numpy's, and fills a README's table (its figures are
not checked: benchmarks measure, tests don't)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import load_benchmark

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "view_ops.py"


@pytest.fixture(scope="module")
def view_ops():
    yield load_benchmark("view_ops")
    sys.path.remove(str(SCRIPT.parent))


def test_script_fills_the_readme_table(view_ops, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    readme = tmp_path / "README.md"
    readme.write_text("before\n<!-- view-table -->\nold\n<!-- /view-table -->\nafter\n")
    argv = ["--side", "256", "--rounds", "1", "--tmp", str(tmp_path), "--update-readme", str(readme)]
    assert view_ops.main(argv) == 0
    text = readme.read_text()
    assert text.startswith("before\n<!-- view-table -->\nMeasured ") and text.endswith("<!-- /view-table -->\nafter\n")
    assert "old" not in text
    for row in ("`transpose --perm 1,0` (256x256)", "`slice --starts 0,-32 --ends 256,32 --axes 0,1 --steps 2,-1` (256x256)",
                "`tile --repeats 2,2` (128x128)"):
        assert row in text, row
    assert "Command: `python benchmarks/view_ops.py --side 256" in text
    assert ", driver " in text
    assert "CPU seconds other processes took, per round: transpose: " in text
    assert list(tmp_path.glob("onnxop-viewbench-*")) == []  # temp files cleaned up


def test_a_tool_whose_output_differs_fails_the_run(view_ops, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    real = view_ops.cases

    def onnxop_transposes_nothing(side):
        found = real(side)
        found["transpose"] = (side, {"perm": [1, 0]}, ["--perm", "0,1"])
        return found

    monkeypatch.setattr(view_ops, "cases", onnxop_transposes_nothing)
    with pytest.raises(RuntimeError, match="transpose: outputs differ"):
        view_ops.main(["--side", "64", "--rounds", "1", "--ops", "transpose", "--tmp", str(tmp_path)])
    assert list(tmp_path.glob("onnxop-viewbench-*")) == []
