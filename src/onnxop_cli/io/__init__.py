"""Tensor files, one module per format, chosen by suffix.

    .npy  one numpy array          (npy.py)
    .npz  numpy arrays by name     (npz.py)
    .pb   one ONNX TensorProto     (tensorproto.py)
    .onnx a model's initializers   (onnxmodel.py; read only)

Reading gives Tensors whose bytes are read later, in chunks. Writing goes
through a writer opened on a temporary file (atomic_output): ``tensor(name,
shape, dtype)`` is a context manager yielding a sink for the bytes, and
``strings(name, values, text_dtype)`` writes a string tensor (``text_dtype``:
the numpy dtype it came as, which an .npy keeps).

The path ``-`` is stdin as an input (any format above but .onnx,
recognised by content: sniff.py) and a stream on stdout as an output: .npy,
or the format ``fmt`` names (``--format pb``: every type, bfloat16, float8,
the 2- and 4-bit types and strings included) -- see stdio.py; stdout cannot
be written atomically.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, ContextManager, Iterable, Iterator, Protocol

from ..errors import UsageError
from ..core.tensor import DType, Tensor
from . import npy, stdio
from .atomic import atomic_output, check_output_path

Sink = Callable[[memoryview], None]
FORMATS = (".npy", ".npz", ".pb", ".onnx")
WRITTEN = (".npy", ".npz", ".pb")  # .onnx models are read (their initializers), never written
ARCHIVES = (".npz",)  # formats that hold several named tensors and can be written
NAMED = (".npz", ".onnx")  # formats whose tensors --member picks by name


class Writer(Protocol):
    def tensor(self, name: str, shape: tuple[int, ...], dtype: DType) -> ContextManager[Sink]: ...

    def strings(self, name: str, values, text_dtype: str = "") -> None: ...

    def close(self) -> None: ...


def _suffix(path: Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS and Path(path).is_dir():
        raise UsageError(
            f"{path}: is a folder, not a tensor file; give the files in it (example: {Path(path) / '*.pb'})"
        )
    if not suffix:
        raise UsageError(
            f"{path}: a name without a suffix names no format, and no folder has this name; "
            f"give a {', '.join(WRITTEN)} file (or, for -o, an existing folder)"
        )
    if suffix not in FORMATS:
        shown = suffix or "no suffix"
        raise UsageError(
            f"{path}: unknown format ({shown}); onnxop reads and writes {', '.join(WRITTEN)} "
            f"and reads {', '.join(f for f in FORMATS if f not in WRITTEN)}"
        )
    return suffix


def _module(suffix: str):
    if suffix == ".npy":
        return npy
    if suffix == ".npz":
        from . import npz

        return npz
    from . import tensorproto

    return tensorproto


def is_archive(path: Path) -> bool:
    return Path(path).suffix.lower() in ARCHIVES


def read_tensors(path: Path, member: str | None = None) -> list[Tensor]:
    """The tensors in ``path``: one, or every member of an .npz (only
    ``member`` if given). Their bytes are read later, in chunks."""
    if stdio.is_stdio(path):
        from .sniff import read_stdin

        return read_stdin(member)
    path = Path(path)
    suffix = _suffix(path)
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if not path.is_file():
        raise UsageError(f"{path}: not a regular file")
    if member is not None and suffix not in NAMED:
        raise UsageError(f"{path}: --member selects an array of an .npz file or an initializer of an .onnx model; this is {suffix}")
    if suffix == ".npz":
        from . import npz

        tensors = npz.read_npz(path, member)
        if not tensors:
            raise UsageError(f"{path}: the archive holds no arrays")
        return tensors
    if suffix == ".pb":
        from . import tensorproto

        return [tensorproto.read_pb(path)]
    if suffix == ".onnx":
        from .onnxmodel import read_onnx

        return read_onnx(path, member)
    return [npy.read_npy(path)]


def read_tensor(path: Path, member: str | None = None) -> Tensor:
    """The one tensor in ``path``; an .npz of several needs ``member``."""
    tensors = read_tensors(path, member)
    if len(tensors) > 1:
        from .npz import describe

        names = [t.name for t in tensors]
        raise UsageError(
            f"{path} holds {describe(names)}; choose one with --member NAME "
            "(or write a .npz to apply the operator to each)"
        )
    return tensors[0]


def releasing(jobs: Iterable[tuple]) -> Iterator[tuple]:
    """Each job (a tuple whose second item is its list of tensors), then its
    tensors' input files closed once the next job is asked for or the loop
    ends: a batch holds a descriptor per input only until it is done."""
    for job in jobs:
        try:
            yield job
        finally:
            for tensor in job[1]:
                tensor.close()


def output_name(tensor: Tensor, target: Path) -> str:
    """What the result is called: the input's own name (a TensorProto's, an
    .npz member's) when it has one, else the output file's stem."""
    return tensor.name if tensor.named else Path(target).stem


def stream_suffix(fmt: str | None) -> str:
    """The suffix of what ``-`` writes: ``fmt`` (npy, npz or pb), .npy by default."""
    if fmt is None:
        return ".npy"
    suffix = "." + fmt.lower().lstrip(".")
    if suffix not in WRITTEN:
        raise UsageError(f"--format must be one of {', '.join(w[1:] for w in WRITTEN)}, got {fmt!r}")
    return suffix


def check_output(path: Path, dtype: DType | None = None, *, nbytes: int = 0, tensor: Tensor | None = None,
                 fmt: str | None = None) -> None:
    """Refuse an output path before any work is done: unknown format, a folder
    that is missing or read-only, a type or size the format cannot hold
    (``tensor``'s strings in a fixed-width .npy array far larger than they are)."""
    if stdio.is_stdio(path):
        stdio.check_stdout()
    else:
        check_output_path(Path(path))
    check_format(path, dtype, nbytes=nbytes, tensor=tensor, fmt=fmt)


def check_format(path: Path, dtype: DType | None = None, *, nbytes: int = 0, tensor: Tensor | None = None,
                 fmt: str | None = None) -> None:
    """What check_output refuses of the format alone: an unknown suffix, a type
    or size the format cannot hold (for a file whose folder is yet to be made).
    ``fmt`` is the format of ``-`` (stdout)."""
    suffix = stream_suffix(fmt) if stdio.is_stdio(path) else _suffix(path)
    if suffix not in WRITTEN:
        raise UsageError(
            f"{path}: onnxop reads {suffix} models (their initializers) but does not write them; "
            f"write {', '.join(WRITTEN)}"
        )
    module = _module(suffix)
    if dtype is not None and not module.can_hold(dtype):
        instead = "add --format pb" if stdio.is_stdio(path) else "write a .pb (ONNX TensorProto) file instead"
        raise UsageError(
            f"{path}: the {suffix} format cannot describe {dtype.name} (numpy has no such dtype); {instead}"
        )
    if tensor is not None and tensor.strings is not None and suffix != ".pb":
        label = f"{path}[{output_name(tensor, path)}]" if suffix in ARCHIVES else stdio.stdio_label(path)
        npy.text_dtype_for(tensor.strings, tensor.text_dtype, label)
    limit = getattr(module, "PROTOBUF_LIMIT", None)
    if limit is not None and nbytes > limit:
        raise UsageError(
            f"{path}: {nbytes} bytes do not fit a .pb (at most {limit} bytes of data: protobuf "
            "messages stay under 2 GiB); "
            "write a .npy or .npz file instead"
        )


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (by inode: links and symlinks too)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


@contextmanager
def open_writer(path: Path, *, update: bool = False, fmt: str | None = None) -> Iterator[Writer]:
    """A writer for ``path``'s format on a temporary file that replaces
    ``path`` only if the block finishes. ``-`` writes to stdout, a .npy or
    the format ``fmt`` names (not atomic: a stream cannot be taken back).
    ``update`` keeps the members of an existing .npz that are not written
    again (``-o`` naming the input archive, with ``--member``)."""
    if stdio.is_stdio(path):
        with stdio.stdout_writer(module=_module(stream_suffix(fmt))) as writer:
            yield writer
        return
    path = Path(path)
    module = _module(_suffix(path))
    keep = {"keep": path} if update and is_archive(path) and path.exists() else {}
    with atomic_output(path) as f:
        writer = module.WRITER(f, str(path), **keep)
        try:
            yield writer
            writer.close()  # (may fail too: an .npz copies the members it keeps here)
        except BaseException:
            abort = getattr(writer, "abort", None)  # a writer with state to drop (npz's ZipFile)
            if abort is not None:
                abort()
            raise


@contextmanager
def open_output(
    path: Path, shape: tuple[int, ...], dtype: DType, name: str | None = None
) -> Iterator[Sink]:
    """A sink that writes one tensor's data into ``path``, atomically: the file
    appears, complete, only if the block finishes."""
    path = Path(path)
    with open_writer(path) as writer, writer.tensor(name or path.stem, shape, dtype) as sink:
        yield sink


__all__ = [
    "FORMATS",
    "Sink",
    "Writer",
    "read_tensor",
    "read_tensors",
    "output_name",
    "check_output",
    "check_format",
    "open_writer",
    "open_output",
    "atomic_output",
    "is_archive",
    "stream_suffix",
    "releasing",
    "same_file",
]
