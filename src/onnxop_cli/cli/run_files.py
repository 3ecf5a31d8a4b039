"""Where ``run``'s outputs go and what ``--check`` compares them with, shared
by the graph route (cli/run.py) and the partitioned one (cli/run_mixed.py):
-o FILE, DIR/ (files named by output: io/valuefiles.py), X.npz or -.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import Mismatch, UsageError


def targets(values, output: Path, to_folder: bool, fmt: str | None = None) -> tuple[str, dict[str, Path]]:
    """("file" | "npz" | "dir" | "stdout", output name -> path) for the
    outputs ``values`` (each with a name and a dtype); ``fmt`` (--format) sets
    the files' suffix in a folder."""
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
    """The folder made, each target checked, before anything is written."""
    from .. import io

    if kind == "dir" and not Path(output).is_dir():
        if not Path(output).parent.is_dir():
            raise UsageError(f"{output}: no such folder, and no folder {Path(output).parent} to make it in")
        Path(output).mkdir(exist_ok=True)
    for v in values:
        io.check_output(targets[v.name], v.dtype, nbytes=0 if v.dtype.is_string else v.dtype.nbytes(size(v.shape)),
                        fmt=fmt)


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
        raise UsageError(f"--check {folder}: not a folder")
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
