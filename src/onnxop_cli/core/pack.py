"""What a batch writes where, beyond a file per input: ``--format`` (the
format of ``-o -`` and of the files written into ``-o FOLDER``) and
``-o all.npz`` with several inputs (one archive, a member per result).
Checks only: batch.py plans and runs the jobs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Optional

from ..errors import UsageError

if TYPE_CHECKING:
    from .tensor import Tensor


def check_format(fmt: str, output: Optional[Path]) -> None:
    """--format names the format of -o - or of the files in -o FOLDER; a
    file's own suffix says its format, and --format must not contradict it."""
    from .. import io
    from ..io.stdio import is_stdio

    suffix = io.stream_suffix(fmt)
    if output is None:
        raise UsageError(f"--format {fmt} says how -o writes; give -o - or -o FOLDER")
    if is_stdio(output) or output.is_dir():
        return
    if output.suffix.lower() != suffix:
        raise UsageError(f"--format {fmt} and -o {output} disagree; the file's suffix says its format, drop --format")


def member_of(tensor: Tensor, src: Path) -> str:
    """A packed result's member name: the tensor's own name, else its input's stem."""
    from ..io.stdio import STDIN_NAME, is_stdio

    if tensor.named:
        return tensor.name
    return STDIN_NAME if is_stdio(src) else Path(src).stem


def refuse_packing_an_input(inputs: list[Path], output: Path) -> None:
    """The archive packed into must not be one of the inputs (links included)."""
    from .. import io
    from ..io.stdio import is_stdio

    for src in inputs:
        if not is_stdio(src) and io.same_file(src, output):
            raise UsageError(f"{output}: the archive to pack into is also an input ({src}); pack into another file")


def refuse_member_collisions(jobs: Iterable[tuple[Path, list[str]]], output: Path) -> None:
    """Two results that would be one member of the archive: ``jobs`` holds
    each job's input and its results' member names."""
    seen: dict[str, Path] = {}
    for src, names in jobs:
        for name in names:
            if name in seen:
                raise UsageError(
                    f"{output}: the results of {seen[name]} and {src} would both be member {name!r}; "
                    "rename one input, or write them to a folder"
                )
            seen[name] = src
