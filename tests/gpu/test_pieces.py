"""The pieces kernels as a property, byte for byte: parts copied or filled
onto an output, run directly through gpu/pieces.py, against numpy's
indexing of the same parts on random bits.

Random structures -- copy rows starting at every element of a vec4 in the
source and in the output (the funnel shift's every amount), of lengths
ending anywhere in a word, rows of one part sharing edge words (gaps of
0 and 1-5 elements); fill rows at every alignment beside a background copied by
runs; neighbouring parts of both kernels; inner axes strided, broadcast,
reversed or column-major (not runs); a rank-0 part; random parts of ranks
1-4 -- x each variant forced through the existing knobs (the kernel chosen,
by runs off, fills off, staged rather than mapped buffers, grids folded
to rows of 1 and 2 workgroups, bands of a few hundred bytes) x every
element width (2- and 4-bit packed, 8 to 128 bits). One tally per property
asserts that every case ran the kernels meant for it (gpu/render/pieces.py Rows
by runs, gpu/render/pieces.py general) and that each came up, so a silent
fallback fails it. The operators' plans (Concat, Split, Pad, Trilu, ...)
are tests/gpu/test_pieces_runs.py's and test_pieces_fills.py's."""

from __future__ import annotations

import numpy as np
import pytest
from properties import Tally, pieces_kernels

from onnxop_cli.core.sources import MemoryBytes
from onnxop_cli.core.region import Fill, c_strides, load
from onnxop_cli.gpu import piece_records, pieces
from onnxop_cli.ops.tensor_op import Piece

BITS = [2, 4, 8, 16, 32, 64, 128]
# forced variants: run_pieces keywords and module knobs (piece_records.BY_RUNS, piece_records.FILLS, mapped)
VARIANTS = {"chosen": ({}, True, True, True), "general": ({}, False, True, True), "fills off": ({}, True, False, True),
            "staged": ({}, True, True, False), "folded": ({"max_groups_per_dim": 1}, True, True, True),
            "two groups": ({"max_groups_per_dim": 2}, True, True, True),
            "bands": ({"binding_bytes": 4096}, True, True, True),
            "small bands": ({"binding_bytes": 1024, "max_groups_per_dim": 2}, True, True, True)}
CAN_MAP = pieces.can_map
SHORT = 3  # elements of a row too short for runs


@pytest.fixture
def kernels(monkeypatch):
    """Parts each kernel ran since the last clear: {"runs": n, "general": n} (properties.pieces_kernels)."""
    return pieces_kernels(monkeypatch)


def _unpack(raw: bytes, bits: int, count: int) -> np.ndarray:
    """Elements of ``bits`` (< 8: packed low first, as the kernels lay them) as rows of bytes or integers."""
    if bits >= 8:
        return np.frombuffer(raw, np.uint8)[: count * bits // 8].reshape(count, bits // 8)
    b = np.frombuffer(raw, np.uint8)
    out = np.stack([(b >> (bits * j)) & ((1 << bits) - 1) for j in range(8 // bits)], axis=1).reshape(-1)
    return out[:count].reshape(count, 1)


def _pack(values: np.ndarray, bits: int) -> bytes:
    per = 8 // bits
    v = np.zeros(-(-len(values) // per) * per, np.uint8)
    v[: len(values)] = values
    v = v.reshape(-1, per)
    return bytes(np.bitwise_or.reduce([v[:, j] << (bits * j) for j in range(per)], axis=0).astype(np.uint8))


def _expected(src: np.ndarray, before: np.ndarray, p: Piece, bits: int, at: bool = False) -> np.ndarray:
    """``before`` with ``p`` copied or filled onto it (``at``: ``src`` read where ``p`` writes, to find a wrong part)."""
    out = before.copy()
    idx = np.indices(p.shape).reshape(len(p.shape), -1) if p.shape else np.zeros((0, 1), np.int64)
    d = p.dst_offset + sum(i * s for i, s in zip(idx, p.dst_strides))
    if at:
        out[d] = src[d]
    elif isinstance(p.value, Fill):
        out[d] = _unpack(p.value.data + bytes(1), bits, 1)[0]
    else:
        out[d] = src[p.value.at.offset + sum(i * t for i, t in zip(idx, p.value.at.strides))]
    return out


def _fill(rng, bits: int) -> bytes:
    value = int(rng.integers(1, 1 << min(bits, 62)))
    return value.to_bytes(max(1, bits // 8), "little") if bits >= 8 else bytes([value & ((1 << bits) - 1)])


def _runs(p: Piece, bits: int) -> bool:
    """Whether the structure makes ``p`` a run: its inner axis contiguous in the output (and source) and long."""
    inner = p.shape[-1] if p.shape else 0
    return (bool(p.shape) and p.dst_strides[-1] == 1 and inner * bits >= piece_records.MIN_ROW_BYTES * 8
            and (isinstance(p.value, Fill) or p.value.at.strides[-1] == 1))


def structures(rng, bits: int):
    """(label, parts, output elements, poison, variants): the sweeps of
    every alignment (on the kernel chosen), neighbouring parts of both
    kernels and random parts (on the forced variants), the inner axes that
    are not runs, a rank-0 part."""
    per = max(1, 128 // bits)  # elements per vec4
    length0 = piece_records.MIN_ROW_BYTES * 8 // bits
    up = lambda n: -(-n // per) * per
    at = src_at = 0
    parts = []  # every case of the sweep laid out one after another: one call
    for s0 in range(0, per, 1 if bits >= 32 else max(1, per // 16)):
        for d0 in range(0, per, max(1, per // 2)):  # with every s0: every shift amount
            for extra in (0, 1, per // 2 + 1, 3 * per - 1):
                length, rows = length0 + extra, 3
                for gap in (0, int(rng.integers(1, 6))):
                    parts.append((f"copy s{s0} d{d0} +{extra} gap{gap}",
                                  Piece((rows, length), (length + gap, 1), at + d0,
                                        load(0, (rows, length), (length + 2, 1), src_at + s0))))
                    at, src_at = up(at + d0 + rows * (length + gap) + 5), up(src_at + s0 + rows * (length + 2))
    yield "copy rows at every alignment", parts, at, 0, ("chosen",)
    at, fills = 0, []
    for d0 in range(0, per, max(1, per // 8)):
        for extra in (0, 1, per // 2 + 1, 3 * per - 1):
            length, rows = length0 + extra, 3
            for gap in (0, int(rng.integers(1, 6))):
                fills.append((f"fill d{d0} +{extra} gap{gap}",
                              Piece((rows, length), (length + gap, 1), at + d0, Fill(_fill(rng, bits)))))
                at = up(at + d0 + rows * (length + gap) + 7)
    yield "fill rows at every alignment", [("background", Piece((at,), (1,), 0, load(0, (at,), (1,))))] + fills, at, 0x5A, \
        ("chosen",)
    lengths = {}  # rows of every length modulo a vec4 and size class that a fill row's background had
    for d0 in range(0, per, max(1, per // 8)):
        for extra in (0, 1, per // 2 + 1, 3 * per - 1):
            for gap in range(6):
                n = d0 + 3 * (length0 + extra + gap) + 7
                lengths.setdefault((n % per, n > 64, n > 1000), n)
    at, parts = 0, []
    for n in lengths.values():
        parts.append((f"row of {n}", Piece((n,), (1,), at, load(0, (n,), (1,), at))))
        at = up(at + n)
    yield "rows of every length", parts, at, 0x5A, ("chosen",)
    if 4 <= bits <= 64:
        length, rows = length0 + 37, 120
        out = c_strides((rows, 2 * length + 3))
        parts = [("left", Piece((rows, length), out, 0, load(0, (rows, length), (length, 1)))),
                 ("right", Piece((rows, length), out, length + 3, load(0, (rows, length), (length, 1)))),
                 ("short", Piece((rows, 3), out, length, load(0, (rows, 3), (length, 1))))]  # short: the general kernel
        yield "neighbours", parts, rows * out[0], 0xA5, ("two groups", "folded", "bands", "small bands")
    if bits in (8, 16, 32):
        length, rows = length0 + 3, 4
        parts = []
        for dst, src, s0 in (((1, rows), (length, 1), 0), ((length, 1), (1, rows), 0), ((2 * length, 2), (length, 1), 0),
                             ((length, 1), (2 * length, 2), 0), ((length, 1), (1, 0), 0),
                             ((length, 1), (length, -1), length - 1)):
            at = up(2 * rows * length) * len(parts)
            parts.append((f"{dst} {src}", Piece((rows, length), dst, at, load(0, (rows, length), src, at + s0))))
        yield "inner axes not runs", parts, up(2 * rows * length) * len(parts), 0, ("chosen",)
    if bits == 32:
        yield "rank 0", [("rank 0", Piece((), (), 0, load(0, (), ())))], 1, None, ("chosen",)
    names = list(VARIANTS)
    for k in range(4):  # random parts: a copy and a fill side by side, rows long or short
        rank = 1 + k % 4
        inner = int(length0 + rng.integers(0, 2 * per)) if k % 3 != 2 else SHORT
        shape = tuple(int(v) for v in rng.integers(1, 4, rank - 1)) + (inner,)
        gap, d0 = int(rng.integers(0, 4)), int(rng.integers(0, per))
        dst = c_strides(shape[:-1] + (2 * inner + gap,))
        parts = [("copy", Piece(shape, dst, d0, load(0, shape, c_strides(shape), int(rng.integers(0, per))))),
                 ("fill", Piece(shape, dst, d0 + inner + gap, Fill(_fill(rng, bits))))]
        yield f"random rank{rank} {shape}", parts, d0 + int(np.prod(shape[:-1])) * dst[-2 if rank > 1 else -1] * 2 + 2 * inner + gap, \
            0x3C, ("chosen", names[1 + (k + bits) % (len(names) - 1)])


def meant(parts, bits: int, variant: str) -> set:
    on, fills = VARIANTS[variant][1:3]
    return {"runs" if on and _runs(p, bits) and (fills or not isinstance(p.value, Fill)) else "general" for p in parts}


@pytest.mark.parametrize("bits", BITS)
def test_pieces_match_numpy(gpu, rng, bits, kernels, monkeypatch):
    """Every structure on its variants: the output's bytes those of numpy's
    indexing (the poison byte where nothing is written), each case on the kernels meant for it."""
    tally = Tally()
    for label, named, count, poison, variants in structures(rng, bits):
        parts = [p for _, p in named]
        n_src = max([count] + [x.at.offset + sum((d - 1) * abs(s) for d, s in zip(p.shape, x.at.strides)) + 1
                               for p in parts for x in p.loads])
        units = max(1, bits // 8)
        src = rng.integers(0, 1 << min(bits, 8), (n_src + 16, units), dtype=np.uint8)
        raw = _pack(src[:, 0], bits) if bits < 8 else src.tobytes()
        want = _unpack(bytes([poison or 0]) * (count * units + 1), bits, count)  # where nothing is written
        for p in parts:
            want = _expected(src, want, p, bits)
        for variant in variants:
            kw, on, fills, mapped = VARIANTS[variant]
            monkeypatch.setattr(piece_records, "BY_RUNS", on)
            monkeypatch.setattr(piece_records, "FILLS", fills)
            monkeypatch.setattr(pieces, "can_map", CAN_MAP if mapped else (lambda gpu: False))
            kernels.update(runs=0, general=0)
            got = bytearray()
            pieces.run_pieces(gpu, [pieces.Source(MemoryBytes(np.frombuffer(raw, np.uint8)))], got.extend,
                              pieces=parts, count=count, bits=bits, poison=poison, **kw)
            got = _unpack(bytes(got), bits, count)
            assert np.array_equal(got, want), (bits, label, variant, [n for n, p in named if not np.array_equal(
                _expected(got, want, p, bits, at=True), want)][:8] or "outside every part")
            tally.add(f"{label} ({variant})", "+".join(sorted(meant(parts, bits, variant))),
                      "+".join(sorted(k for k in ("runs", "general") if kernels[k])))
    tally.check("runs", *(["general", "general+runs"] if 4 <= bits <= 64 else ["general"]))
