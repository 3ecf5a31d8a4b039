""".npz files: a zip archive of .npy members, one tensor each.

Members are parsed with the .npy header code (never ``np.load``, never a
pickle) and read lazily straight out of the archive, stored or deflated, so a
member streams to the GPU like an .npy file does. The archive is never
extracted: member names never become paths.

A damaged or hostile archive is refused before any data is read: every
zipfile failure becomes one line naming the archive; two members with one
name (which one would np.load pick?) are refused; a member must not declare
more bytes than its compressed size can hold (stored: the same; compressed:
at most deflate's 1032x, so a zip bomb's claim is caught from the directory),
nor more compressed bytes than the archive has. Inflating stops at the size
the member's .npy header declares, and the header itself is read only if its
declared length is within numpy's limit.

Writing: each member is streamed into a stored (uncompressed) zip entry, as
``numpy.savez`` writes them. Updating an archive in place keeps the members
not written again as they were (see NpzWriter).
"""

from __future__ import annotations

import copy
import math
import struct
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Iterator

from ..errors import InputError, OnnxopError, OutputError, UsageError
from ..core.sources import readinto_full
from ..core.tensor import DType, Tensor
from . import npy

if TYPE_CHECKING:
    from ..core.files import InputFile

SUFFIX = ".npz"
MEMBER_SUFFIX = ".npy"
MAX_RATIO = 1032  # deflate's largest expansion: 258 bytes for at least 2 bits
# The most each method numpy (zipfile) reads can expand: a member declaring more
# lies, and is refused before anything is inflated (reading stops at the
# declared size either way). bzip2's two run-length stages reach 45,899,236x
# at most; LZMA measured 6,814x on 100 MB of zeros (its best case), bounded here at 16,000x.
MAX_RATIOS = {
    zipfile.ZIP_DEFLATED: (MAX_RATIO, "deflate"),
    zipfile.ZIP_BZIP2: (45_899_236, "bzip2"),
    zipfile.ZIP_LZMA: (16_000, "LZMA"),
}
ZIP_STARTS = (b"PK\x03\x04", b"PK\x05\x06")  # a first member, or an empty archive (as np.load checks)


@contextmanager
def zip_errors(label: str, what: str) -> Iterator[None]:
    """Any failure of zipfile (or zlib under it) inside the block becomes one
    InputError line. A damaged archive makes zipfile raise BadZipFile, OSError,
    EOFError, ValueError, struct.error, zlib.error, UnicodeDecodeError,
    NotImplementedError, RuntimeError... so everything but our own errors
    (and Ctrl-C, which is not an Exception) is caught."""
    try:
        yield
    except OnnxopError:
        raise
    except Exception as e:  # noqa: BLE001 - see above
        raise InputError(f"{label}: {what} ({npy._clean(e) or type(e).__name__})") from None


def member_name(filename: str) -> str:
    """numpy's key for an archive entry: the file name without ``.npy``."""
    return filename[: -len(MEMBER_SUFFIX)] if filename.endswith(MEMBER_SUFFIX) else filename


class Archive:
    """An .npz opened once: one descriptor (files.InputFile) and one ZipFile
    over it, shared by its members' ByteSources."""

    def __init__(self, file: InputFile, label: str) -> None:
        self.file = file
        self.label = label
        with zip_errors(label, "not an .npz file"):
            self.zip = zipfile.ZipFile(file.reader())


class ZipMemberBytes:
    """A byte range of one archive member, read front to back on demand.

    The member stays open between sequential reads (deflated members cannot
    seek cheaply); a read elsewhere reopens it, from the same descriptor.
    """

    def __init__(self, archive: Archive, member: str, offset: int, nbytes: int, label: str) -> None:
        self.archive = archive
        self.member = member
        self.offset = offset
        self.nbytes = nbytes
        self.label = label
        self._stream = None
        self._pos = -1
        self._closed = False
        archive.file.users += 1

    def _open_at(self, offset: int) -> None:
        self._drop_stream()
        self._stream = self.archive.zip.open(self.member)
        self._stream.seek(self.offset + offset)
        self._pos = offset

    def readinto(self, offset: int, out: memoryview) -> None:
        try:
            self.archive.file.check_unchanged()  # an archive rewritten in place would mix
            with zip_errors(self.label, "cannot read the member"):
                if self._stream is None or self._pos != offset:
                    self._open_at(offset)
                got = readinto_full(self._stream, out)
            self.archive.file.check_unchanged()
        except BaseException:
            self._drop_stream()
            raise
        self._pos = offset + got
        if got != len(out):
            self._drop_stream()
            raise InputError(
                f"{self.label}: member is truncated: expected {self.nbytes} data bytes, "
                f"it ends {self.nbytes - offset - got} bytes early"
            )
        if self._pos >= self.nbytes:
            self._drop_stream()

    def to_array(self):
        import numpy as np

        out = np.empty(self.nbytes, dtype=np.uint8)
        if self.nbytes:
            self.readinto(0, memoryview(out))
        return out

    def _drop_stream(self) -> None:
        if self._stream is not None:
            self._stream.close()
        self._stream = None
        self._pos = -1

    def close(self) -> None:
        """Done with this member; the archive's last member closes its file."""
        self._drop_stream()
        if not self._closed:
            self._closed = True
            self.archive.file.users -= 1
            if self.archive.file.users <= 0:
                self.archive.file.close()

    def __del__(self) -> None:
        try:
            self._drop_stream()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def read_npz(path: Path, member: str | None = None) -> list[Tensor]:
    """Every member of the archive (or only ``member``), as lazy tensors named
    by their member names. The file is opened once; every member is read
    from that descriptor."""
    from ..core.files import InputFile

    path = Path(path)
    label = str(path)
    file = InputFile(path, label)
    try:
        if file.reader().read(4) not in ZIP_STARTS:
            # zipfile would find an archive after anything (a self-extractor, a
            # polyglot file); np.load, like onnxop, wants the file to be one
            raise InputError(f"{label}: not an .npz file (it does not start with a zip header, PK\\x03\\x04)")
        archive = Archive(file, label)
        # (ZipInfo.is_dir() fails on an empty name: IndexError)
        infos = [i for i in archive.zip.infolist() if not i.filename.endswith("/")]
        names = [member_name(i.filename) for i in infos]
        if "" in names:
            raise InputError(f"{label}: a member has an empty name")
        _check_unique(names, label)
        if member is not None:
            if member not in names:
                raise UsageError(f"{label}: no member {member!r}; it holds {describe(names)}")
            infos = [infos[names.index(member)]]
        tensors = [_member_tensor(archive, info, label, file.size) for info in infos]
    except BaseException:
        file.close()
        raise
    if file.users == 0:  # no member left reading (none, or all strings, read already)
        file.close()
    return tensors


def _check_unique(names: list[str], label: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InputError(
                f"{label}: the archive holds more than one member named {name!r}; refusing an ambiguous archive"
            )
        seen.add(name)


def _check_sizes(info: zipfile.ZipInfo, archive_size: int, where: str) -> None:
    """What the directory declares must be possible for the bytes the archive
    holds: nothing is inflated on the strength of a lie."""
    if info.compress_size > archive_size:
        raise InputError(
            f"{where}: member declares {info.compress_size} compressed bytes; the archive has {archive_size}"
        )
    if info.compress_type == zipfile.ZIP_STORED:
        if info.file_size != info.compress_size:
            raise InputError(
                f"{where}: stored member declares {info.file_size} bytes but holds {info.compress_size}"
            )
    else:
        ratio, method = MAX_RATIOS.get(info.compress_type, (MAX_RATIO, "deflate"))
        if info.file_size > ratio * info.compress_size + 258:
            raise InputError(
                f"{where}: member declares {info.file_size} bytes from {info.compress_size} compressed bytes, "
                f"more than {ratio}x ({method}'s limit); refusing a likely zip bomb"
            )


def _member_tensor(archive: Archive, info: zipfile.ZipInfo, label: str, size: int) -> Tensor:
    name = member_name(info.filename)
    where = f"{label}[{name}]"
    _check_sizes(info, size, where)
    with zip_errors(where, "cannot read the member"):
        with archive.zip.open(info) as stream:
            _, shape, fortran, np_dtype = npy.read_header(stream, where)
            offset = stream.tell()
    npy.check_dtype(np_dtype, where)
    nbytes = npy.data_size(shape, np_dtype, where, info.file_size - offset, "member")
    data = ZipMemberBytes(archive, info.filename, offset, nbytes, where)
    return npy.tensor_from_header(where, name, shape, fortran, np_dtype, data, named=True)


def describe(names: list[str]) -> str:
    """``2 arrays: 'w', 'b'``: each name quoted, as a name from a file is
    (a member named ``a, b`` or holding a newline reads as one name)."""
    shown = ", ".join(repr(n) for n in names[:20]) + (f", ... ({len(names) - 20} more)" if len(names) > 20 else "")
    return f"{len(names)} array{'' if len(names) == 1 else 's'}: {shown}" if names else "no arrays"


def can_hold(dtype: DType) -> bool:
    return npy.can_hold(dtype)


class NpzWriter:
    """Writes members into an .npz archive on an open binary file.

    ``keep`` names an existing archive being updated (``-o`` naming the input
    archive): its members that are not written again are copied into the new
    one raw -- their zip entries byte for byte, stored or compressed, never
    inflated -- each in its old place; a member written again takes its
    old one's place.
    """

    def __init__(self, f: BinaryIO, label: str, keep: Path | None = None) -> None:
        # the archive being updated first: a ZipFile left behind by a failure
        # here would write its directory to a closed file when collected
        self._kept = _KeptMembers(Path(keep), label) if keep is not None else None
        self._zip = zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True)
        self._label = label
        self._names: set[str] = set()

    def _member(self, name: str) -> str:
        if name in self._names:
            raise OutputError(f"{self._label}: two members named {name!r}")
        self._names.add(name)
        if self._kept is not None:
            self._kept.copy_until(name, self._zip)
        return name + MEMBER_SUFFIX

    @contextmanager
    def tensor(self, name: str, shape: tuple[int, ...], dtype: DType) -> Iterator:
        npy.check_room(self._zip.fp, dtype.nbytes(math.prod(shape)), self._label)
        with self._zip.open(self._member(name), "w", force_zip64=True) as stream:
            npy.write_header(stream, shape, dtype)
            yield stream.write

    def strings(self, name: str, values, text_dtype: str = "") -> None:
        where = f"{self._label}[{name}]"
        dtype = npy.text_dtype_for(values, text_dtype, where)  # refused before the member is opened
        with self._zip.open(self._member(name), "w", force_zip64=True) as stream:
            npy.write_strings(stream, values, dtype)

    def close(self) -> None:
        if self._kept is not None:
            self._kept.copy_until(None, self._zip)
            self._kept.close()
        self._zip.close()

    def abort(self) -> None:
        """Give up after a failure: the file is about to be deleted, but the
        ZipFile would otherwise write its directory to the closed file when
        garbage-collected (an 'Exception ignored' traceback on stderr)."""
        if self._kept is not None:
            self._kept.close()
        try:
            self._zip.close()
        except Exception:  # noqa: BLE001 - the real error is being raised; close() drops fp regardless
            pass


class _KeptMembers:
    """The entries of an archive being updated, copied raw in their order."""

    def __init__(self, path: Path, label: str) -> None:
        self._label = label
        with zip_errors(label, "cannot read the archive being updated"):
            with zipfile.ZipFile(path) as archive:
                self._todo = [i for i in archive.infolist() if not i.filename.endswith("/")]
        self._file = open(path, "rb")
        self._size = path.stat().st_size
        try:  # every entry is checked before anything is written
            self._spans = {i.filename: self._span(i) for i in self._todo}
        except BaseException:
            self._file.close()
            raise

    def copy_until(self, name: str | None, out: zipfile.ZipFile) -> None:
        """Copy the entries before member ``name`` (all when None) and drop
        ``name``'s own, which is about to be written anew."""
        names = [member_name(i.filename) for i in self._todo]
        if name is not None and name not in names:
            return  # a new member: it goes here, the rest follow later
        stop = names.index(name) if name is not None else len(names)
        for info in self._todo[:stop]:
            self._copy(info, out)
        self._todo = self._todo[stop + 1 :]

    def _span(self, info: zipfile.ZipInfo) -> int:
        """The bytes of ``info``'s entry: local header, data, data descriptor."""
        where = f"{self._label}[{member_name(info.filename)}]"
        _check_sizes(info, self._size, where)
        src = self._file
        src.seek(info.header_offset)
        header = src.read(30)
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise InputError(f"{where}: no local header where the archive's directory says")
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        length = 30 + name_len + extra_len + info.compress_size
        if info.flag_bits & 0x08:  # a data descriptor follows the data
            src.seek(info.header_offset + length)
            signature = 4 if src.read(4) == b"PK\x07\x08" else 0
            src.seek(info.header_offset + 30 + name_len)
            zip64 = _has_zip64(src.read(extra_len))
            length += signature + 4 + (16 if zip64 else 8)
        if info.header_offset + length > self._size:
            raise InputError(f"{where}: the member runs past the end of the archive")
        return length

    def _copy(self, info: zipfile.ZipInfo, out: zipfile.ZipFile) -> None:
        where = f"{self._label}[{member_name(info.filename)}]"
        src, length = self._file, self._spans[info.filename]
        # zipfile has no raw copy: place the bytes where its next member
        # would go, then record the entry as its own writers do (start_dir,
        # filelist, NameToInfo), so close() writes the directory for it.
        copied = copy.copy(info)
        out.fp.seek(out.start_dir)
        copied.header_offset = out.fp.tell()
        src.seek(info.header_offset)
        left = length
        while left:
            piece = src.read(min(left, 1 << 20))
            if not piece:
                raise InputError(f"{where}: the archive is truncated")
            out.fp.write(piece)
            left -= len(piece)
        out.start_dir = out.fp.tell()
        out.filelist.append(copied)
        out.NameToInfo[copied.filename] = copied
        out._didModify = True

    def close(self) -> None:
        self._file.close()


def _has_zip64(extra: bytes) -> bool:
    while len(extra) >= 4:
        tag, size = struct.unpack("<HH", extra[:4])
        if tag == 1:
            return True
        extra = extra[4 + size :]
    return False


WRITER = NpzWriter
