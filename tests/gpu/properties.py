"""Shared pieces of the kernel property tests (tests/gpu/test_gather_nd.py,
test_scatter_nd.py, test_reverse_runs.py, ...): onnx.reference as the
oracle, the kernel a call ran (read from ``gpu.cache[ix.LAST]``, which the host modules fill), and a
tally that asserts once per property that every case ran the kernel its
structure and forced variant call for, so a property cannot pass on a
silent fallback.

A property draws its structures from the ``rng`` fixture (conftest's
replayable seed: a failure prints the seed and the command that replays
it) and names the failing case (its number, structure and variant) in the
assertion message.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.gpu import indexed as ix
from onnxop_cli.gpu import piece_records, pieces
from onnxop_cli.gpu.buffers import can_map

# scatter.Reduce's class of an element, by numpy's dtype.kind: unsigned, signed, float, bool
CLS = {"u": 0, "i": 1, "f": 2, "b": 3}
# the keys the host modules set in gpu.cache[ix.LAST] when their kernel runs, most specific first
KERNEL_KEYS = ("nd pairs", "slabs", "slices", "word lines", "lines", "rows")


@functools.cache
def _evaluator(op: str, names: str, attrs: tuple):
    # imported here: onnx costs a property file that only needs Tally 0.7 s of CPU
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node(op, list(names), ["y"], **dict(attrs))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 0, None) for n in names],
                              [helper.make_tensor_value_info("y", 0, None)])
    return ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))


def reference(op: str, *inputs: np.ndarray, **attrs: Any) -> np.ndarray:
    """onnx.reference's output of one ``op`` node over native-order ``inputs``."""
    names = "xiu"[:len(inputs)]
    with np.errstate(all="ignore"):
        return _evaluator(op, names, tuple(sorted(attrs.items()))).run(None, dict(zip(names, inputs)))[0]


def kernel_ran(gpu) -> str:
    """The specialised kernel the last indexed call ran, or "lookups" (the general one)."""
    counts = gpu.cache[ix.LAST]
    return next((k for k in KERNEL_KEYS if counts.get(k)), "lookups")


def native(a: np.ndarray) -> np.ndarray:
    return a.astype(a.dtype.newbyteorder("="))


def little(a: np.ndarray) -> bytes:
    return a.astype(a.dtype.newbyteorder("<")).tobytes()


def data_of(a: np.ndarray, bits: int | None = None, shape=None, strides=None) -> ix.Data:
    """``a``'s bytes as the indexed kernels' data: elements of ``bits`` (a's
    own, bools as bytes), byte-swapped by element (by half for complex) where
    ``a`` is big-endian; ``shape`` and ``strides`` where they are not a's."""
    bits = bits or (8 if a.dtype == np.bool_ else a.dtype.itemsize * 8)
    swap = a.dtype.itemsize if a.dtype.byteorder == ">" and a.dtype.itemsize > 1 else 0
    if swap and a.dtype.kind == "c":
        swap = a.dtype.itemsize // 2
    return ix.Data(MemoryBytes(np.ascontiguousarray(a)), shape or a.shape, bits, swap, strides)



def index_of(i: np.ndarray) -> ix.Index:
    """``i``'s bytes as the indexed kernels' indices: int64 or int32, big-endian swapped."""
    return ix.Index(MemoryBytes(np.ascontiguousarray(i)), i.shape, i.dtype.itemsize == 8, i.dtype.byteorder == ">")


class Tally:
    """Which kernel each case was meant to run and which ran; ``check``
    asserts them equal in one assertion (naming the cases that differ) and
    that every kernel in ``must`` was meant somewhere."""

    def __init__(self) -> None:
        self.cases: list[tuple[str, str, str]] = []

    def add(self, label: str, meant: str, ran: str) -> None:
        self.cases.append((label, meant, ran))

    def check(self, *must: str) -> None:
        wrong = [c for c in self.cases if c[1] != c[2]]
        meant = {c[1] for c in self.cases}
        assert not wrong and set(must) <= meant, (
            f"{len(wrong)} of {len(self.cases)} cases ran another kernel than meant (label, meant, ran): "
            f"{wrong[:8]}; meant {sorted(meant)}, must include {sorted(must)}")


class _Counted(dict):
    """A pieces.Run's own ``taken`` (its "mapped" a bool the hosts read, as
    gpu/word_kernels.py does), its "runs" and "general" counted into
    ``counts`` too."""

    def __init__(self, own: dict, counts: dict) -> None:
        super().__init__(own)
        self.counts = counts

    def __setitem__(self, key, value) -> None:
        if key in ("runs", "general"):
            self.counts[key] += value - self[key]
        super().__setitem__(key, value)


def pieces_kernels(monkeypatch) -> dict:
    """From now on, the parts each pieces kernel ran, {"runs": n, "general": n},
    and "mapped": the ways (mapped or not) the runs' buffers took: every
    pieces.Run counts into this one dict besides its own ``taken``. Rows of
    piece_records.MIN_ROW_BYTES and up run by runs (the ``pieces_min_row`` answer 64
    forced): what the tests that count expect, whatever the adapter's answer."""
    monkeypatch.setenv("ONNXOP_SCHEDULE", "pieces_min_row=64")
    counts: dict = {"runs": 0, "general": 0, "mapped": set()}
    real = pieces.Run.__init__

    def init(self, *a, **k):
        real(self, *a, **k)
        counts["mapped"].add(self.taken["mapped"])
        self.taken = _Counted(self.taken, counts)

    monkeypatch.setattr(pieces.Run, "__init__", init)
    return counts


CAN_MAP = pieces.can_map
# forced schedules of the pieces kernels: (piece_records.BY_RUNS and piece_records.FILLS, pieces.REPEATS,
# pieces.DEFAULT_BAND, mapped)
PIECES_VARIANTS = {"chosen": (True, True, None, True), "staged": (True, True, None, False),
                   "general": (False, False, None, True), "bands": (True, True, 1024, True),
                   "wide bands": (True, True, 4096, True)}


def force_pieces(monkeypatch, variant: str) -> None:
    """Put the pieces kernels on ``variant``'s schedule (PIECES_VARIANTS): the
    runs kernels on or off (the general kernel, and Expand's and Tile's
    repeats on the gather kernel), bands and windows of 1 or 4 KiB, staged buffers."""
    by_runs, repeat, band, mapped = PIECES_VARIANTS[variant]
    monkeypatch.setattr(piece_records, "BY_RUNS", by_runs)
    monkeypatch.setattr(piece_records, "FILLS", by_runs)
    monkeypatch.setattr(pieces, "REPEATS", repeat)
    monkeypatch.setattr(pieces, "DEFAULT_BAND", band or 64 << 20)
    monkeypatch.setattr(pieces, "can_map", CAN_MAP if mapped else lambda gpu: False)


def pieces_ran(taken: dict, variant: str) -> str:
    """What the pieces kernels ran since ``taken`` (pieces_kernels) was last
    cleared: "runs", "general", "runs and general" or "none", and on the
    "staged" variant ", staged" where every run's buffers were staged (on
    the others they may be too: gl and Dawn cannot map); then clears it."""
    kinds = [k for k in ("runs", "general") if taken[k]]
    ran = " and ".join(kinds) or "none"
    if kinds and variant == "staged" and taken["mapped"] == {False}:
        ran += ", staged"
    taken.update(runs=0, general=0, mapped=set())
    return ran


# ------------------------------------------------------------ the indexed kernels' mapped transfers
# (test_indexed_mapped.py, test_scatter_mapped.py)

WIDTHS = ["bool", "u1", "<i2", "<f2", "<f4", "<i4", "<f8", "<i8", "<c16"]
BADS = [2**32 + 1, 2**63 - 1, -(2**63), "d", "-d-1"]  # "d", "-d-1": the axis's size, one past its negative end


def transfer_path(gpu, mapped: bool | None = None, reads: bool = True, uploads: bool = True) -> None:
    """The last call moved its host bytes mapped where the adapter maps (and
    ``mapped`` is not False), else staged -- every transfer one way."""
    counts = gpu.cache[ix.LAST]
    way = "mapped" if can_map(gpu) and mapped is not False else "staged"
    other = "staged" if way == "mapped" else "mapped"
    assert counts[f"{other} uploads"] == 0 and counts[f"{other} reads"] == 0, counts
    assert (counts[f"{way} uploads"] > 0) == uploads, counts
    assert (counts[f"{way} reads"] > 0) == reads, counts
