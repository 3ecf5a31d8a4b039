"""docs/cli-details.md's examples run as written: each console
block in a fresh copy of samples/, on one backend (CLI examples, not a
kernel test), with test_readme.py's rules: only onnxop and echo, stderr
merged, the output exactly as shown (JSON compared as data, its
machine-dependent values masked)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from test_readme import REPO, check_line

DOC = (REPO / "docs" / "cli-details.md").read_text()
BACKEND = os.environ.get("ONNXOP_TEST_BACKENDS", "vulkan").split(",")[0]


def blocks() -> list[list[tuple[str, str]]]:
    found = []
    for m in re.finditer(r"```console\n(.*?)```", DOC, re.S):
        parts = re.split(r"^\$ ", m.group(1), flags=re.M)
        assert parts[0] == ""
        found.append([(p.partition("\n")[0].strip(), p.partition("\n")[2]) for p in parts[1:]])
    return found


BLOCKS = blocks()


def test_every_item_has_an_example():
    commands = [c for block in BLOCKS for c, _ in block]
    for needed in ("onnxop compare", "--format pb", "--keep-going", "-o all.npz", "--brief", "--precision",
                   "--edgeitems", "-m '", "--kernel storage", "--any-type", "--repeats ''", "opt.pb", "seq.pb",
                   "--graph"):
        assert any(needed in c for c in commands), needed


@pytest.mark.parametrize("lines", BLOCKS, ids=[b[0][0][:50] for b in BLOCKS])
def test_the_examples_print_what_the_page_shows(tmp_path: Path, lines):
    shutil.copytree(REPO / "samples", tmp_path / "samples")
    for command, expected in lines:
        check_line(command, expected, tmp_path, BACKEND)
