"""Where ``run``'s outputs go and what ``--check`` compares them with, shared
by the graph route (cli/run.py) and the partitioned one (cli/run_mixed.py):
-o FILE, DIR/ (files named by output: io/valuefiles.py), X.npz or -.
"""

from __future__ import annotations

import contextlib
import errno
from pathlib import Path
from typing import Iterator

from ..errors import Mismatch, OnnxopError, OutputError, UsageError
from ..render.node import quote


@contextlib.contextmanager
def naming(option: str) -> Iterator[None]:
    """An error about the path an option gave names the option in front
    (``-o out/y.npy: output folder out does not exist``, ``--dump /proc/x:
    cannot make the folder: No such file or directory``): io's messages begin
    with the path, and an OSError (a folder that cannot be made) had only the
    system's words and the path. ``option`` ends as the path follows it
    (``-o ``, ``--input x=``)."""
    try:
        yield
    except OnnxopError as e:
        if e.message.startswith(option.rstrip()):
            raise
        raise e.reworded(f"{option}{e.message}") from None
    except OSError as e:
        what = f"{quote(e.filename)}: " if e.filename else ""
        fixable = e.errno in (errno.ENOENT, errno.EACCES, errno.EISDIR, errno.ENOTDIR, errno.EPERM, errno.EROFS)
        error = UsageError if fixable else OutputError
        raise error(f"{option}{what}{e.strerror or e}") from None


def targets(values, output: Path, to_folder: bool, fmt: str | None = None) -> tuple[str, dict[str, Path]]:
    """("file" | "npz" | "dir" | "stdout", output name -> path) for the
    outputs ``values`` (each with a name and a dtype); ``fmt`` (--format) sets
    the files' suffix in a folder. Its errors name -o."""
    with naming("-o "):
        return _targets(values, output, to_folder, fmt)


def _targets(values, output: Path, to_folder: bool, fmt: str | None = None) -> tuple[str, dict[str, Path]]:
    from .. import io
    from ..io import valuefiles
    from ..io.stdio import is_stdio

    names = [v.name for v in values]
    if is_stdio(output):
        kind = "stdout"
    elif to_folder or output.is_dir():
        kind = "dir"
    elif io.is_archive(output):
        kind = "npz"
    else:
        kind = "file"
    if kind in ("file", "stdout") and len(names) != 1:
        raise UsageError(f"{output}: the graph has {len(names)} outputs ({', '.join(names)}); "
                         "write them with -o DIR/ or -o FILE.npz")
    if kind != "dir":
        return kind, {n: output for n in names}
    return kind, valuefiles.value_paths(Path(output), [(v.name, v.dtype) for v in values], f"-o {output}", fmt)


def prepare(kind: str, targets: dict[str, Path], values, output: Path, fmt: str | None = None) -> None:
    """The folder made, each target checked, before anything is written; the errors name -o."""
    from .. import io

    with naming("-o "):
        if kind == "dir" and not Path(output).is_dir():
            if not Path(output).parent.is_dir():
                raise UsageError(f"{quote(output)}: no such folder, and no folder {quote(Path(output).parent)} "
                                 "to make it in")
            make_folder(Path(output))
        for v in values:
            io.check_output(targets[v.name], v.dtype, nbytes=0 if v.dtype.is_string else v.dtype.nbytes(size(v.shape)),
                            fmt=fmt)


def make_folder(folder: Path) -> bool:
    """Make ``folder`` (its parent is there); False when another process made
    it first. A folder that cannot be made (a read-only or virtual file
    system, no permission) is refused naming it."""
    try:
        folder.mkdir()
        return True
    except FileExistsError:
        if folder.is_dir():
            return False  # made between the check and here: theirs
        raise UsageError(f"{quote(folder)}: not a folder") from None
    except OSError as e:
        raise (UsageError if e.errno != errno.ENOSPC else OutputError)(
            f"{quote(folder)}: cannot make the folder: {e.strerror or e}") from None


def size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def check(g, results, folder: Path) -> str:
    """Each output against ``folder``'s output_N.pb (a node test's), or, in a
    folder without them, its file named by the output (io/valuefiles.py).
    Returns which: ``output_*.pb`` or ``files``."""
    from .. import io
    from ..docs.conformance import Fail, compare
    from ..io import valuefiles

    if not folder.is_dir():
        raise UsageError(f"--check {quote(folder)}: " + ("not a folder" if folder.exists() else "no such folder"))
    numbered = any(folder.glob("output_*.pb"))
    for i, t in enumerate(results):
        path = folder / f"output_{i}.pb" if numbered else valuefiles.find(folder, t.name)
        if path is None or not path.is_file():
            wanted = f"output_{i}.pb" if numbered else f"{valuefiles.file_stem(t.name)}.npy or .pb"
            raise UsageError(f"--check {folder}: no {wanted} for output {t.name!r}")
        try:
            compare(t, io.read_tensor(path), t.name)
        except Fail as e:
            raise Mismatch(f"--check {path}: output {t.name!r}: {e}") from None
    return "output_*.pb" if numbered else "files"
