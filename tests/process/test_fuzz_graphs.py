"""scripts/fuzz_graphs.py, random graphs of data-movement nodes against onnx.reference bit for bit:
a few seeds through the backend under bands of 64 bytes, print mode and a split run (--others
onnxruntime --verify, its --json 'ran' checked) find nothing wrong and say how many they compared.
The fuzzer's real runs are longer (hundreds of seeds a configuration); this is its smoke test, run in
this process (tests/commands.py's run_script: the script's own runs are in process too)."""

from __future__ import annotations

from pathlib import Path

import pytest
from commands import run_script

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("args", [["--limits", "tiny"], ["--path", "shown"], ["--path", "cli", "--others"]])
def test_a_few_seeds_find_nothing_and_count_what_they_compared(backend, args):
    r = run_script(ROOT / "scripts" / "fuzz_graphs.py", "--seeds", "0-7", "--backend", backend, *args)
    assert r.returncode == 0, r.stdout + r.stderr
    summary = r.stdout.strip().splitlines()[-1]
    assert " 0 failed" in summary and int(summary.split(" compared")[0].split()[-1]) >= 3, summary


def test_a_split_run_leaving_out_a_relu_nothing_reads_is_no_failure(backend):
    """Seed 5038 draws Relu(Cast(c)) whose output nothing reads: run --others leaves its region out (onnxruntime
    takes no model without outputs) and --json's 'ran' does not count it, which the fuzzer's check of 'ran'
    called a failure ('ran counts Relu 0 times, the model has 1': 6 of seeds 5000-5079)."""
    r = run_script(ROOT / "scripts" / "fuzz_graphs.py", "--seeds", "5038", "--backend", backend, "--path", "cli",
                   "--others")
    assert r.returncode == 0 and "1 compared, 0 failed" in r.stdout, r.stdout + r.stderr
