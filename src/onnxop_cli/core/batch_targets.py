"""Where each input of a batch (core/batch.py) writes its result, and the
refusals about those paths, all before a byte is read: two jobs with one
output, an output that is another job's input, a --parents path that
would land outside its folder, an output folder that cannot be written.

Files are compared as the operating system sees them: by (st_dev, st_ino)
when they exist, so that a symlink, a hard link or another spelling of the
same file is the same file; by their resolved path when they do not yet.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from ..errors import UsageError

if TYPE_CHECKING:
    from .tensor import Tensor


@dataclass
class Job:
    src: Path
    target: Optional[Path]  # None: printed; "-": stdout
    tensors: list[Tensor] = field(default_factory=list)
    fmt: Optional[str] = None  # the format of "-" (stdout)
    packed: bool = False  # one of several results packed into the archive ``target``


def targets(
    inputs: list[Path], output: Optional[Path], parents: bool, fmt: Optional[str] = None, packed: bool = False
) -> list[Optional[Path]]:
    """Where each input's result goes: printed (no -o), stdout, the file -o,
    the archive -o (``packed``), or a file in the folder -o: the input's
    name (its suffix ``fmt``'s, if given), or with ``parents`` its whole
    relative path."""
    from ..io.stdio import is_stdio

    def renamed(path: Path) -> Path:
        return path.with_suffix("." + fmt.lower().lstrip(".")) if fmt else path

    if parents:
        if output is None or is_stdio(output):
            raise UsageError("--parents mirrors input paths under a folder; give -o FOLDER")
        if not output.is_dir():
            raise UsageError(f"{output}: with --parents, -o must be an existing folder")
        return [output / renamed(mirrored(src)) for src in inputs]
    if output is None:
        return [None] * len(inputs)
    if is_stdio(output):
        return [output]
    if packed:
        return [output] * len(inputs)
    if output.is_dir():
        if any(is_stdio(src) for src in inputs):
            raise UsageError(f"{output}: a folder takes each input's name, and stdin has none; give -o FILE")
        return [output / renamed(Path(src.name)) for src in inputs]
    if len(inputs) > 1:
        raise UsageError(
            f"{output}: with {len(inputs)} inputs, -o must be an existing folder, or an .npz to pack them into"
        )
    return [output]


def mirrored(src: Path) -> Path:
    """The path ``--parents`` gives an input under the output folder: its own,
    as given, with a leading / dropped (as ``cp --parents`` does). ``..`` is
    refused: the result would land outside the folder, or on another input's."""
    from ..io.stdio import is_stdio

    if is_stdio(src):
        raise UsageError("-: --parents mirrors input paths; stdin has none")
    parts = [p for p in src.parts[1 if src.is_absolute() else 0 :] if p != "."]
    if ".." in parts:
        raise UsageError(
            f"{src}: --parents cannot mirror a path with '..'; run onnxop from a folder above the input"
        )
    return Path(*parts)


def _identity(path: Path) -> tuple:
    """What makes two paths one file: its inode if it exists, else the path
    with every symlink resolved."""
    try:
        st = os.stat(path)
    except OSError:
        return ("path", os.path.realpath(path))
    return ("inode", st.st_dev, st.st_ino)


def refuse_collisions(jobs: list[Job]) -> None:
    """Two jobs with one output, or an output that is another job's input."""
    from ..io.stdio import is_stdio

    outputs: dict[tuple, list[Job]] = {}
    for job in jobs:
        if job.target is not None and not is_stdio(job.target):
            outputs.setdefault(_identity(job.target), []).append(job)
    for same in outputs.values():
        if len(same) > 1:
            srcs = [str(j.src) for j in same]
            if len({_identity(j.src) for j in same}) == 1:
                raise UsageError(f"{same[0].target}: the input {srcs[0]} is given {len(same)} times; give it once")
            raise UsageError(
                f"{same[0].target}: the results of {_and(srcs)} would all be written here; "
                "give --parents to keep same-named inputs apart"
            )
    for job in jobs:
        if is_stdio(job.src):
            continue
        writers = [j for j in outputs.get(_identity(job.src), []) if j is not job]
        if writers and _identity(job.src)[0] == "inode":
            raise UsageError(
                f"{writers[0].target}: the result of {writers[0].src} would replace {job.src}, "
                "another input of this batch; write to another folder"
            )


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def check_target(
    target: Path, root: Optional[Path], tensor: Tensor, out_shape: tuple[int, ...], fmt: Optional[str] = None
) -> None:
    """The output checks of io, also for a --parents target whose folders do
    not exist yet: then the nearest folder that does must be writable. The
    size checked is the result's (Expand and Tile write more than they read)."""
    import math

    from .. import io

    nbytes = 0 if tensor.dtype.is_string else tensor.dtype.nbytes(math.prod(out_shape))

    if root is None or target.parent.is_dir():
        io.check_output(target, tensor.dtype, nbytes=nbytes, tensor=tensor, fmt=fmt)
        return
    check_folders(target, root)
    io.check_format(target, tensor.dtype, nbytes=nbytes, tensor=tensor)


def check_folders(target: Path, root: Optional[Path] = None) -> None:
    """For a ``target`` whose folders do not exist yet (they are made when
    it is written): the nearest folder above it that does, up to ``root``
    (else the file system's root), must be a writable folder."""
    folder = target.parent
    while not folder.exists() and folder != (folder.parent if root is None else root):
        folder = folder.parent
    if not folder.is_dir():
        raise UsageError(f"{target}: {folder} is not a folder")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"{target}: output folder {folder} is not writable")
