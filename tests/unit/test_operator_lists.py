"""The README names every operator onnxop runs, and only those: its opening
lists (in bold) against the registry, so an operator added as one module
and one registry entry cannot be left out of what a reader sees first, and
a retired one cannot linger there."""

from __future__ import annotations

import re
from pathlib import Path

from onnxop_cli.ops import SPECS

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_opening_names_every_operator_and_no_other():
    opening = README.read_text().split("\n## ", 1)[0]
    lists = [bold.replace("\n", " ") for bold in re.findall(r"\*\*(.+?)\*\*", opening, re.S) if "," in bold]
    listed = [name.strip() for bold in lists for name in bold.split(",")]
    operators = {spec.versions[0].op_type for spec in SPECS.values()}
    assert len(listed) == len(set(listed)), sorted(n for n in listed if listed.count(n) > 1)
    assert sorted(set(listed) - operators) == [], "named in the README but not an operator onnxop runs"
    assert sorted(operators - set(listed)) == [], "operators onnxop runs that the README's opening does not name"
