"""How the whole-process benchmarks measure a process (whole_process.py,
graph_chain.py, view_ops.py, ops_whole_process.py, engines_startup.py): the
onnxop command line, sizes, input files and a byte comparison of outputs, a
launcher that starts every measured process and reports its wall time, peak
RSS and the CPU other processes took meanwhile, the median (min-max) of
rounds, and the adapter onnxop chooses."""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = sys.executable
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def onnxop_cmd() -> list[str]:
    exe = Path(PY).with_name("onnxop")
    return [str(exe)] if exe.exists() else [PY, "-m", "onnxop_cli"]


def _importable(module: str) -> bool:
    return subprocess.run([PY, "-c", f"import {module}"], capture_output=True).returncode == 0


def parse_size(text: str) -> int:
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    return int(text[:-1]) * UNITS[text[-1]] if text[-1] in UNITS else int(text)


def human(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


# --------------------------------------------------------------------- inputs


def make_npy(path: Path, nbytes: int, seed: int = 0) -> None:
    """A float32 .npy of ``nbytes`` data bytes, shape (n/4096, 16, 64) or
    (n/64, 16) for small ones, random bit patterns, written in blocks."""
    import numpy as np

    count = nbytes // 4
    shape = (count // 1024, 16, 64) if count >= 1024 and count % 1024 == 0 else (count // 16, 16)
    assert math.prod(shape) * 4 == nbytes, "sizes must be multiples of 64 bytes"
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<f4", "fortran_order": False, "shape": shape}
        )
        block = 64 << 20
        for offset in range(0, nbytes, block):
            f.write(rng.integers(0, 256, min(block, nbytes - offset), dtype=np.uint8).tobytes())


def data_offset(path: Path) -> int:
    import numpy as np

    with open(path, "rb") as f:
        np.lib.format.read_magic(f)
        np.lib.format.read_array_header_1_0(f)
        return f.tell()


def same_data(a: Path, b: Path) -> bool:
    """Same tensor bytes (the headers differ: the shape changes)."""
    with open(a, "rb") as fa, open(b, "rb") as fb:
        fa.seek(data_offset(a))
        fb.seek(data_offset(b))
        while True:
            x, y = fa.read(64 << 20), fb.read(64 << 20)
            if x != y:
                return False
            if not x:
                return True


# --------------------------------------------------------------------- running


# A child's ru_maxrss starts at its parent's RSS when it was forked (Linux
# keeps the high-water mark across exec), and this script holds numpy and
# test data. So every measured process is started by a small launcher
# process, itself started before anything big is loaded; its own ~10 MB is
# the floor of every RSS figure.
#
# The launcher also reports the CPU time other processes took while the
# child ran (the machine's busy time from /proc/stat, less the child's own):
# on a shared machine that says which rounds were disturbed.
LAUNCHER = r"""
import json, os, subprocess, sys, time
def busy():
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return 0.0
for line in sys.stdin:
    cmd = json.loads(line)
    os.sync()
    b0 = busy()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    other = max(0.0, busy() - b0 - usage.ru_utime - usage.ru_stime)
    print(json.dumps([wall, usage.ru_maxrss * 1024, status, err[-500:], other]), flush=True)
"""
_launcher: subprocess.Popen | None = None


def start_launcher() -> None:
    global _launcher
    if _launcher is None:
        _launcher = subprocess.Popen(
            [PY, "-S", "-c", LAUNCHER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )


OTHER_CPU: list[float] = []  # per process run: CPU seconds other processes took meanwhile


def run(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one process. Dirty pages left by
    the previous run are flushed first (os.sync in the launcher, outside the
    timing), so no tool pays for another's writes."""
    start_launcher()
    assert _launcher is not None and _launcher.stdin and _launcher.stdout
    _launcher.stdin.write(json.dumps(cmd) + "\n")
    _launcher.stdin.flush()
    wall, rss, status, err, other = json.loads(_launcher.stdout.readline())
    if status != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({status}): {err.strip()}")
    OTHER_CPU.append(other)
    return wall, rss


class Stat:
    def __init__(self) -> None:
        self.times: list[float] = []
        self.rss = 0

    def add(self, wall: float, rss: int) -> None:
        self.times.append(wall)
        self.rss = max(self.rss, rss)

    def per_round(self, other: Stat) -> float:
        """Median of this tool's time over the other's, round by round."""
        return statistics.median(a / b for a, b in zip(self.times, other.times))

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    def cell(self) -> str:
        t = self.times
        spread = f" ({min(t):.2f}-{max(t):.2f})" if len(t) > 1 else ""
        return f"{self.median:.2f} s{spread}"


def _seconds(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def adapter_line(backend: str | None, engine: str = "wgpu") -> str:
    """The adapter onnxop chooses on ``engine`` and its driver (name and version)."""
    cmd = onnxop_cmd() + (["--backend", backend] if backend else []) + ["--engine", engine, "info", "--json"]
    try:
        chosen = json.loads(subprocess.run(cmd, capture_output=True, text=True).stdout)["chosen"]
    except (ValueError, KeyError, TypeError):
        return "unknown adapter"
    # the name already says the API and the adapter type: "llvmpipe (...) (Vulkan, CPU)"
    return f"{chosen['name']} (--backend {chosen['backend']}), driver {chosen['driver']}"


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
