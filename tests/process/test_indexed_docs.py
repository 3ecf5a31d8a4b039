"""docs/indexed-operators.md's examples run as written: each ``$`` line in
bash, in a copy of samples/, printing exactly what the page shows (the
README's rules: onnxop and echo only, stderr merged into stdout)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from test_readme import check_line

# The page's examples are under test, not a kernel: one backend (conftest).
ONE_BACKEND = True

REPO = Path(__file__).resolve().parents[2]
PAGE = (REPO / "docs" / "indexed-operators.md").read_text()


def examples() -> list[tuple[str, str]]:
    found = []
    for m in re.finditer(r"```console\n(.*?)```", PAGE, re.S):
        parts = re.split(r"^\$ ", m.group(1), flags=re.M)
        assert parts[0] == ""
        for part in parts[1:]:
            command, _, output = part.partition("\n")
            found.append((command.strip(), output))
    return found


def test_the_page_shows_every_indexed_command():
    shown = {c.split()[1] for c, _ in examples()}
    assert {"gather", "gather-elements", "gather-nd", "scatter-nd", "reverse-sequence"} <= shown


@pytest.mark.parametrize("command,expected", examples(), ids=[c[:60] for c, _ in examples()])
def test_example_prints_what_the_page_shows(tmp_path, backend, command, expected):
    shutil.copytree(REPO / "samples", tmp_path / "samples")
    check_line(command, expected, tmp_path / "samples", backend)
