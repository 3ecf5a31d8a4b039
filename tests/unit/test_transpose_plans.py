"""The transpose kernels' host side, no GPU: which dispatches are blocked,
the block grid, the schedule's choice by answer
and override, the runs a band reads from a file (as readinto reads them,
refusing a file changed or truncated under it) and the runs a plan packs
(as the element-by-element ones). The kernels themselves are properties in
tests/gpu/test_transpose.py.
"""

from __future__ import annotations

import itertools
import os
from typing import ClassVar

import numpy as np
import pytest

from onnxop_cli.cli.progress import CountingBytes
from onnxop_cli.core.sources import FileBytes, read_runs
from onnxop_cli.core.tensor import MemoryBytes
from onnxop_cli.errors import InputError
from onnxop_cli.gpu import Access, choose, tiling
from onnxop_cli.gpu import gather as g
from onnxop_cli.gpu.buffers import grid
from onnxop_cli.gpu.render.strided import KERNELS
from onnxop_cli.gpu.tiling import Dispatch, Plan

HEADER = 128  # bytes before the data in the file sources, as a .npy header


# ------------------------------------------------------------ the choice (no GPU)


def _dispatch(shape, strides, keep=False):
    v = Access(shape, strides)
    box = next(tiling.boxes(v, 0, v.size))
    return Dispatch(box, v.strides[box.axis :], 0, keep)


def test_the_choice_by_answer_and_override(monkeypatch):
    """The transpose question's answer picks the kernel, $ONNXOP_GATHER
    overrides it; a view with no unit-stride axis but the last (a slice),
    or sub-word elements, never asks (FakeGpu could not answer)."""

    class FakeGpu:
        schedules_used: ClassVar[dict] = {}

    plan = Plan(Access((4, 4), (1, 4)), 32, 16, 16, 4, 64)
    monkeypatch.delenv(g.ENV_GATHER, raising=False)
    for answer, taken in [("blocked", ["blocked"]), ("generic", [])]:
        monkeypatch.setenv(choose.ENV_SCHEDULE, f"transpose={answer}")
        assert g.variants(plan, FakeGpu) == taken
    monkeypatch.setenv(g.ENV_GATHER, "generic")
    assert g.variants(plan, FakeGpu) == []
    monkeypatch.setenv(g.ENV_GATHER, "blocked")
    assert g.variants(plan, FakeGpu) == ["blocked"]
    assert g.variants(Plan(Access((4, 4), (1, 4)), 8, 16, 16, 4, 16), FakeGpu) == []
    monkeypatch.delenv(g.ENV_GATHER)
    monkeypatch.delenv(choose.ENV_SCHEDULE)
    assert g.variants(Plan(Access((4, 4), (8, 1)), 32, 16, 16, 4, 64), FakeGpu) == []


@pytest.mark.parametrize(
    "shape, strides, bits, swap, base, keep, axis",
    [
        ((64, 64), (1, 64), 32, 0, 0, False, 0),  # 2-D transpose: read along axis 0
        ((64, 64), (1, 64), 32, 4, 0, False, 0),  # big-endian 4-byte
        ((64, 64, 8), (1, 64, 4096), 32, 0, 0, False, 0),  # 3-D 2,1,0
        ((3, 64, 64), (4096, 1, 64), 32, 0, 0, False, 1),  # 3-D 0,2,1
        ((64, 4), (1, 64), 32, 0, 0, False, 0),  # innermost extent 4: one block along l
        ((64, 64), (1, 64), 32, 0, 2, False, None),  # the box starts inside a word of the source
        ((64, 62), (1, 64), 32, 0, 0, False, None),  # an extent of 62
        ((64, 64), (1, 66), 32, 0, 0, False, None),  # a stride of 66
        ((64, 64), (1, -64), 32, 0, 0, False, None),  # l reversed
        ((64, 64), (-1, 64), 32, 0, 0, False, None),  # the read axis reversed
        ((64, 64), (1, 64), 64, 0, 0, False, None),  # 8-byte elements
        ((64, 64), (1, 64), 16, 0, 0, False, None),  # sub-word: the generic gather
        ((64, 64), (1, 64), 32, 2, 0, False, None),  # a swap inside a word
        ((64, 64), (1, 64), 32, 0, 0, True, None),  # reaches outside the upload
        ((64, 64), (64, 1), 32, 0, 0, False, None),  # row-major: the innermost axis does not move
        ((64, 64), (1, 0), 32, 0, 0, False, None),  # broadcast along the innermost axis
        ((64, 64), (1, 2), 32, 0, 0, False, None),  # innermost reads 8 bytes apart: lines shared
        ((64, 64), (3, 192), 32, 0, 0, False, None),  # no unit-stride axis
    ],
)
def test_which_dispatches_are_blocked(shape, strides, bits, swap, base, keep, axis):
    v = Access(shape, strides)
    box = next(tiling.boxes(v, 0, v.size))
    d = Dispatch(box, v.strides[box.axis :], base, keep)
    found = KERNELS["blocked"].fields(d, shape, bits, swap)
    assert (found["a"] if found else None) == axis


def test_the_block_grid_covers_the_box():
    d = _dispatch((8, 70, 36), (1, 8, 560))  # a 3-D transpose, read axis 0
    b = KERNELS["blocked"].fields(d, (8, 70, 36), 32, 0)
    assert (b["blocks_a"], b["blocks_l"], b["spans_a"]) == (2, 9, 1) and b["groups"] == 70 * 9
    params, groups = KERNELS["blocked"].record(d, (8, 70, 36), 32, 0, 3, at=0, max_dim=4)
    gx, gy = grid(groups, 4)
    assert len(params) == 64 and groups == b["groups"] and gx * gy >= b["groups"] and gx <= 4


# ------------------------------------------------------------ the runs a band reads (no GPU)


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
    view = Access(tuple(shape[p] for p in perm), tuple(int(strides[p]) for p in perm), 0)
    nbytes = int(np.prod(shape)) * bits // 8
    plan, _, _ = g.make_plan(_NoGpu(), nbytes, view, bits, 0, binding_bytes=4096)
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

    limits: ClassVar[dict] = {"max-storage-buffer-binding-size": 1 << 27}
