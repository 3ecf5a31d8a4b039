"""docs/safety-writes.md's console examples run, in a fresh folder with
the samples, and print what the page shows (as the README's do)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "safety-writes.md"


def examples() -> list[tuple[str, str]]:
    found = []
    for block in re.findall(r"```console\n(.*?)```", PAGE.read_text(), re.S):
        for part in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, _, output = part.partition("\n")
            found.append((command.strip(), output))
    return found


@pytest.mark.parametrize("command, shown", examples(), ids=lambda v: v[:50] if isinstance(v, str) else "")
def test_page_example(tmp_path, command, shown):
    shutil.copytree(ROOT / "samples", tmp_path / "samples")
    env = {**os.environ, "ONNXOP_BACKEND": "vulkan", "PATH": f"{Path(os.sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.stdout + done.stderr == shown or done.stderr + done.stdout == shown, (done.stdout, done.stderr)
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())  # nothing left behind
