"""docs/backend.md's five lines run ONNX's runner (docs/graphs.md's examples run in test_readme.py, as every page's)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from test_readme import PYTHON, REPO

# The page's examples are under test, not a kernel: one backend (conftest).
ONE_BACKEND = True

GRAPHS = (REPO / "docs" / "graphs.md").read_text()
BACKEND = (REPO / "docs" / "backend.md").read_text()


def blocks(text: str) -> list[list[tuple[str, str]]]:
    out = []
    for m in re.finditer(r"```console\n(.*?)```", text, re.S):
        parts = re.split(r"^\$ ", m.group(1), flags=re.M)
        assert parts[0] == ""
        out.append([(p.partition("\n")[0].strip(), p.partition("\n")[2]) for p in parts[1:]])
    return out


def test_every_graph_example_is_found():
    assert len(blocks(GRAPHS)) == 5


def test_the_five_lines_run_onnx_s_runner(tmp_path, backend):
    code = re.search(r"```python\n(.*?)```", BACKEND, re.S).group(1)
    assert len([line for line in code.splitlines() if line.strip()]) == 5
    (tmp_path / "test_onnxop_backend.py").write_text(code)
    env = {**os.environ, "ONNXOP_BACKEND": backend}
    done = subprocess.run(
        [PYTHON if PYTHON != sys.executable else sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-W", "ignore", "test_onnxop_backend.py", "-k", "test_transpose_default_cpu or test_reshape_reduced_dims_cpu"],
        cwd=tmp_path, capture_output=True, text=True, env=env,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert re.search(r"\b2 passed\b", done.stdout), done.stdout[-2000:]


@pytest.mark.parametrize("index", range(4))
def test_graph_examples_print_what_the_page_shows(tmp_path, index):
    """docs/graphs.md's console blocks, run as written (one backend: the page shows the CLI)."""
    import shutil

    from conftest import BACKENDS
    from test_readme import run_block

    shutil.copytree(REPO / "samples", tmp_path / "samples")
    run_block(blocks(GRAPHS)[index], False, tmp_path, BACKENDS[0])
