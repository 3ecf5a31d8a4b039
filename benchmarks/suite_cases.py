"""The test suite's time on the cases it had at an earlier commit, against
that commit's own suite, interleaved (issue 19's "same cases, before and
after").

A case is a test id with its backend parameter and its folder stripped
(tests moved from tests/ to tests/<kind>/, and the CLI tests stopped fanning
out over four backends): the old commit's distinct cases are collected, and
HEAD's items whose case is among them are selected (``pytest @FILE``). Each
round runs the old suite (``PYTHONPATH`` = its src, in a worktree of that
commit) and HEAD's selection, in alternating order, with ``-n auto`` as the
README's command does, and prints wall time, CPU time (user + system of pytest
and every process it started) and the load. Run from the repository root:

    python benchmarks/suite_cases.py --old a61dd22 --rounds 2

Failures do not stop the timing; their counts are printed (the old suite's
wheel tests fail when its package is only on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BACKEND = r"(dawn-vulkan|dawn-gl|vulkan|gl)"


def case(node_id: str) -> str:
    """``tests/gpu/test_x.py::test_y[vulkan-3]`` -> ``test_x.py::test_y[3]``."""
    path, _, rest = node_id.partition("::")
    m = re.match(r"(.*?)\[(.*)\]$", rest)
    if m:
        params = re.sub(r"-" + BACKEND + r"(?=-|$)", "", re.sub(r"^" + BACKEND + r"(-|$)", "", m.group(2)))
        rest = f"{m.group(1)}[{params}]" if params else m.group(1)
    return path.split("/")[-1] + "::" + rest


def collect(cwd: Path, env: dict[str, str]) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                          cwd=cwd, env=env, capture_output=True, text=True)
    return [line.strip() for line in done.stdout.splitlines() if "::" in line]


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """(wall s, CPU s of the process tree, pytest's last line)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    last = (done.stdout.strip().splitlines() or [""])[-1].strip("= ")
    return wall, cpu, last


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", required=True, help="the earlier commit")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args(argv)
    cpu_name = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    with tempfile.TemporaryDirectory(prefix="suite-cases-") as tmp:
        old = Path(tmp) / "old"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(old), args.old], check=True)
        try:
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            old_env = {**env, "PYTHONPATH": str(old / "src")}
            old_ids = collect(old, old_env)
            new_ids = collect(REPO, env)
            wanted = {case(i) for i in old_ids}
            chosen = [i for i in new_ids if case(i) in wanted]
            found = {case(i) for i in chosen}
            selection = Path(tmp) / "selection.txt"
            selection.write_text("\n".join(chosen) + "\n")
            print(f"{args.old}: {len(old_ids)} items, {len(wanted)} cases; HEAD: {len(new_ids)} items, "
                  f"{len(chosen)} of them for {len(found)} of those cases ({len(wanted - found)} renamed or gone)")
            print(f"CPU: {cpu_name}, {os.cpu_count()} CPUs")
            runs = {
                "old": ([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "auto"], old, old_env),
                "HEAD": ([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "auto", f"@{selection}"],
                         REPO, env),
            }
            for r in range(args.rounds):
                order = ["old", "HEAD"] if r % 2 == 0 else ["HEAD", "old"]
                got = {}
                for name in order:
                    load = os.getloadavg()[0]
                    got[name] = timed(*runs[name])
                    wall, cpu, last = got[name]
                    print(f"round {r + 1} {name:4s}: wall {wall:7.1f} s, CPU {cpu:7.1f} s, load at start {load:.2f}: {last}")
                print(f"round {r + 1} HEAD / old: wall {got['HEAD'][0] / got['old'][0]:.2f}x, "
                      f"CPU {got['HEAD'][1] / got['old'][1]:.2f}x")
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(old)], check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
