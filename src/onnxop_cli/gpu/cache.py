"""onnxop's folder in the user's cache ($XDG_CACHE_HOME/onnxop, else
~/.cache/onnxop) and the one way files are written there: atomically (a
temporary file renamed over the old one), so a reader never sees half a
file. Everything in it can be deleted at any time; onnxop only re-measures
or re-parses what it finds missing."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(root) if root and os.path.isabs(root) else Path.home() / ".cache"
    return base / "onnxop"


def write_atomic(path: Path, data: bytes) -> bool:
    """Replace ``path`` with ``data``; False (nothing changed) when the
    folder cannot be written: a cache is a convenience, never an error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return False
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
