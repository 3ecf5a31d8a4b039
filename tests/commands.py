"""Several onnxop commands in one real process.

A test of what commands print, exit with and write -- not of the process
itself -- runs them through ``run_commands``: one ``python`` process, started
once, runs each command line through onnxop's entry (``onnxop_cli.cli.main.run``,
what ``onnxop`` runs once its handlers are in place) in the given folder, on
real files, and reports each one's exit code, stdout and stderr. A process
start (Python, numpy, onnx, the device) is about a CPU second on two cores:
one for all the commands instead of one for each.

What a process is needed for -- signals, pipes, the exit status at
interpreter exit, a closed descriptor, a memory cap, stdin -- keeps one
``onnxop`` process per command (subprocess.run).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# Each command: chdir to its folder, stdout and stderr captured as a pipe would
# (no terminal; bytes written to .buffer kept), one JSON line per result.
_DRIVER = r"""
import io, json, os, sys
from onnxop_cli.cli.main import run
real_out = sys.stdout
for cwd, argv in json.loads(sys.stdin.read()):
    os.chdir(cwd)
    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="surrogateescape", newline="") for _ in "12")
    sys.stdout, sys.stderr = out, err
    try:
        code = run(argv)
    finally:
        sys.stdout, sys.stderr = real_out, sys.__stderr__
    out.flush(); err.flush()
    texts = [s.buffer.getvalue().decode("utf-8", "surrogateescape") for s in (out, err)]
    real_out.write(json.dumps([code, *texts]) + "\n")
    real_out.flush()
"""


def run_commands(commands: list[tuple[Path, list]], text: bool = True, env: dict | None = None,
                 timeout: float = 300) -> list[subprocess.CompletedProcess]:
    """Run ``(folder, argv)`` commands (argv without ``onnxop``) in order in
    one process: a CompletedProcess (code, stdout and stderr: str, or the
    bytes written when ``text`` is false) each. ``env``: the process's
    environment (this one's by default)."""
    job = json.dumps([[str(cwd), [str(a) for a in argv]] for cwd, argv in commands])
    done = subprocess.run([sys.executable, "-c", _DRIVER], input=job, capture_output=True, text=True, env=env,
                          errors="surrogateescape", timeout=timeout)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and len(lines) == len(commands), done.stdout + done.stderr
    results = []
    for (_, argv), (code, out, err) in zip(commands, map(json.loads, lines)):
        if not text:
            out, err = (s.encode("utf-8", "surrogateescape") for s in (out, err))
        results.append(subprocess.CompletedProcess(["onnxop", *argv], code, out, err))
    return results
