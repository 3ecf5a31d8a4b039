"""When a progress bar is drawn (a terminal on stderr, no --quiet, a transfer
above the threshold) and that drawing one changes no byte. No timing."""

from __future__ import annotations

import contextlib
import io
import sys

import numpy as np
import pytest

from conftest import random_array
from onnxop_cli.cli import progress
from onnxop_cli.cli.main import run
from onnxop_cli.core.tensor import MemoryBytes, StreamBytes

# A CLI/format test, not a kernel test: the first backend is enough (conftest).
ONE_BACKEND = True

BIG = progress.THRESHOLD + 1


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


@pytest.mark.parametrize(
    "nbytes,quiet,stream,expected",
    [
        (BIG, False, Terminal(), True),
        (BIG, True, Terminal(), False),  # --quiet
        (BIG, False, Pipe(), False),  # piped or redirected stderr
        (progress.THRESHOLD, False, Terminal(), False),  # at the threshold: too small
        (0, False, Terminal(), False),
        (10 * BIG, False, Pipe(), False),
    ],
)
def test_when_a_bar_is_wanted(nbytes, quiet, stream, expected):
    assert progress.wanted(nbytes, quiet=quiet, stream=stream) is expected


def test_threshold_is_about_64_mib():
    assert progress.THRESHOLD == 64 << 20


def test_a_closed_stream_wants_no_bar():
    closed = io.StringIO()
    closed.close()  # isatty() now raises ValueError
    assert progress.wanted(BIG, quiet=False, stream=closed) is False


@pytest.mark.parametrize("step", [1, 7, 4096, 1 << 20])
def test_counting_bytes_changes_nothing_and_counts_everything(rng, step):
    data = rng.integers(0, 256, 10_007, dtype=np.uint8)
    seen: list[int] = []
    counted = progress.CountingBytes(MemoryBytes(data), seen.append, step=step)
    assert counted.nbytes == data.nbytes
    out = bytearray(data.nbytes)
    view = memoryview(out)
    counted.readinto(0, view[:5000])
    counted.readinto(5000, view[5000:])
    assert bytes(out) == data.tobytes()
    assert sum(seen) == data.nbytes and max(seen) <= step
    assert counted.to_array().tobytes() == data.tobytes()


def test_counting_bytes_reads_a_stream_front_to_back(rng):
    data = rng.integers(0, 256, 3000, dtype=np.uint8).tobytes()
    seen: list[int] = []
    counted = progress.CountingBytes(StreamBytes(io.BytesIO(data), len(data)), seen.append, step=256)
    assert counted.to_array().tobytes() == data
    assert sum(seen) == 3000


def test_tracked_wraps_only_when_a_bar_is_wanted(rng):
    source = MemoryBytes(np.zeros(16, np.uint8))
    source.nbytes = BIG  # only the size matters for the decision
    with progress.tracked(source, "x", quiet=False, stream=Pipe()) as got:
        assert got is source
    with progress.tracked(source, "x", quiet=True, stream=Terminal()) as got:
        assert got is source
    with progress.tracked(None, "x", quiet=False, stream=Terminal()) as got:
        assert got is None  # string tensors have no bytes to count


def test_tracked_draws_on_the_terminal_it_is_given(rng):
    data = rng.integers(0, 256, 4096, dtype=np.uint8)
    screen = Terminal()
    source = MemoryBytes(data)
    progress_threshold = progress.THRESHOLD
    try:
        progress.THRESHOLD = 1024
        with progress.tracked(source, "copying a", quiet=False, stream=screen) as got:
            assert isinstance(got, progress.CountingBytes)
            assert got.to_array().tobytes() == data.tobytes()
    finally:
        progress.THRESHOLD = progress_threshold
    assert "copying a" in screen.getvalue()


# ----------------------------------------------------------------- in the CLI


@pytest.mark.parametrize("quiet", [False, True])
def test_cli_draws_a_bar_on_a_terminal_unless_quiet(backend, tmp_path, monkeypatch, capsys, rng, quiet):
    a = random_array(rng, (64, 64), "float32")
    np.save(tmp_path / "a.npy", a)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(progress, "THRESHOLD", 1024)  # a 16 KiB tensor counts as large
    monkeypatch.setattr(progress, "STEP", 4096)
    wrapped = []
    real = progress.CountingBytes

    def spy(*args, **kw):
        wrapped.append(real(*args, **kw))
        return wrapped[-1]

    monkeypatch.setattr(progress, "CountingBytes", spy)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    argv = ["flatten", "a.npy", "-o", "b.npy", "-b", backend] + (["--quiet"] if quiet else [])
    code = run(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert np.load(tmp_path / "b.npy").tobytes() == a.tobytes()
    if quiet:
        assert wrapped == [] and err == "" and out == ""
    else:
        assert len(wrapped) == 1 and wrapped[0].nbytes == a.nbytes
        assert "Flatten a" in err  # the bar's label, drawn on stderr
        assert out == "Flatten: a (64, 64) float32 -> b (64, 64) float32, wrote b.npy\n"


def test_cli_draws_nothing_when_stderr_is_not_a_terminal(tmp_path, monkeypatch, capsys, rng):
    np.save(tmp_path / "a.npy", random_array(rng, (64, 64), "float32"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(progress, "THRESHOLD", 1024)
    code = run(["show", "a.npy"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert out.startswith("a.npy:\n  a: shape=(64, 64), dtype=float32")


def test_the_bar_counts_in_mib_as_everything_else(rng, monkeypatch):
    data = rng.integers(0, 256, 3 << 20, dtype=np.uint8)
    screen = Terminal()
    monkeypatch.setattr(progress, "THRESHOLD", 1024)
    with progress.tracked(MemoryBytes(data), "copying a", quiet=False, stream=screen) as got:
        got.to_array()
    text = screen.getvalue()
    assert "/3.0 MiB" in text and "MB" not in text


@pytest.mark.parametrize("speed,text", [(None, "?"), (0.0, "?"), (512, "512 B/s"), (3 << 20, "3.0 MiB/s"),
                                        (int(2.5 * (1 << 30)), "2.5 GiB/s"), (1536, "1.5 KiB/s")])
def test_rate_is_in_binary_units(speed, text):
    assert progress.rate(speed) == text


@pytest.mark.parametrize("hist", [False, True])
def test_show_of_a_large_file_on_a_terminal_reads_it_by_slices_and_the_bar_ends_at_its_reads(
        tmp_path, monkeypatch, capsys, rng, hist):
    """show of a file past the map threshold prints from the map and reads its statistics (and --hist's two
    passes) slice by slice. With a bar drawn, the printed values were read through the bar whole into
    memory (a 160 MB file: 314 MB peak RSS against 162 without a terminal) and the bar ran to 200%."""
    from onnxop_cli.core import sources

    a = random_array(rng, (256, 256), "float32")
    np.save(tmp_path / "a.npy", a)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(progress, "THRESHOLD", 1024)
    monkeypatch.setattr(sources, "MAP_THRESHOLD", 4096)
    wholes, bars = [], []
    real_array, real_tracked = progress.CountingBytes.to_array, progress.tracked

    def whole(self):
        wholes.append(self.nbytes)
        return real_array(self)

    def tracked(source, label, **kw):
        bars.append(kw.get("reads", 1) * source.nbytes)
        counted = []
        with real_tracked(source, label, **kw) as got:
            if isinstance(got, progress.CountingBytes):
                advance = got._advance
                got._advance = lambda n: (counted.append(n), advance(n))
            yield got
        bars[-1] = (bars[-1], sum(counted))

    monkeypatch.setattr(progress.CountingBytes, "to_array", whole)
    monkeypatch.setattr(progress, "tracked", contextlib.contextmanager(tracked))
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code = run(["show", "a.npy"] + (["--hist"] if hist else []))
    out, err = capsys.readouterr()
    assert code == 0, err
    assert wholes == []  # never the whole file in memory through the bar
    assert bars == [(a.nbytes * (3 if hist else 1),) * 2]  # the bar's total is what it counted
    assert "a: shape=(256, 256), dtype=float32" in out
