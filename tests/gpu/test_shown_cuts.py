"""Property: the shown-entries path (core/shown.py ``narrow`` cutting a plan's
pieces, then the pieces kernel) gives exactly the entries a summary shows of
the fully made result -- for random shapes, pads and modes, pads up to
several times the axis length (wrap and reflect repeat; a crop where the
mode allows), on every backend.

Fresh device buffers are poisoned ($ONNXOP_POISON), so an entry that no
dispatch wrote shows the pattern, not a plausible zero. The reference is
numpy's ``np.pad`` (ONNX's reference implementation for Pad), compared bit
for bit (NaN payloads, -0.0).
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import random_array
from onnxop_cli.core import apply_tensors as fam
from onnxop_cli.core.shown import narrow, shown_positions
from onnxop_cli.core.shown_values import pieces_shown
from onnxop_cli.core.tensor import Tensor
from onnxop_cli.ops import op_version
from onnxop_cli.ops.base import Node

MODES = ("constant", "reflect", "edge", "wrap")
CASES = 48  # per mode and backend: a few seconds on lavapipe


def _case(rng: np.random.Generator, mode: str):
    rank = int(rng.integers(1, 4))
    shape = tuple(int(rng.integers(1 if mode != "reflect" else 2, 6)) for _ in range(rank))
    pads = []
    for _ in range(2):
        for n in shape:
            p = int(rng.integers(0, 4 * n + 3))  # past the axis length, several periods
            if mode == "constant" and rng.random() < 0.2:
                p = -int(rng.integers(0, (n + 1) // 2))  # a crop (both ends together shorter than the axis)
            pads.append(p)
    return shape, pads


def _reference(a: np.ndarray, pads: list[int], mode: str) -> np.ndarray:
    r = a.ndim
    begin, end = pads[:r], pads[r:]
    crop = tuple(slice(max(0, -b), a.shape[k] - max(0, -e)) for k, (b, e) in enumerate(zip(begin, end)))
    grow = [(max(0, b), max(0, e)) for b, e in zip(begin, end)]
    kw = {"constant_values": 0} if mode == "constant" else {}
    return np.pad(a[crop], grow, mode=mode, **kw)


def _plan(a: np.ndarray, pads: list[int], mode: str):
    op = op_version("Pad", 19)
    tensors = [Tensor.from_numpy(a, "data"), Tensor.from_numpy(np.array(pads, np.int64), "pads")]
    node = Node(op, {"mode": mode}, opset=19)
    (plan,) = fam.check(node, tensors)
    return node, tensors, plan


@pytest.mark.parametrize("mode", MODES)
def test_the_shown_entries_are_the_whole_results(backend, gpu, mode, monkeypatch, rng):
    monkeypatch.setenv("ONNXOP_POISON", "0xAB")
    for i in range(CASES):
        shape, pads = _case(rng, mode)
        a = random_array(rng, shape, "float32")
        want = _reference(a, pads, mode)
        node, tensors, plan = _plan(a, pads, mode)
        assert plan.shape == want.shape, (shape, pads, mode)
        edge = int(rng.integers(0, 3))
        cut = narrow(plan.pieces, plan.shape, edge)
        assert cut is not None, (shape, pads, mode)
        got = pieces_shown(cut, plan.shape, plan.dtype, tensors, edge=edge, backend=backend)
        shown = want[np.ix_(*[shown_positions(n, edge) for n in want.shape])]
        assert got.shape == shown.shape
        assert got.view(np.uint32).tobytes() == shown.view(np.uint32).tobytes(), (i, shape, pads, mode, edge)


@pytest.mark.parametrize("mode", ("reflect", "wrap"))
def test_huge_pads_show_the_periodic_entries(backend, gpu, mode, monkeypatch):
    """Pads of 10^5 on axes of 2 and 3 (a 160 GB result): the shown entries
    from the cut pieces equal those of a small array padded to the same
    phase (both ends congruent modulo the period)."""
    monkeypatch.setenv("ONNXOP_POISON", "0xAB")
    rng = np.random.default_rng(7)
    a = random_array(rng, (2, 3), "float32")
    big = 100_000
    pads = [big, big, big, big]
    node, tensors, plan = _plan(a, pads, mode)
    cut = narrow(plan.pieces, plan.shape, 3)
    assert cut is not None and sum(p.size for p in cut) == 8 * 8
    got = pieces_shown(cut, plan.shape, plan.dtype, tensors, edge=3, backend=backend)
    period = [2 * (n - 1) if mode == "reflect" else n for n in a.shape]
    small = [big % p + 2 * p for p in period]  # same phase at both ends, each end longer than the edge
    want = np.pad(a, [(s, s) for s in small], mode=mode)
    shown = want[np.ix_(*[shown_positions(n, 3) for n in want.shape])]
    assert got.view(np.uint32).tobytes() == shown.view(np.uint32).tobytes()


@pytest.mark.parametrize("mode", MODES)
def test_small_bands_and_folded_grids_leave_nothing_unwritten(backend, gpu, mode, monkeypatch, rng):
    """The whole plan and its cut pieces through the pieces kernel with
    bands and windows of 4 KiB (many bands, the last one partial, pieces cut
    at band edges and source windows) and at most 2 workgroups per grid
    dimension (a piece's groups folded into x * y past that): every entry
    written, bit for bit np.pad's."""
    from onnxop_cli.core.shown import narrowed_shape
    from onnxop_cli.gpu.pieces import Source, run_pieces

    monkeypatch.setenv("ONNXOP_POISON", "0xAB")
    for i in range(4):
        shape = tuple(int(n) for n in rng.integers(2, 40, 2))
        pads = [int(p) for p in rng.integers(0, 3 * max(shape), 4)]
        a = random_array(rng, shape, "float32")
        want = _reference(a, pads, mode)
        node, tensors, plan = _plan(a, pads, mode)
        for edge in (None, 5):
            pieces = plan.pieces if edge is None else narrow(plan.pieces, plan.shape, edge)
            assert pieces is not None
            count = want.size if edge is None else int(np.prod(narrowed_shape(plan.shape, edge)))
            chunks: list[bytes] = []
            with gpu.lock:
                run_pieces(gpu, [Source(tensors[0].data, tensors[0].byteswap)], lambda c: chunks.append(bytes(c)),
                           pieces=pieces, count=count, bits=32, binding_bytes=4096, max_groups_per_dim=2)
            shown = want if edge is None else want[np.ix_(*[shown_positions(n, edge) for n in want.shape])]
            assert b"".join(chunks) == shown.astype(np.float32).tobytes(), (i, shape, pads, mode, edge)
