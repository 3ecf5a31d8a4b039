"""README's commands run as written: the quick-start command (after its
install step, which test_wheel.py covers) and every ``console`` example,
whose printed output must match what onnxop prints now."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def marked_block(marker: str) -> str:
    m = re.search(rf"<!-- {marker} -->\s*```\w*\n(.*?)\n```", README, re.S)
    assert m, f"README has no block after <!-- {marker} -->"
    return m.group(1).strip()


def console_examples() -> list[tuple[str, str]]:
    examples = []
    for block in re.findall(r"```console\n(.*?)```", README, re.S):
        parts = re.split(r"^\$ ", block, flags=re.M)
        for part in parts[1:]:
            command, _, output = part.partition("\n")
            examples.append((command.strip(), output))
    return examples


def run_onnxop(command: str, cwd: Path, backend: str) -> subprocess.CompletedProcess:
    argv = shlex.split(command)
    assert argv[0] == "onnxop", command
    return subprocess.run(
        [sys.executable, "-m", "onnxop_cli", *argv[1:], "--backend", backend],
        cwd=cwd, capture_output=True, text=True,
    )


@pytest.fixture
def workdir(tmp_path) -> Path:
    shutil.copytree(REPO / "samples", tmp_path / "samples")
    return tmp_path


def test_quick_start_commands(workdir, backend):
    command = marked_block("main-command")
    install, *steps = [s.strip() for s in command.split("&&")]
    assert install == "pip install ."
    assert steps == ["onnxop doc-examples --check"]
    done = run_onnxop(steps[0], workdir, backend)
    assert done.returncode == 0, (steps[0], done.stdout, done.stderr)
    assert done.stdout.splitlines()[-1] == "17 passed, 0 failed"
    assert done.stderr == ""


def test_test_command_is_what_ci_runs():
    assert marked_block("test-command") == "pip install '.[test]' && python -m pytest"
    assert "test-command" in (REPO / ".ci" / "run").read_text()


@pytest.mark.parametrize("command,expected", console_examples(), ids=lambda v: v[:40] if isinstance(v, str) else "")
def test_console_examples_print_what_the_readme_shows(workdir, backend, command, expected):
    done = run_onnxop(command, workdir, backend)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected
