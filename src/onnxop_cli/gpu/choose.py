"""Which copy kernel this adapter runs fastest: measured once, then cached.

The first time onnxop meets an adapter (name, backend, driver version) it
times every kernel the adapter can run on one streaming chunk, in a few
interleaved rounds, checks each kernel's output byte for byte, and keeps
the one with the best time. The best, not the median: on a shared machine
other processes only ever slow a round down, so a kernel's fastest round is
the closest to what it can do (medians of 3-5 short rounds picked the
slower kernel under load). The answer is cached in
``$XDG_CACHE_HOME/onnxop/kernels.json`` (``~/.cache/onnxop/``), keyed by
the adapter, its driver, onnxop's version and a digest of the kernels' WGSL,
so a new driver, a new onnxop or an edited kernel measures again. ``--kernel NAME`` / ``$ONNXOP_KERNEL`` force a
kernel; ``onnxop bench --tune`` measures again and rewrites the entry.

The cache is a convenience, never a requirement: a file that cannot be
read or parsed is ignored (and rewritten), one that cannot be written
leaves the choice measured for this process only.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError
from . import kernels
from ..io.cache import cache_dir, write_atomic
from .device import Gpu

ENV_KERNEL = "ONNXOP_KERNEL"
CACHE_FILE = "kernels.json"
CACHE_VERSION = 1
SIZE = 4 << 20  # one streaming chunk (copy.DEFAULT_CHUNK): what a real run moves per dispatch
ROUNDS = 5  # after one untimed warm-up run of each kernel

_forced: str | None = None


@dataclass(frozen=True)
class Choice:
    """The kernel chosen for an adapter and why: ``measured`` (in this
    process), ``cached`` (measured before, read from the cache file),
    ``forced`` (--kernel / $ONNXOP_KERNEL) or ``only`` (one kernel
    available: nothing to measure). ``gbps``: best-round GB/s per kernel when
    measured or cached."""

    kernel: str
    reason: str
    gbps: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0  # the calibration's cost, when measured here

    def document(self) -> dict:
        """For --json: the figures are in `onnxop info` and `onnxop bench`."""
        return {"name": self.kernel, "reason": self.reason}

    def describe(self) -> str:
        figures = ", ".join(f"{k} {v:.2f} GB/s" for k, v in self.gbps.items())
        return f"{self.kernel} ({self.reason}{': ' + figures if figures else ''})"


def force(name: str | None) -> None:
    """Force kernel ``name`` for this process (None: back to $ONNXOP_KERNEL,
    else the measured choice). An unknown name is refused here; one the
    adapter cannot run is refused when the adapter is known."""
    global _forced
    name = (name or "").strip() or None
    if name is not None and name not in kernels.KERNELS:
        raise UsageError(f"unknown kernel {name!r}; choose one of {', '.join(kernels.KERNELS)}")
    _forced = name


def forced() -> str | None:
    name = _forced or os.environ.get(ENV_KERNEL, "").strip() or None
    if name is not None and name not in kernels.KERNELS:
        raise UsageError(f"${ENV_KERNEL}: unknown kernel {name!r}; choose one of {', '.join(kernels.KERNELS)}")
    return name


def choice(gpu: Gpu, *, tune: bool = False) -> Choice:
    """The kernel for ``gpu``: forced, else cached, else measured now (and
    cached). ``tune`` measures again whatever the cache holds."""
    name = forced()
    if name is not None:
        kernels.require(gpu, name)
        return Choice(name, "forced")
    found = gpu.kernel_choice
    if found is not None and not tune:
        return found
    candidates = kernels.available(gpu)
    if len(candidates) == 1:
        found = Choice(candidates[0].name, "only")
    else:
        found = None if tune else _read_cache(gpu)
        if found is None:
            found = measure(gpu, candidates)
            _write_cache(gpu, found)
    gpu.kernel_choice = found
    return found


def kernel_for(gpu: Gpu, name: str | None = None) -> kernels.Kernel:
    """The kernel a copy on ``gpu`` runs with: ``name`` if given (refused
    with a UsageError naming the available ones if this adapter cannot run
    it), else the one measured fastest (or forced). The
    choice is kept as ``gpu.kernel_used`` for the --json documents."""
    found = Choice(kernels.require(gpu, name).name, "forced") if name is not None else choice(gpu)
    gpu.kernel_used = found
    return kernels.KERNELS[found.kernel]


def measure(gpu: Gpu, candidates: list[kernels.Kernel]) -> Choice:
    """Time each kernel on one chunk, interleaved, ``ROUNDS`` rounds after a
    warm-up (best round counts), and check each one's output byte for byte (a kernel that writes
    a wrong byte raises GpuError: better no result than a wrong one)."""
    from .measure import Bench

    started = time.perf_counter()
    bench = Bench(gpu, SIZE, streaming=False, kernels=candidates)
    try:
        times: dict[str, list[float]] = {k.name: [] for k in candidates}
        for k in candidates:
            bench.kernel(k.name)
        for r in range(ROUNDS):
            order = candidates[r % len(candidates) :] + candidates[: r % len(candidates)]
            for k in order:  # rotated, so no kernel always runs right after another
                times[k.name].append(bench.kernel(k.name))
        for k in candidates:
            bench.poison()
            bench.kernel(k.name)
            bench.verify(f"kernel {k.name}")
    finally:
        bench.close()
    gbps = {name: round(SIZE / min(ts) / 1e9, 2) for name, ts in times.items()}
    best = max(candidates, key=lambda k: gbps[k.name]).name
    return Choice(best, "measured", gbps, time.perf_counter() - started)


# --------------------------------------------------------------------- cache


def cache_path() -> Path:
    return cache_dir() / CACHE_FILE


def kernels_digest() -> str:
    """12 hex digits of SHA-256 over every copy kernel's name and WGSL text."""
    from .shaders import shader_source

    h = hashlib.sha256()
    for k in kernels.KERNELS.values():
        h.update(f"{k.name}\0{shader_source(k.shader)}\0".encode())
    return h.hexdigest()[:12]


def cache_key(gpu: Gpu) -> str:
    from .. import __version__

    info = gpu.info
    return json.dumps([info.our_backend, info.name, info.driver, __version__, kernels_digest()])


def _load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    if not isinstance(data, dict) or set(data) != {"version", "entries"} or data["version"] != CACHE_VERSION:
        return {}
    entries = data["entries"]
    if not isinstance(entries, dict):
        return {}
    # a damaged entry (a letter changed in a key or a kernel's name) is dropped: measured again, rewritten
    return {k: v for k, v in entries.items() if _valid_entry(v)}


ENTRY_KEYS = {"kernel", "gbps", "measured"}


def _valid_entry(entry: object) -> bool:
    """The schema of one adapter's entry: exactly ENTRY_KEYS; a known kernel;
    a positive finite figure for each of known kernels, the chosen one among them."""
    if not isinstance(entry, dict) or set(entry) != ENTRY_KEYS:
        return False
    kernel, gbps, measured = entry["kernel"], entry["gbps"], entry["measured"]
    if not isinstance(kernel, str) or kernel not in kernels.KERNELS or not isinstance(measured, str):
        return False
    if not isinstance(gbps, dict) or kernel not in gbps or not set(gbps) <= set(kernels.KERNELS):
        return False
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < float("inf") for v in gbps.values())


def _read_cache(gpu: Gpu) -> Choice | None:
    entry = _load(cache_path()).get(cache_key(gpu))
    if entry is None:
        return None
    name, gbps = entry["kernel"], {k: float(v) for k, v in entry["gbps"].items()}
    able = {k.name for k in kernels.available(gpu)}
    if set(gbps) != able or name not in able:  # measured for other kernels than this adapter runs
        return None
    return Choice(name, "cached", gbps)


def _write_cache(gpu: Gpu, found: Choice) -> None:
    """Add this adapter's entry; atomically (a temporary file renamed over the
    old one), so a reader never sees half a file. Failure is not an error."""
    path = cache_path()
    entries = _load(path)
    entries[cache_key(gpu)] = {
        "kernel": found.kernel,
        "gbps": found.gbps,
        "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    text = json.dumps({"version": CACHE_VERSION, "entries": entries}, indent=1)
    write_atomic(path, text.encode())
