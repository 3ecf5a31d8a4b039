"""onnxop --version: onnxop, wgpu-native and the packages, from a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

import numpy as np
import wgpu.backends.wgpu_native as native


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "onnxop_cli", *argv], capture_output=True, text=True, timeout=120)


def test_version_lists_onnxop_first_then_the_library_and_packages():
    done = run("--version")
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0] == f"onnxop {metadata.version('onnxop')}"
    found = dict(line.split(" ", 1) for line in lines)
    assert found["wgpu-native"] == ".".join(map(str, native.lib_version_info))
    assert found["wgpu-py"] == metadata.version("wgpu") and found["numpy"] == np.__version__
    assert {"onnx", "ml_dtypes", "typer", "rich"} <= set(found)


def test_version_json_is_one_document():
    done = run("--version", "--json")
    assert done.returncode == 0
    doc = json.loads(done.stdout)
    assert doc["status"] == "ok" and doc["versions"]["onnxop"] == metadata.version("onnxop")


def test_version_wins_over_a_command_and_its_errors():
    done = run("--version", "flatten")
    assert done.returncode == 0 and done.stdout.startswith("onnxop ")
