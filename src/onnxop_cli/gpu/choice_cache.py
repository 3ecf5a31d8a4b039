"""The file that keeps gpu/choose.py's measured answers between processes.

``$XDG_CACHE_HOME/onnxop/kernels.json`` (``~/.cache/onnxop/``): one entry
per key (``key``): the adapter, its driver, onnxop's version, the question's
name (none for the copy kernel's, whose entry came first) and a digest of its
candidates' WGSL, so a new driver, a new onnxop or an edited kernel measures
again.

The cache is a convenience, never a requirement: a file that cannot be
read or parsed is ignored (and rewritten), a damaged entry is dropped, and
one that cannot be written leaves the choice measured for this process only.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from . import kernels
from ..io.cache import cache_dir, write_atomic
from .device import Gpu

CACHE_FILE = "kernels.json"
CACHE_VERSION = 1
FIELDS = ("kernel", "answer")  # an entry's answer: the copy kernel's, a schedule question's


def cache_path() -> Path:
    return cache_dir() / CACHE_FILE


def key(gpu: Gpu, name: tuple[str, ...], texts: tuple[str, ...]) -> str:
    """An entry's key: adapter, driver, onnxop version, the question's
    ``name`` (one or none) and 12 hex digits of SHA-256 over ``texts``."""
    from .. import __version__

    h = hashlib.sha256()
    for text in texts:
        h.update(f"{text}\0".encode())
    info = gpu.info
    return json.dumps([info.our_backend, info.name, info.driver, __version__, *name, h.hexdigest()[:12]])


def read_entry(key: str) -> dict | None:
    """The valid entry under ``key``, if the file holds one."""
    return _load(cache_path()).get(key)


def write_entry(key: str, entry: dict) -> None:
    """Add ``entry`` under ``key`` with the time it was measured; atomically
    (a temporary file renamed over the old one), so a reader never sees half
    a file. Failure is not an error."""
    path = cache_path()
    entries = _load(path)
    entries[key] = entry | {"measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    text = json.dumps({"version": CACHE_VERSION, "entries": entries}, indent=1)
    write_atomic(path, text.encode())


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


def _valid_entry(entry: object) -> bool:
    """The schema of an entry: its answer (under one of FIELDS), a positive
    finite figure for each candidate, the answer among them, when measured;
    the copy kernel's candidates are known kernels."""
    if not isinstance(entry, dict) or not any(set(entry) == {f, "gbps", "measured"} for f in FIELDS):
        return False
    field = "kernel" if "kernel" in entry else "answer"
    value, gbps = entry[field], entry["gbps"]
    if not isinstance(value, str) or not isinstance(entry["measured"], str) or not isinstance(gbps, dict):
        return False
    if value not in gbps or (field == "kernel" and not set(gbps) <= set(kernels.KERNELS)):
        return False
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < float("inf") for v in gbps.values())
