"""onnxop's folder in the user's cache ($XDG_CACHE_HOME/onnxop, else
~/.cache/onnxop) and the one way files are written there: through the one
atomic writer (atomic.py: a temporary file renamed over the old one with
signals held, removed on any failure or signal), so a reader never sees half
a file. Everything in it can be deleted at any time; onnxop only re-measures
or re-parses what it finds missing."""

from __future__ import annotations

import os
from pathlib import Path

from ..core import signals
from ..errors import OnnxopError
from .atomic import atomic_output


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(root) if root and os.path.isabs(root) else Path.home() / ".cache"
    return base / "onnxop"


def write_atomic(path: Path, data: bytes) -> bool:
    """Replace ``path`` with ``data``; False (nothing changed) when the
    folder cannot be written: a cache is a convenience, never an error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(path) as f:
            os.fchmod(f.fileno(), 0o600)  # ours alone: read_private trusts no other writer
            f.write(data)
    except (OSError, OnnxopError):
        return False
    # atomic_output holds signals from the rename until the next checkpoint
    # (an output's commit); a cache file is not an output: the work goes on,
    # and a signal that came meanwhile ends it here, with the file complete.
    signals.checkpoint()
    return True


def read_private(path: Path) -> bytes | None:
    """``path``'s bytes if it is a regular file of ours that no one else can
    write (it may hold a pickle), else None."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return None
            return f.read()
    except OSError:
        return None
