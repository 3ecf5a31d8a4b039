"""The pages the doc-examples tests check: the seed pages' text and the test
pages' folder, a page written with one thing changed, and a row of the
check table."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PAGES = Path(__file__).resolve().parents[1] / "pages"

FLATTEN_PAGE = (REPO / "samples" / "Flatten-25.txt").read_text()


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def row(out: str, name: str) -> str:
    """The table row of example ``name`` (its second column)."""
    (line,) = [line for line in out.splitlines() if line.split()[1:2] == [name] and not line.startswith("FAILED")]
    return line
