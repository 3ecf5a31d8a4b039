"""``run``'s files, shared by the graph route (cli/run.py) and the partitioned
one (cli/run_mixed.py): which file gives each graph input and its tensors
(files in order, ``--input NAME=FILE``, a test_data_set_N/ folder, one .npz
or stdin), where the outputs go (-o FILE, DIR/ (files named by output:
io/valuefiles.py), X.npz or -) and what ``--check`` compares them with.
"""

from __future__ import annotations

import contextlib
import errno
import re
from pathlib import Path
from typing import Iterator, Optional

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


# ------------------------------------------------------------------ inputs


def input_files(g, positional: list[Path], named: list[str], defaults: frozenset = frozenset(),
                by_member: bool = False) -> dict[str, Path]:
    """Each graph input's file. ``-`` (stdin, read once by ``input_feeds``) may be given for several inputs
    as a file may: an archive on it gives each the member of its name, one tensor gives it to each.
    ``defaults``: the graph inputs an initializer gives a value, which are no inputs to feed here;
    ``by_member``: one .npz may give every input, its members named by them (no --member)."""
    if positional and named:
        raise UsageError("give the inputs either in order or with --input NAME=FILE, not both")
    if len(positional) == 1 and positional[0].is_dir():
        folder = positional[0]
        found = sorted(folder.glob("input_*.pb"), key=lambda p: _index(p.stem))
        positional = [p for p in found if _index(p.stem) >= 0]
        if [_index(p.stem) for p in positional] != list(range(len(positional))):
            raise UsageError(f"{folder}: its input_N.pb files are not numbered 0, 1, ...")
    if named:
        files: dict[str, Path] = {}
        for item in named:
            name, sep, path = item.partition("=")
            # a graph input whose name holds '=' (an exporter's 'a=b') is split at the '=' after its name
            name, path = next(((item[:i], item[i + 1:]) for i in range(len(item)) if item[i] == "="
                               and item[:i] in g.inputs), (name, path))
            if not sep or not name or not path:
                raise UsageError(f"--input takes NAME=FILE, got {item!r}")
            if name not in g.inputs:
                raise UsageError(f"--input {name!r}: " + (
                    "that graph input has an initializer, which onnxop runs as the model's constant "
                    if name in defaults else "the model has no such input ") + f"(its inputs: "
                                 f"{', '.join(map(repr, g.inputs)) or 'none'})")
            if name in files:
                raise UsageError(f"--input {name!r} is given twice")
            files[name] = Path(path)
        missing = [n for n in g.inputs if n not in files]
        if missing:
            raise UsageError(f"no --input for {', '.join(map(repr, missing))}")
        return files
    if by_member and len(positional) == 1 and len(g.inputs) > 1 and (positional[0].suffix.lower() == ".npz"
                                                                      or str(positional[0]) == "-"):
        return dict.fromkeys(g.inputs, positional[0])  # one archive of every input, its members by name
    if len(positional) != len(g.inputs):
        raise UsageError(
            f"the model has {len(g.inputs)} input(s) ({', '.join(g.inputs) or 'none'}), "
            f"{len(positional)} file(s) were given" + (
                f"; {', '.join(map(repr, sorted(defaults)))}, listed as graph input(s), have initializers, which onnxop "
                "runs as the model's constants" if defaults and len(positional) > len(g.inputs) else "")
        )
    return dict(zip(g.inputs, positional))


def _index(stem: str) -> int:
    m = re.fullmatch(r"(?:input|output)_(\d+)", stem)
    return int(m.group(1)) if m else -1


def input_feeds(files: dict[str, Path], member: Optional[str], one_for_all: bool = False,
                named: bool = False) -> dict:
    """Each graph input's tensor. A file of one tensor gives it to each input
    it is given for. Without --member, an archive of several arrays (an
    .npz, or one on stdin) gives each input it is given for the member of
    that name, as does the one .npz given for every input (``one_for_all``),
    which must hold one for each input and no other. ``named``: the files
    came from --input NAME=FILE, which their errors name."""
    from ..io.npz import describe

    by_path: dict[str, list[str]] = {}
    for name, path in files.items():
        by_path.setdefault(str(path), []).append(name)
    feeds = {}
    for names in by_path.values():
        path = files[names[0]]
        stdin = str(path) == "-"  # read once (into memory: _read); a file is read again for each input
        option = f"--input {quote(names[0])}=" if named else ""
        if member is not None:  # --member's one array, for each input given this file
            with naming(option):
                once = _read(path, member)[0] if stdin else None
                feeds.update({n: once if stdin else _read(path, member)[0] for n in names})
            continue
        with naming(option):
            tensors = _read(path, None)
        held = [t.name for t in tensors]
        if len(tensors) == 1 and (not one_for_all or len(names) == 1):
            feeds.update({n: tensors[0] if k == 0 or stdin else _read(path, None)[0] for k, n in enumerate(names)})
            continue
        if len(tensors) == 1 and stdin:  # not an archive: one tensor for every input
            raise UsageError(f"the model has {len(names)} input(s) ({', '.join(names)}), 1 file(s) were given "
                             "(stdin holds one tensor; an .npz there gives each input the member of its name)")
        missing = [n for n in names if n not in held]
        if missing:
            raise UsageError(
                f"{path} holds {describe(held)} and none named {', '.join(map(repr, missing))}: an archive given "
                "for " + ("every graph input gives each" if one_for_all else "a graph input gives it")
                + " the member of its name" + ("" if one_for_all and len(names) > 1 else
                                                 " (or choose one with --member NAME)"))
        if one_for_all:
            extra = [n for n in held if n not in names]
            if extra:
                raise UsageError(f"{path}: member(s) {', '.join(map(repr, extra))} name no graph input given "
                                 f"this archive ({', '.join(map(repr, names))})"
                                 + ("; choose the input's with --member NAME" if len(names) == 1 else ""))
        feeds.update({n: tensors[held.index(n)] for n in names})
    return feeds


def _read(path: Path, member: Optional[str]) -> list:
    """The tensors of one input file (several for an archive without
    --member), or of stdin in any format onnxop reads (io/sniff.py), read
    whole (a graph may read a value twice)."""
    from dataclasses import replace

    from .. import io
    from ..core.sources import MemoryBytes
    from ..io.stdio import is_stdio

    tensors = io.read_tensors(path, member)
    if is_stdio(path):
        tensors = [replace(t, data=MemoryBytes(t.data.to_array())) if t.data is not None else t for t in tensors]
    return tensors


# ------------------------------------------------------------------ outputs



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
    if numbered:  # as conformance and onnx's runner: the test's outputs are as many as the graph's
        extra = sorted(int(n) for p in folder.glob("output_*.pb") if (n := p.stem[len("output_"):]).isdigit())
        if extra and extra[-1] >= len(results):
            raise Mismatch(f"--check {folder}: output_{extra[-1]}.pb expects {extra[-1] + 1} outputs, the graph "
                           f"made {len(results)} ({', '.join(repr(t.name) for t in results)})")
    for i, t in enumerate(results):
        try:
            path = folder / f"output_{i}.pb" if numbered else valuefiles.find(folder, t.name)
        except UsageError as e:
            raise e.reworded(f"--check {e.message}") from None
        if path is None or not path.is_file():
            wanted = f"output_{i}.pb" if numbered else f"{valuefiles.file_stem(t.name)}.npy or .pb"
            raise UsageError(f"--check {folder}: no {wanted} for output {t.name!r}")
        try:
            compare(t, io.read_tensor(path), t.name)
        except Fail as e:
            raise Mismatch(f"--check {path}: output {t.name!r}: {e}") from None
    return "output_*.pb" if numbered else "files"
