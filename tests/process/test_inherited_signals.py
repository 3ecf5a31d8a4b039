"""The suite's children get the default signal dispositions even when pytest
was started with signals ignored (conftest.py): the signal tests would
otherwise test nohup, not onnxop."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def ignored_mask(status: str) -> int:
    return int(status.split("SigIgn:")[1].split()[0], 16)


def test_a_suite_started_with_signals_ignored_starts_children_with_the_defaults(tmp_path):
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "import subprocess, sys\n"
        "def test_child():\n"
        "    out = subprocess.run([sys.executable, '-c', \"print(open('/proc/self/status').read())\"],\n"
        "                         capture_output=True, text=True).stdout\n"
        "    print('MASK', out.split('SigIgn:')[1].split()[0])\n"
    )
    (tmp_path / "conftest.py").write_text(f"exec(open({str(TESTS / 'conftest.py')!r}).read())\n")
    script = f"trap '' INT HUP QUIT TERM; exec {sys.executable} -m pytest -q -s -p no:cacheprovider -n 0 test_probe.py"
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(TESTS)}, timeout=300)
    assert "1 passed" in done.stdout, done.stdout + done.stderr
    mask = int(done.stdout.split("MASK ")[1].split()[0], 16)
    for signum in (1, 2, 3, 15):  # SIGHUP, SIGINT, SIGQUIT, SIGTERM
        assert not mask & (1 << (signum - 1)), f"signal {signum} is ignored in the child: {mask:#x}"
