"""Progress bars for large transfers, on stderr, only for a person watching.

The copy engine is not touched: a tensor's ByteSource is wrapped in
:class:`CountingBytes`, which reads in steps and reports each step. Every byte
the GPU path uploads (and every byte ``show`` loads) passes through
``readinto``, so the count is the transfer's progress; the output is written
as the same chunks come back, at most a chunk or two behind.

A bar is shown only when :func:`wanted` says so: stderr is a terminal, the
user did not ask for ``--quiet``, and the transfer is larger than
THRESHOLD. rich is imported only then.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator, TextIO

from ..core.sources import read_runs

if TYPE_CHECKING:
    import numpy as np

    from ..core.sources import ByteSource

THRESHOLD = 64 << 20  # bytes; smaller transfers finish before a bar is worth drawing
STEP = 8 << 20  # bytes per progress update (a 64 MiB chunk gives 8 updates)


def wanted(nbytes: int, *, quiet: bool, stream: TextIO | None = None) -> bool:
    """Whether a transfer of ``nbytes`` gets a bar: a terminal on ``stream``
    (stderr by default), no ``--quiet``, more than THRESHOLD bytes."""
    if quiet or nbytes <= THRESHOLD:
        return False
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or not a real stream
        return False


class CountingBytes:
    """A ByteSource that reads through ``inner`` in STEP-sized pieces and
    calls ``advance(n)`` after each, in order, front to back."""

    def __init__(self, inner: ByteSource, advance: Callable[[int], object], step: int = STEP) -> None:
        self.inner = inner
        self.nbytes = inner.nbytes
        self._advance = advance
        self._step = max(1, step)

    def readinto(self, offset: int, out: memoryview) -> None:
        for start in range(0, len(out), self._step):
            piece = out[start : start + self._step]
            self.inner.readinto(offset + start, piece)
            self._advance(len(piece))

    def readruns(self, runs: list[tuple[int, int, int]], out: memoryview) -> None:
        """The inner source's batched read (core.sources.read_runs), counted once."""
        read_runs(self.inner, runs, out)
        self._advance(sum(n for _, _, n in runs))

    def to_array(self) -> np.ndarray:
        import numpy as np

        out = np.empty(self.nbytes, dtype=np.uint8)
        if self.nbytes:
            self.readinto(0, memoryview(out))
        return out


@contextmanager
def tracked(
    source: ByteSource, label: str, *, quiet: bool, stream: TextIO | None = None, reads: int = 1
) -> Iterator[ByteSource]:
    """``source`` itself, or a CountingBytes drawing a bar while the block runs
    (``reads``: how many times the block reads it whole, the bar's 100%)."""
    if source is None or not wanted(source.nbytes, quiet=quiet, stream=stream):
        yield source
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    from .console import rich_console

    console = rich_console(file=sys.stderr if stream is None else stream)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(binary_units=True),  # MiB, as every other size onnxop prints
        TextColumn("{task.fields[rate]}"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        from rich.markup import escape

        from ..render.node import quote

        # a name from a file: neither a control character nor rich markup reaches the terminal
        task = bar.add_task(escape(quote(label)), total=source.nbytes * reads, rate="?")

        def advance(n: int) -> None:
            bar.update(task, advance=n, rate=rate(bar.tasks[0].speed))

        yield CountingBytes(source, advance)


def rate(bytes_per_second: float | None) -> str:
    """``12.3 MiB/s`` (binary units, as the sizes beside it); ``?`` before a speed is known."""
    if not bytes_per_second:
        return "?"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if bytes_per_second >= scale:
            return f"{bytes_per_second / scale:.1f} {unit}/s"
    return f"{bytes_per_second:.0f} B/s"
