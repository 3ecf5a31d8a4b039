"""docs/safety-inputs.md's examples run as written: each ``$`` line of a
``console`` block in bash, in a copy of samples/, stderr merged into stdout;
the printed text must match exactly."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "safety-inputs.md").read_text()
ALLOWED = {"onnxop", "echo", "head"}


def examples() -> list[tuple[str, str]]:
    found = []
    for m in re.finditer(r"```console\n(.*?)```", DOC, re.S):
        for part in re.split(r"^\$ ", m.group(1), flags=re.M)[1:]:
            command, _, output = part.partition("\n")
            found.append((command.strip(), output))
    return found


def test_the_page_has_examples():
    assert len(examples()) >= 3


@pytest.mark.parametrize("command, expected", examples(), ids=[c for c, _ in examples()])
def test_example(tmp_path, command, expected):
    for segment in re.split(r"&&|[|;]", command):
        words = shlex.split(segment)
        assert words and words[0] in ALLOWED, command
    shutil.copytree(REPO / "samples", tmp_path / "samples")
    script = f'onnxop() {{ "{sys.executable}" -m onnxop_cli "$@"; }}\n{{ {command}\n}} 2>&1'
    env = {**os.environ, "ONNXOP_BACKEND": "vulkan", "COLUMNS": "80"}
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == expected
