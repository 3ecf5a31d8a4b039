"""Where each job of a batch writes its results, and the refusals about
those paths, all before a byte is read: two jobs with one output, an output
that is another job's input, a --parents path that would land outside its
folder, an output folder that cannot be written. One Job for every operator
command: a view operator's (core/batch.py: a file's tensors, each run alone
into its one output) and a tensor operator's (cli/tensor_ops.py: one node's
inputs, one target per output).

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
    src: Path  # the first positional file (for names and messages)
    targets: list[Optional[Path]]  # per output: None printed, "-" stdout, else the file (several: one archive or parts)
    tensors: list[Tensor] = field(default_factory=list)  # a view's: the file's tensors; a tensor op's: the node's inputs
    fmt: Optional[str] = None  # the format of "-" (stdout), or of the files written into -o FOLDER
    packed: bool = False  # one of several results packed into the archive ``target``
    plans: list = field(default_factory=list)  # a tensor operator's: the node's plan per output
    member_names: list = field(default_factory=list)  # a tensor operator's: per output, its name in the file
    parts: bool = False  # its targets are files in a folder of parts (Split's), made when the job runs

    @property
    def target(self) -> Optional[Path]:
        """The output that names the job: a view's one; a tensor operator's first."""
        return self.targets[0] if self.targets else None

    @property
    def output(self) -> Optional[Path]:
        """What the job writes, as one path (--keep-going's list names it): its
        file, its archive, or the folder of its parts (Split's); None when printed."""
        return self.targets[0].parent if self.parts else self.target

    def written(self) -> list[Path]:
        """Each file the job writes, once."""
        from ..io.stdio import is_stdio

        return [t for t in dict.fromkeys(self.targets) if t is not None and not is_stdio(t)]


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
        check_parents_root(output)
        return [output / renamed(mirrored(src)) for src in inputs]  # type: ignore[operator]
    if output is None:
        return [None] * len(inputs)
    if is_stdio(output):
        return [output]
    if packed:
        return [output] * len(inputs)
    if output.is_dir():
        for src in inputs:
            _named(src, output, "FILE")
        return [output / renamed(Path(src.name)) for src in inputs]
    if len(inputs) > 1:
        raise UsageError(
            f"{output}: with {len(inputs)} inputs, -o must be an existing folder, or an .npz to pack them into"
        )
    return [output]


def check_parents_root(output: Optional[Path]) -> None:
    """--parents mirrors input paths under -o, which must be an existing folder."""
    from ..io.stdio import is_stdio

    if output is None or is_stdio(output):
        raise UsageError("--parents mirrors input paths under a folder; give -o FOLDER")
    if not output.is_dir():
        raise UsageError(f"{output}: with --parents, -o must be an existing folder")


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

    outputs: dict[tuple, list[tuple[Path, Job]]] = {}
    for job in jobs:
        for target in job.written():
            outputs.setdefault(_identity(target), []).append((target, job))
    for same in outputs.values():
        if len(same) > 1:
            target = same[0][0]
            srcs = [str(j.src) for _, j in same]
            if len({_identity(j.src) for _, j in same}) == 1:
                raise UsageError(f"{target}: the input {srcs[0]} is given {len(same)} times; give it once")
            raise UsageError(
                f"{target}: the results of {_and(srcs)} would all be written here; "
                "give --parents to keep same-named inputs apart"
            )
    for job in jobs:
        if is_stdio(job.src):
            continue
        writers = [(t, j) for t, j in outputs.get(_identity(job.src), []) if j is not job]
        if writers and _identity(job.src)[0] == "inode":
            target, writer = writers[0]
            raise UsageError(
                f"{target}: the result of {writer.src} would replace {job.src}, "
                "another input of this batch; write to another folder"
            )


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def check_target(
    target: Path, root: Optional[Path], dtype, size: int, fmt: Optional[str] = None, tensor: Optional[Tensor] = None,
    *, made: bool = False,
) -> None:
    """The output checks of io, also for a target whose folders do not exist
    yet (--parents under ``root``, or ``made``: a tensor operator's folder of
    parts, made when it runs): then the nearest folder that does must be
    writable. The size checked is the result's, ``size`` elements of
    ``dtype`` (Expand and Tile write more than they read)."""
    from .. import io

    nbytes = 0 if dtype.is_string else dtype.nbytes(size)
    if (root is None and not made) or target.parent.is_dir():
        io.check_output(target, dtype, nbytes=nbytes, tensor=tensor, fmt=fmt)
        return
    check_folders(target, root)
    io.check_format(target, dtype, nbytes=nbytes, tensor=tensor)


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


def assign_outputs(
    jobs: list[Job], output: Optional[Path], *, multi: bool, parents: bool = False, count: Optional[int] = None
) -> None:
    """A tensor operator's targets, per job and output: printed (no -o),
    stdout (one tensor), the file -o, a file in the folder -o named after
    the input (its own name for .npy and .pb, else ``stem.npy``; the
    member's name for a member of an archive), or for several outputs
    (``multi``: Split) an archive -o or a folder of parts (``stem_k``).
    With ``parents`` each input's folder is mirrored under -o, as a view
    operator's is (``targets``). ``count``: the batch's jobs, those
    --keep-going set aside included (for the messages)."""
    from ..io.stdio import is_stdio

    count = len(jobs) if count is None else count

    if parents:
        check_parents_root(output)
    for job in jobs:
        n = len(job.plans)
        own = _own_suffix(job)
        stem = _stem(job)
        job.member_names = [f"{stem}_{k}" for k in range(n)] if multi else [None] * n
        if output is None:
            job.targets = [None] * n
            continue
        # an archive holds every result, a member each: -o X.npz, or -o - --format npz
        archive = output.suffix.lower() == ".npz" or (is_stdio(output) and own == ".npz")
        if is_stdio(output) and not archive:
            if n != 1 or count > 1:
                raise UsageError(f"-o -: stdout takes one tensor, this writes {n * count}; use -o FOLDER or an .npz")
            job.targets = [output]
            continue
        folder = output / mirrored(job.src).parent if parents else output
        if multi and _names_a_file(output) and n * count > 1:  # (one part of one input: that file)
            raise UsageError(f"{output}: a {output.suffix} file takes one tensor, this writes {n * count}; "
                             "use -o FOLDER or an .npz")
        if multi and not _names_a_file(output):
            if archive:
                job.targets, job.packed = [output] * n, count > 1
            else:
                _named(job.src, output, "FILE.npz")
                suffix = own or (job.src.suffix.lower() if job.src.suffix.lower() in (".npy", ".pb") else ".npy")
                job.targets, job.parts = [folder / f"{stem}_{k}{suffix}" for k in range(n)], True
        elif parents or (not is_stdio(output) and output.is_dir()):
            _named(job.src, output, "FILE")
            job.targets = [folder / _file_name(job, stem)]
        elif count > 1 and archive:  # several inputs packed into one archive, a member per result, as a view's
            from .pack import member_of

            job.targets, job.packed, job.member_names = [output], True, [member_of(job.tensors[0], job.src)]
        elif count > 1:
            raise UsageError(
                f"{output}: with {count} inputs, -o must be an existing folder, or an .npz to pack them into"
            )
        else:
            job.targets = [output]


def planned_output(job: Job, output: Optional[Path], *, multi: bool, parents: bool = False) -> Optional[Path]:
    """What a tensor operator's job set aside while planning would have
    written, as ``Job.output`` names it, also before its targets are
    assigned (its file unreadable, its type refused): the file in the folder
    -o, -o itself (a file, an archive, stdout), the folder of its parts --
    or, for an archive not read, whose members would each be a file, the folder."""
    from ..io.stdio import is_stdio

    if job.targets or output is None or is_stdio(output):
        return job.output if job.targets else output
    try:
        folder = output / mirrored(job.src).parent if parents else output
    except UsageError:  # (refused for the whole batch once the targets are assigned)
        return output
    if multi:
        return output if output.suffix.lower() == ".npz" or _names_a_file(output) else folder
    if not (parents or output.is_dir()):
        return output
    return folder / _file_name(job, _stem(job)) if job.tensors or _one_tensor(job.src) else folder


def _own_suffix(job: Job) -> Optional[str]:
    """--format: the suffix of the files written into the folder -o."""
    return "." + job.fmt.lower().lstrip(".") if job.fmt else None


def _stem(job: Job) -> str:
    """What a job's outputs are named after: its tensor's name (a member of
    an archive), else its input's stem."""
    from ..io.stdio import is_stdio

    first = job.tensors[0] if job.tensors else None
    return first.name if first is not None and first.named else ("x" if is_stdio(job.src) else job.src.stem)


def _one_tensor(src: Path) -> bool:
    return src.suffix.lower() in (".npy", ".pb")


def _file_name(job: Job, stem: str) -> str:
    """A one-output job's file in the folder -o: the input's own name (.npy,
    .pb), else ``stem.npy``; its suffix --format's if given."""
    own = _own_suffix(job)
    name = job.src.name if _one_tensor(job.src) else f"{stem}.npy"
    return str(Path(name).with_suffix(own)) if own else name


def _named(src: Path, output: Path, instead: str) -> None:
    """A file in the folder -o is named after its input: stdin has no name."""
    from ..io.stdio import is_stdio

    if is_stdio(src):
        raise UsageError(f"{output}: a folder takes each input's name, and stdin has none; give -o {instead}")


def one_tensor_each(output: Optional[Path], fmt: Optional[str], *, multi: bool, parents: bool = False) -> bool:
    """-o takes one tensor per input -- a .npy or .pb file, another file that
    is not an archive, stdout as a .npy or .pb stream -- so an archive input
    of several members needs --member, as a view operator's does; not a
    folder, an .npz, nor Split's folder of parts."""
    from .. import io
    from ..io.stdio import is_stdio

    if output is None or parents:
        return False
    if is_stdio(output):
        return (fmt or "npy").lower().lstrip(".") != "npz"
    if io.is_archive(output) or output.is_dir():
        return False
    return not multi or _names_a_file(output)


def _names_a_file(output: Path) -> bool:
    """``-o`` names a tensor file (.npy, .pb), not a folder to make."""
    return output.suffix.lower() in (".npy", ".pb") and not output.is_dir()
