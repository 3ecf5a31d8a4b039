"""docs/operators.md's and docs/integer-arithmetic.md's examples run as
written: each page's python block makes the files, then every ``$`` line of
its console blocks runs in bash (``onnxop`` meaning this checkout's, stderr
merged in) and must print what the page shows."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

# The page's examples are under test, not a kernel: one backend (conftest).
ONE_BACKEND = True

REPO = Path(__file__).resolve().parents[2]
PAGE = (REPO / "docs" / "operators.md").read_text()
PAGES = ("operators.md", "integer-arithmetic.md")


def examples(page: str = PAGE) -> list[tuple[str, str]]:
    out = []
    for block in re.findall(r"```console\n(.*?)```", page, re.S):
        for part in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, _, expected = part.partition("\n")
            out.append((command.strip(), expected))
    return out


def test_page_has_an_example_of_each_operator():
    from onnxop_cli.ops import SPECS
    from onnxop_cli.ops.tensor_op import TensorOp

    shown = {shlex.split(c)[1] for c, _ in examples()}
    for page in ("indexed-operators.md", "integer-arithmetic.md"):  # the indexed and integer ones have their pages
        text = (REPO / "docs" / page).read_text()
        shown |= set(re.findall(r"^\$ onnxop ([a-z-]+)", text, re.M))
    tensor_ops = {s.command for s in SPECS.values() if issubclass(s.versions[0], TensorOp)}
    assert tensor_ops <= shown, tensor_ops - shown


@pytest.mark.parametrize("name", PAGES)
def test_examples_print_what_the_page_shows(tmp_path, backend, name):
    page = (REPO / "docs" / name).read_text()
    setup = re.search(r"```python\n(.*?)```", page, re.S)
    assert setup
    subprocess.run([sys.executable, "-c", setup.group(1)], cwd=tmp_path, check=True)
    (tmp_path / "padded").mkdir()
    from test_readme import check_line

    for command, expected in examples(page):
        check_line(command, expected, tmp_path, backend, compare=exact)


def exact(actual: str, expected: str) -> None:
    assert actual == expected
