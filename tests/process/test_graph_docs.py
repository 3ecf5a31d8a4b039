"""docs/graphs.md's examples print what the page shows (docs/backend.md's run in test_backend_runner.py)."""

from __future__ import annotations

import re

import pytest

from test_readme import REPO

# The page's examples are under test, not a kernel: one backend (conftest).
ONE_BACKEND = True

GRAPHS = (REPO / "docs" / "graphs.md").read_text()


def blocks(text: str) -> list[list[tuple[str, str]]]:
    out = []
    for m in re.finditer(r"```console\n(.*?)```", text, re.S):
        parts = re.split(r"^\$ ", m.group(1), flags=re.M)
        assert parts[0] == ""
        out.append([(p.partition("\n")[0].strip(), p.partition("\n")[2]) for p in parts[1:]])
    return out


def test_every_graph_example_is_found():
    assert len(blocks(GRAPHS)) == 5


@pytest.mark.parametrize("index", range(4))
def test_graph_examples_print_what_the_page_shows(tmp_path, index):
    """docs/graphs.md's console blocks, run as written (one backend: the page shows the CLI)."""
    import shutil

    from conftest import BACKENDS
    from test_readme import run_block

    shutil.copytree(REPO / "samples", tmp_path / "samples")
    run_block(blocks(GRAPHS)[index], False, tmp_path, BACKENDS[0])
