"""Two checkouts of onnxop A/B: every operator's speed and the start-up, in
whole processes taken in turn (A B A B ...), so a refactor can be held to
"not slower" against the commit before it.

Each checkout needs its own environment with onnxop installed from it
(``python -m venv T/.venv && T/.venv/bin/pip install -e T``): the shaders
are a package of the install, so one interpreter cannot hold two trees.

Per round, each tree runs ``benchmarks/ops_speed.py --rounds 1`` (its own
copy, every operator through the API on a float32-sized output, see that
file) and ``onnxop flatten`` of a 4 KiB file as a whole process (the
start-up). The figure per operator is the median over rounds of the ratio
B/A of its GB/s taken in the same round (> 1: B is faster), with the spread
of those per-round ratios (min .. max) as the noise; the start-up likewise
as A/B of wall seconds (> 1: B starts faster). The CPU and the load per
round are printed with the table. Both trees' modules are compiled first
(``compiled``), so the start-up compares code, not bytecode caches.

    python benchmarks/trees_ab.py /work/old /work/new --backend vulkan --size 16M --rounds 5
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ops_whole_process import cpu, load  # noqa: E402  (the same CPU name and load as the other benchmarks)

_ROW = re.compile(r"^\| (?P<name>[^|]+?) \| (?P<gbps>[0-9.]+) \| (?P<base>[0-9.]+) \|")
TRANSPOSE = "transpose 2-D float32 (ops_speed.py's yardstick, the gather kernel)"


def python_of(tree: Path) -> str:
    py = tree / ".venv" / "bin" / "python"
    if not py.exists():
        raise SystemExit(f"{tree}: no .venv with onnxop installed from it (python -m venv {tree}/.venv && "
                         f"{tree}/.venv/bin/pip install -e {tree})")
    return str(py)


def compiled(tree: Path) -> None:
    """Write the bytecode of ``tree``'s package, as pip does for a wheel: an
    editable install under $PYTHONDONTWRITEBYTECODE keeps what some earlier
    run left, and a tree with fewer cached modules compiled them in every
    process (A/B start-ups of 1.21-1.25 between two trees of the same code)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([python_of(tree), "-m", "compileall", "-q", str(tree / "src")], env=env, check=True,
                   stdout=subprocess.DEVNULL, timeout=600)


def ops_round(tree: Path, backend: str | None, size: str, only: str) -> dict[str, float]:
    """One ops_speed.py round in ``tree``: operator -> GB/s by output bytes,
    and the transpose ops_speed.py runs after every case (the median of them)."""
    cmd = [python_of(tree), str(tree / "benchmarks" / "ops_speed.py"), "--rounds", "1", "--size", size]
    if backend:
        cmd += ["--backend", backend]
    if only:
        cmd += ["--only", only]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if out.returncode:
        raise SystemExit(f"{tree}: ops_speed.py exited {out.returncode}: {out.stderr.strip()[-400:]}")
    rows, yardstick = {}, []
    for line in out.stdout.splitlines():
        m = _ROW.match(line)
        if m:
            rows[m["name"]] = float(m["gbps"])
            yardstick.append(float(m["base"]))
    if yardstick:  # the transpose run beside every case: its median is the transpose's figure
        rows[TRANSPOSE] = statistics.median(yardstick)
    return rows


def startup(tree: Path, backend: str | None, path: Path, out: Path) -> float:
    """Wall seconds of ``onnxop flatten`` of a 4 KiB file, the whole process."""
    cmd = [str(tree / ".venv" / "bin" / "onnxop"), "flatten", str(path), "--axis", "1", "-o", str(out)]
    if backend:
        cmd += ["--backend", backend]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    t = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(f"{tree}: onnxop flatten exited {done.returncode}: {done.stderr.strip()[-400:]}")
    return t


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("a", type=Path, help="the baseline checkout")
    p.add_argument("b", type=Path, help="the checkout measured against it")
    p.add_argument("--backend", default=None)
    p.add_argument("--size", default="16M")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--only", default="", help="passed to ops_speed.py")
    a = p.parse_args(argv)
    trees = (a.a.resolve(), a.b.resolve())
    for tree in trees:
        compiled(tree)
    ops: list[list[dict[str, float]]] = [[], []]
    starts: list[list[float]] = [[], []]
    loads = []
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "small.npy"
        np.save(small, np.arange(1024, dtype=np.float32).reshape(32, 32))
        for r in range(a.rounds):
            loads.append(load())
            order = (0, 1) if r % 2 == 0 else (1, 0)
            for k in order:
                ops[k].append(ops_round(trees[k], a.backend, a.size, a.only))
                starts[k].append(startup(trees[k], a.backend, small, Path(tmp) / f"out{k}-{r}.npy"))
    med = statistics.median
    lines = [
        f"Command: `python benchmarks/trees_ab.py A B --backend {a.backend or 'auto'} --size {a.size} --rounds "
        f"{a.rounds}`; A = {trees[0]}, B = {trees[1]}; CPU {cpu()}; {os.cpu_count()} CPUs; load (1 min) per round "
        f"{', '.join(loads)}; A and B alternate, the first of each round alternating too",
        "",
        "| operator (case) | A GB/s | B GB/s | B/A (median of rounds) | B/A min .. max |",
        "|---|---|---|---|---|",
    ]
    for name in ops[0][0]:
        ratios = [b[name] / x[name] for x, b in zip(ops[0], ops[1]) if name in b and x[name] > 0]
        lines.append(f"| {name} | {med(x[name] for x in ops[0]):.2f} | {med(b.get(name, 0.0) for b in ops[1]):.2f} "
                     f"| {med(ratios):.2f} | {min(ratios):.2f} .. {max(ratios):.2f} |")
    ratios = [x / b for x, b in zip(starts[0], starts[1])]
    lines.append(f"| start-up: flatten 4 KiB, whole process (A/B of seconds) | {med(starts[0]):.3f} s "
                 f"| {med(starts[1]):.3f} s | {med(ratios):.2f} | {min(ratios):.2f} .. {max(ratios):.2f} |")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
