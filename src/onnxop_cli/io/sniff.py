"""``-`` as an input: stdin in any format onnxop reads, recognised by content.

A stream has no suffix, so its first bytes decide: ``\\x93NUMPY`` is a .npy
(streamed through the GPU as it arrives, stdio.py), ``PK`` an .npz (a zip
needs seeking: the stream is spooled to a private temporary file, removed at
exit), anything else is parsed as a serialized TensorProto (read whole,
under protobuf's 2 GiB). A stream that is none of them is refused in one
line naming the formats accepted.
"""

from __future__ import annotations

import io
import shutil
import sys
import tempfile
from pathlib import Path
from typing import BinaryIO

from ..errors import InputError, OnnxopError, UsageError
from ..core.tensor import Tensor
from . import stdio

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK"
ACCEPTED = ".npy, .npz or .pb (ONNX TensorProto)"


def read_stdin(member: str | None = None, stream: BinaryIO | None = None) -> list[Tensor]:
    """The tensors piped into stdin (``stream`` in tests)."""
    if stream is None:
        if sys.stdin.isatty():
            stdio.read_npy_stream(isatty=True)  # raises its "stdin is a terminal" error
        stream = stdio._stdin()
    head = stream.read(len(NPY_MAGIC)) or b""
    whole = io.BufferedReader(_Rejoined(head, stream))
    if NPY_MAGIC.startswith(head):  # also an empty or cut-short stream: the .npy reader names the problem
        if member is not None:
            raise UsageError("-: --member selects an array of an .npz stream; stdin holds a .npy")
        return [stdio.read_npy_stream(whole, isatty=False)]
    if head.startswith(ZIP_MAGIC):
        return _read_npz(whole, member)
    if member is not None:
        raise UsageError("-: --member selects an array of an .npz stream; stdin holds no archive")
    return [_read_pb(whole)]


class _Rejoined(io.RawIOBase):
    """The bytes already read from ``rest``, then the rest of it."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._rest.readinto(buffer)


_spools: list[BinaryIO] = []  # stdin archives, spooled: open (and unlinked) for the life of the process


def close_spools() -> None:
    """Close the spooled stdin archives (the in-process CLI calls this after
    each run; at exit the process closes them anyway: they have no name)."""
    while _spools:
        _spools.pop().close()


def _read_npz(stream: BinaryIO, member: str | None) -> list[Tensor]:
    """An archive needs random access: stdin is copied into a temporary file
    that has no name (O_TMPFILE, or unlinked at once), so that however the
    process ends -- SIGKILL included -- nothing is left behind. It is read
    through /proc/self/fd, the one path to it."""
    from .npz import read_npz

    folder = tempfile.gettempdir()
    try:
        spool = tempfile.TemporaryFile(prefix="onnxop-stdin-", dir=folder)
    except OSError as e:
        raise OnnxopError(f"-: cannot spool the .npz stream on stdin into {folder}: {e.strerror or e} "
                          f"(set TMPDIR to a folder with room)") from None
    _spools.append(spool)
    try:
        shutil.copyfileobj(stream, spool, 1 << 20)
        spool.flush()
    except OSError as e:
        spool.truncate(0)  # (give the room back at once)
        raise OnnxopError(f"-: cannot spool the .npz stream on stdin into {folder}: {e.strerror or e} "
                          f"(set TMPDIR to a folder with room)") from None
    path = Path(f"/proc/self/fd/{spool.fileno()}")
    try:
        tensors = read_npz(path, member)
    except OnnxopError as e:  # name the stream, not our temporary file
        raise e.reworded(e.message.replace(str(path), "-")) from None
    if not tensors:
        raise InputError("-: the archive holds no arrays")
    return tensors


def _read_pb(stream: BinaryIO) -> Tensor:
    import onnx
    from google.protobuf.message import DecodeError

    from .tensorproto import EXTERNAL, MAX_MESSAGE, tensor_from_proto

    data = stream.read(MAX_MESSAGE + 1)
    if len(data) > MAX_MESSAGE:
        raise InputError(f"-: stdin is not a {ACCEPTED} stream (more than 2 GiB, and not .npy or .npz)")
    proto = onnx.TensorProto()
    try:
        proto.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        detail = " ".join(str(e).split()).replace("Error parsing message with type 'onnx.TensorProto': ", "")
        raise InputError(f"-: stdin is not a {ACCEPTED} stream ({detail or type(e).__name__})") from None
    if proto.data_type == 0:  # parsed, but nothing a tensor would hold: text, another message
        raise InputError(f"-: stdin is not a {ACCEPTED} stream (as a TensorProto it has no data type)")
    from .tensorproto import _refuse_other_messages

    _refuse_other_messages(proto, data, "-")
    if proto.data_location == EXTERNAL:
        raise InputError("-: a TensorProto on stdin cannot keep its data in an external file; give the .pb's path")
    return tensor_from_proto(proto, Path("."), "-", stdio.STDIN_NAME)
