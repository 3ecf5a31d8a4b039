"""The host side of a large transpose: packed runs built axis by axis, read in
one batch (FileBytes.readruns: the file checked once before and once after),
and the gather's mapped buffers on adapters that map storage buffers.

A transpose larger than a binding that moves the innermost and the outermost
axis (3-D ``2,1,0``) reads each band as a million short runs
(docs/performance-adapters.md). Each test here compares with an independent
reference: numpy's transpose, or a run-by-run ``readinto``.
"""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest

from conftest import random_array
from onnxop_cli.cli.progress import CountingBytes
from onnxop_cli.core.sources import FileBytes, MemoryBytes, read_runs
from onnxop_cli.errors import InputError
from onnxop_cli.gpu import View, gather, gather_through_kernel, tiling
from onnxop_cli.gpu.tiling import Plan

POISON = 0x5A
HEADER = 128  # bytes before the data in the test files, as a .npy header


def _file(tmp_path, data: bytes) -> FileBytes:
    path = tmp_path / "data.bin"
    path.write_bytes(b"\x00" * HEADER + data)
    return FileBytes(path, HEADER, len(data))


def _runs(rng, nbytes: int, count: int, out_bytes: int) -> list[tuple[int, int, int]]:
    runs, into = [], 0
    for _ in range(count):
        n = int(rng.integers(1, 700))
        if into + n > out_bytes:
            break
        runs.append((int(rng.integers(0, nbytes - n)), into, n))
        into += n + int(rng.integers(0, 5))
    return runs


def _by_readinto(source, runs, out_bytes: int) -> bytes:
    out = bytearray(b"\xee" * out_bytes)
    for offset, into, n in runs:
        source.readinto(offset, memoryview(out)[into : into + n])
    return bytes(out)


# ------------------------------------------------------------ reading runs


def test_file_runs_read_as_readinto_reads_them(tmp_path, rng):
    data = rng.integers(0, 256, 1 << 16, dtype=np.uint8).tobytes()
    source = _file(tmp_path, data)
    runs = _runs(rng, len(data), 400, 1 << 17)
    out = bytearray(b"\xee" * (1 << 17))
    read_runs(source, runs, memoryview(out))
    assert bytes(out) == _by_readinto(source, runs, len(out))
    assert bytes(out[runs[3][1] : runs[3][1] + runs[3][2]]) == data[runs[3][0] : runs[3][0] + runs[3][2]]


def test_sources_without_a_batch_read_run_by_run(rng):
    data = rng.integers(0, 256, 1 << 14, dtype=np.uint8)
    source = MemoryBytes(data)
    assert not hasattr(source, "readruns")
    runs = _runs(rng, data.size, 100, 1 << 15)
    out = bytearray(b"\xee" * (1 << 15))
    read_runs(source, runs, memoryview(out))
    assert bytes(out) == _by_readinto(source, runs, len(out))


def test_counted_runs_advance_the_bar_by_their_bytes(tmp_path, rng):
    data = rng.integers(0, 256, 1 << 14, dtype=np.uint8).tobytes()
    seen = []
    source = CountingBytes(_file(tmp_path, data), seen.append)
    runs = _runs(rng, len(data), 50, 1 << 15)
    out = bytearray(b"\xee" * (1 << 15))
    read_runs(source, runs, memoryview(out))
    assert sum(seen) == sum(n for _, _, n in runs)
    assert bytes(out) == _by_readinto(source.inner, runs, len(out))


def test_a_file_changed_in_place_is_refused_by_a_batch(tmp_path, rng):
    data = rng.integers(0, 256, 1 << 14, dtype=np.uint8).tobytes()
    source = _file(tmp_path, data)
    with open(source.path, "r+b") as f:  # same size, new bytes and mtime
        f.seek(HEADER)
        f.write(b"\x01" * 16)
    os.utime(source.path, ns=(1, 1))
    with pytest.raises(InputError, match="changed while onnxop read it"):
        read_runs(source, [(0, 0, 16), (100, 16, 16)], memoryview(bytearray(32)))


def test_a_truncated_file_is_refused_by_a_batch(tmp_path, rng):
    data = rng.integers(0, 256, 1 << 14, dtype=np.uint8).tobytes()
    source = _file(tmp_path, data)
    os.truncate(source.path, HEADER + 1000)
    with pytest.raises(InputError, match="truncated"):
        read_runs(source, [(0, 0, 16), (5000, 16, 16)], memoryview(bytearray(32)))


# ------------------------------------------------------------ the runs a plan packs


def _old_runs(plan: Plan, box, upload) -> list[tuple[int, int, int]]:
    """The runs as the plan once built them, element by element with itertools."""
    v, bits = plan.view, plan.bits
    axes = range(box.axis, len(v.shape))
    extent = {k: box.extent if k == box.axis else v.shape[k] for k in axes}
    unit = max((k for k in axes if abs(v.strides[k]) == 1 and extent[k] > 1), key=lambda k: extent[k])
    others = [k for k in axes if k != unit and v.strides[k] != 0 and extent[k] > 1]
    start = box.origin + min(0, (extent[unit] - 1) * v.strides[unit])
    strides = dict(zip(axes, upload.dispatches[0].strides))
    runs = []
    for index in itertools.product(*(range(extent[k]) for k in others)):
        source = start + sum(i * v.strides[k] for i, k in zip(index, others))
        into = sum(i * strides[k] for i, k in zip(index, others))
        runs.append((source * bits // 8, into * bits // 8, upload.runs[0][2]))
    return runs


@pytest.mark.parametrize("shape, perm", [((6, 40, 50), (2, 1, 0)), ((4, 5, 6, 30), (3, 1, 2, 0)),
                                          ((7, 3, 64), (2, 0, 1)), ((8, 90), (1, 0))])
@pytest.mark.parametrize("bits", [8, 32, 64])
def test_packed_runs_are_the_element_by_element_ones(shape, perm, bits):
    strides = np.cumprod((1,) + tuple(reversed(shape[1:])))[::-1]
    view = View(tuple(shape[p] for p in perm), tuple(int(strides[p]) for p in perm), 0)
    nbytes = int(np.prod(shape)) * bits // 8
    plan, _, _ = gather.make_plan(_NoGpu(), nbytes, view, bits, 0, binding_bytes=4096)
    seen = 0
    for start in range(0, view.size, plan.band):
        for box in tiling.boxes(plan.view, start, min(view.size, start + plan.band)):
            upload = plan.packed(box, budget=1 << 60)  # whatever the read calls would cost
            if upload is not None and len(upload.runs) > 1:
                assert upload.runs == _old_runs(plan, box, upload)
                seen += 1
    assert seen  # the small binding made boxes that pack runs


class _NoGpu:
    """What make_plan asks of a device: its limits."""

    limits = {"max-storage-buffer-binding-size": 1 << 27}


# ------------------------------------------------------------ mapped and staged bands


@pytest.mark.parametrize("mapped", [True, False], ids=["mapped", "staged"])
@pytest.mark.parametrize("shape, perm", [((12, 40, 36), (2, 1, 0)), ((9, 33, 41), (2, 1, 0)), ((64, 48), (1, 0))])
def test_bands_of_a_file_transposed_exactly(gpu, rng, tmp_path, monkeypatch, mapped, shape, perm):
    """A file source read as packed runs in bands of a small binding, through
    the gather's mapped buffers (where the adapter maps storage buffers) and
    its staged ones, against numpy, with poisoned output."""
    if mapped and not gather.can_map(gpu):
        pytest.skip("no mapped storage buffers on this engine and adapter")
    if not mapped:
        monkeypatch.setattr(gather, "can_map", lambda g: False)
    a = random_array(rng, shape, np.dtype("<f4"))
    source = _file(tmp_path, a.tobytes())
    strides = tuple(s // 4 for s in a.strides)
    view = View(tuple(shape[p] for p in perm), tuple(strides[p] for p in perm), 0)
    out = bytearray()
    written = gather_through_kernel(gpu, source, out.extend, view=view, bits=32, poison=POISON, binding_bytes=8192)
    record = dict(gpu.cache["gather-last"])
    source.close()
    assert written == a.nbytes and bytes(out) == np.ascontiguousarray(a.transpose(perm)).tobytes()
    assert record["mapped"] is mapped
    assert record["dispatches"] > 1


@pytest.mark.parametrize("mapped", [True, False], ids=["mapped", "staged"])
def test_mapped_bands_are_twice_the_staged_ones(gpu, rng, monkeypatch, mapped):
    """Two mapped buffers hold what four staged ones do: the mapped path's
    bands are MAPPED_BAND, the staged path's DEFAULT_BAND (both made small)."""
    if mapped and not gather.can_map(gpu):
        pytest.skip("no mapped storage buffers on this engine and adapter")
    if not mapped:
        monkeypatch.setattr(gather, "can_map", lambda g: False)
    monkeypatch.setattr(gather, "DEFAULT_BAND", 4096)
    monkeypatch.setattr(gather, "MAPPED_BAND", 8192)
    a = random_array(rng, (16, 32, 48), np.dtype("<f4"))  # 96 KiB
    bands = []
    real = gather.Run.drain

    def drain(self, sink, written, nbytes):
        bands.append(nbytes)
        return real(self, sink, written, nbytes)

    monkeypatch.setattr(gather.Run, "drain", drain)
    out = bytearray()
    strides = tuple(s // 4 for s in a.strides)
    view = View((48, 32, 16), (strides[2], strides[1], strides[0]), 0)
    gather_through_kernel(gpu, MemoryBytes(a), out.extend, view=view, bits=32, poison=POISON)
    assert bytes(out) == np.ascontiguousarray(a.transpose(2, 1, 0)).tobytes()
    assert max(bands) == (8192 if mapped else 4096) and sum(bands) == a.nbytes
