"""A gather's source streamed through one window buffer (gpu/indexed_buffers.py),
byte for byte against numpy / onnx.reference on random bits: every pass of
bands runs against every window, each window uploaded once per pass into the
same buffer (the queue orders the upload after the dispatches that read the
last one), narrow elements read-modify-written across windows, the checks
whole (a bad index: nothing reaches the sink), the pass count as planned.
Forced small here (``window_bytes``, ``binding_bytes``, ``stream_bytes``);
the rule that picks streaming is tests/unit/test_gather_windows_rule.py's.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import random_array
from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import indexed_buffers
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.ops import indexing
from properties import data_of, index_of, little, native

POISON = 0x5A
TYPES = ["u1", "<i2", "<f2", "<f4", "<f8", "<c16", ">f4", ">f8", "?"]


@pytest.fixture
def uploads(monkeypatch):
    """The windows uploaded (first byte of each), in order."""
    class Seen(list):
        ways: set[str]

    seen = Seen()
    each = indexed_buffers.Windows.each

    def counting(self):
        for buf, w0, wn in each(self):  # a streamed window is uploaded as it is reached
            if self.streamed:
                seen.append(w0 * self.bits // 8)
                ways.add("staged" if self.staging is not None else "mapped")
            yield buf, w0, wn

    ways: set[str] = set()
    monkeypatch.setattr(indexed_buffers.Windows, "each", counting)
    seen.ways = ways  # type: ignore[attr-defined]
    return seen


def run(gpu, x, i, table, check, **kw) -> bytes:
    out = bytearray()
    ix.gather_indexed(gpu, data_of(x), index_of(i), check, table, out.extend, poison=POISON, **kw)
    return bytes(out)


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("per_pass", [1, 2])
def test_rows_streamed_in_passes(gpu, rng, uploads, dtype, per_pass):
    """Gather of rows (axis 0) and along an inner axis: windows of 512
    bytes, bands of 1 KiB, passes of one or two bands, so several passes,
    each uploading every window again into the one buffer."""
    x = random_array(rng, (29, 37), dtype)
    item = x.dtype.itemsize
    band = max(128, (1024 // item) // 128 * 128)  # elements, as gather_indexed cuts them
    stream = per_pass * band * item
    i = rng.integers(-29, 29, (-(-3 * band * per_pass // 37),)).astype(np.int64)  # three passes
    table, check = indexing.gather("Gather", x.shape, i.shape, 0)
    got = run(gpu, x, i, table, check, window_bytes=512, binding_bytes=1024, stream_bytes=stream)
    assert got == little(np.take(native(x), i, axis=0))
    windows = -(-x.size // max(128, (512 // item) // 128 * 128))
    passes = -(-i.size * 37 // (band * per_pass))
    assert windows > 1 and passes > 1
    assert len(uploads) == windows * passes
    assert uploads == sorted(set(uploads)) * passes, "each pass uploads every window, in order"
    y = random_array(rng, (3, 29, 37), dtype)
    table, check = indexing.gather("Gather", y.shape, i.shape, 1)
    got = run(gpu, y, i, table, check, window_bytes=1024, binding_bytes=1024, stream_bytes=stream)
    assert got == little(np.take(native(y), i, axis=1))


@pytest.mark.parametrize("dtype", ["u1", "<f4", ">f8"])
def test_elements_streamed_one_pass(gpu, rng, uploads, dtype):
    """An output of one band (the kernel checks the indices itself) and one
    pass: every window uploaded exactly once; GatherElements' random reads."""
    x = random_array(rng, (40, 50), dtype)
    i = rng.integers(-50, 50, (40, 7)).astype(np.int64)
    table, check = indexing.gather_elements("GatherElements", x.shape, i.shape, 1)
    got = run(gpu, x, i, table, check, window_bytes=256, stream_bytes=1 << 20)
    assert got == little(np.take_along_axis(native(x), np.where(i < 0, i + 50, i), axis=1))
    per = max(128, (256 // x.dtype.itemsize) // 128 * 128)
    assert len(uploads) == -(-x.size // per)


@pytest.mark.parametrize("bits", [2, 4])
def test_packed_streamed(gpu, rng, uploads, bits):
    """2- and 4-bit elements: words of the output assembled from several
    windows in every pass, none lost when the next window overwrites the buffer."""
    per = 8 // bits
    codes = rng.integers(0, 1 << bits, (47, 41), dtype=np.uint8)
    pack = lambda c: (np.concatenate([c.reshape(-1), np.zeros((-c.size) % per, np.uint8)]).reshape(-1, per)  # noqa: E731
                      << (np.arange(per, dtype=np.uint8) * bits)).sum(axis=1).astype(np.uint8)
    i = rng.integers(-47, 47, (59,)).astype(np.int64)
    table, check = indexing.gather("Gather", codes.shape, i.shape, 0)
    out = bytearray()
    ix.gather_indexed(gpu, ix.Data(MemoryBytes(pack(codes)), codes.shape, bits), index_of(i), check, table,
                      out.extend, poison=POISON, window_bytes=64, binding_bytes=64, stream_bytes=256)
    assert bytes(out) == pack(np.take(codes, i, axis=0)).tobytes()
    assert len(uploads) > len(set(uploads)) > 1


@pytest.mark.parametrize("bad", [61, -62, 2**32 + 1, -(2**63)])
def test_bad_index_streamed_writes_nothing(gpu, rng, uploads, bad):
    """Streamed, one band (checked in the kernel) or many (checked first):
    an index out of range is refused with its position and nothing reaches the sink."""
    x = random_array(rng, (61, 37), "<f4")
    for n, band in [(5, None), (53, 1024)]:
        i = rng.integers(-61, 61, (n,)).astype(np.int64)
        i[n // 2] = bad
        table, check = indexing.gather("Gather", x.shape, i.shape, 0)
        out = bytearray()
        with pytest.raises(ix.BadIndex) as e:
            ix.gather_indexed(gpu, data_of(x), index_of(i), check, table, out.extend, window_bytes=512,
                              binding_bytes=band, stream_bytes=2048)
        assert out == bytearray()
        assert e.value.position == (n // 2,) and e.value.value == bad


def test_zero_size_streamed(gpu, rng, uploads):
    """No indices: an empty output, nothing uploaded; an empty inner axis likewise."""
    x = random_array(rng, (61, 37), "<f4")
    i = np.zeros((0,), np.int64)
    table, check = indexing.gather("Gather", x.shape, i.shape, 0)
    assert run(gpu, x, i, table, check, window_bytes=512, stream_bytes=2048) == b""
    assert uploads == []


@pytest.mark.parametrize("dtype", ["u1", "<f4", ">f8"])
def test_staged_and_mapped(gpu, rng, uploads, monkeypatch, dtype):
    """Windows mapped where the adapter's storage buffers map, else through
    the upload buffer a step at a time (forced here): the same bytes."""
    from onnxop_cli.gpu import buffers

    x = random_array(rng, (29, 37), dtype)
    i = rng.integers(-29, 29, (41,)).astype(np.int64)
    table, check = indexing.gather("Gather", x.shape, i.shape, 0)
    want = little(np.take(native(x), i, axis=0))
    assert run(gpu, x, i, table, check, window_bytes=512, binding_bytes=1024, stream_bytes=1024) == want
    assert uploads.ways == {"mapped" if buffers.can_map(gpu) else "staged"}
    uploads.ways.clear()
    monkeypatch.setattr(buffers, "can_map", lambda gpu: False)
    monkeypatch.setattr(indexed_buffers, "UPLOAD_STEP", 192)  # several steps a window
    assert run(gpu, x, i, table, check, window_bytes=512, binding_bytes=1024, stream_bytes=1024) == want
    assert uploads.ways == {"staged"}
