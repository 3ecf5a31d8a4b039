"""What the input-file tests share (test_inputs_opened_once.py,
test_input_strings.py): the onnxop command line, and the names a folder
holds after a run."""

from __future__ import annotations

import sys
from pathlib import Path

ONNXOP = [sys.executable, "-m", "onnxop_cli"]


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())
