"""The file that keeps gpu/choose.py's measured choices between processes.

``$XDG_CACHE_HOME/onnxop/kernels.json`` (``~/.cache/onnxop/``): one entry
per key, the copy kernel's keyed by the adapter, its driver, onnxop's
version and a digest of the kernels' WGSL (``cache_key``), a schedule
question's by the same plus its name and its candidates' WGSL digest
(``answer_key``), so a new driver, a new onnxop or an edited kernel
measures again.

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
ENTRY_KEYS = {"kernel", "gbps", "measured"}


def cache_path() -> Path:
    return cache_dir() / CACHE_FILE


def kernels_digest() -> str:
    """12 hex digits of SHA-256 over every copy kernel's name and WGSL text."""
    h = hashlib.sha256()
    for k in kernels.KERNELS.values():
        h.update(f"{k.name}\0{k.wgsl}\0".encode())
    return h.hexdigest()[:12]


def cache_key(gpu: Gpu) -> str:
    """The copy kernel's entry: adapter, driver, onnxop version, kernels' digest."""
    from .. import __version__

    info = gpu.info
    return json.dumps([info.our_backend, info.name, info.driver, __version__, kernels_digest()])


def answer_key(gpu: Gpu, name: str, shaders: tuple[str, ...], texts: tuple[str, ...] = ()) -> str:
    """The copy kernel's key rules: adapter, driver, onnxop version, the
    question ``name`` and a digest of its candidates' WGSL: the files
    ``shaders`` and the rendered ``texts``."""
    from .. import __version__
    from .shaders import shader_source

    h = hashlib.sha256()
    for shader in shaders:
        h.update(f"{shader}\0{shader_source(shader)}\0".encode())
    for text in texts:
        h.update(f"{text}\0".encode())
    info = gpu.info
    return json.dumps([info.our_backend, info.name, info.driver, __version__, name, h.hexdigest()[:12]])


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
    return _valid_kernel_entry(entry) or _valid_answer_entry(entry)


def _valid_kernel_entry(entry: object) -> bool:
    """The schema of one adapter's entry: exactly ENTRY_KEYS; a known kernel;
    a positive finite figure for each of known kernels, the chosen one among them."""
    if not isinstance(entry, dict) or set(entry) != ENTRY_KEYS:
        return False
    kernel, gbps, measured = entry["kernel"], entry["gbps"], entry["measured"]
    if not isinstance(kernel, str) or kernel not in kernels.KERNELS or not isinstance(measured, str):
        return False
    if not isinstance(gbps, dict) or kernel not in gbps or not set(gbps) <= set(kernels.KERNELS):
        return False
    return _figures(gbps)


def _valid_answer_entry(entry: object) -> bool:
    """A question's entry: an answer, a figure per candidate, when measured."""
    if not isinstance(entry, dict) or set(entry) != {"answer", "gbps", "measured"}:
        return False
    value, gbps = entry["answer"], entry["gbps"]
    return isinstance(value, str) and isinstance(entry["measured"], str) and _figures(gbps) and value in gbps


def _figures(gbps: object) -> bool:
    """A positive finite figure for each name."""
    return isinstance(gbps, dict) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < float("inf") for v in gbps.values())
