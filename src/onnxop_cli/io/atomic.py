"""Write-then-rename, so a failure never leaves a partial or clobbered file.

The temporary file lives in the target's own folder (so the rename stays on
one filesystem and is atomic) and is removed on any failure, Ctrl-C included.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from .. import signals
from ..errors import OutputError, UsageError

TMP_SUFFIX = ".onnxop-tmp"


def check_output_path(path: Path) -> None:
    """Refuse, before any work is done, an output that cannot be written."""
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise UsageError(f"{path}: output path is a folder; give a file name")
    if not parent.is_dir():
        raise UsageError(f"{path}: output folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"{path}: output folder {parent} is not writable")


@contextmanager
def atomic_output(path: Path) -> Iterator[BinaryIO]:
    """Yield a temporary file next to ``path``; rename it over ``path`` on success."""
    path = Path(path)
    check_output_path(path)
    try:
        fd, tmp_name = tempfile.mkstemp(
            dir=path.parent if str(path.parent) else ".", prefix=f".{path.name}.", suffix=TMP_SUFFIX
        )
    except OSError as e:
        raise OutputError(f"{path}: cannot create a temporary file: {e.strerror}") from e
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        with signals.held():  # the rename is the commit: no signal may report it undone
            _set_mode(tmp, path)
            signals.commit()
            os.replace(tmp, path)
    except BaseException as e:
        with signals.held():
            tmp.unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise OutputError(f"{path}: cannot write: {e.strerror or e}") from e
        raise


def _set_mode(tmp: Path, target: Path) -> None:
    """Give the new file the mode the user would expect, not mkstemp's 0600:
    an existing target's mode, else 0666 minus the umask."""
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    os.chmod(tmp, mode)
