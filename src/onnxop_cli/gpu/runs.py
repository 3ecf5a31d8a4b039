"""Pieces by runs (gpu/render/piece_rows.py's ``words`` and ``edges``) for
a part whose innermost axis is contiguous in the output and in its source:
Concat's, Split's and Pad's interior, fills (ConstantOfShape, constant
borders, EyeLike's zeros) and Trilu's triangle. gpu/pieces.py's ``Run``
asks :func:`eligible` for each part of a band and records an eligible one's
two dispatches (:func:`encode`) in the same pass, on the general kernel's
buffers and layout. Every other part -- masks and selects, other
triangles, stride-0 or reversed inner axes (Pad's edge, reflect and wrap
borders), big-endian sources, short rows -- keeps the general kernel.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable

from ..core.pieces import Piece, fields
from ..core.region import Fill
from . import choose
from .program import grid_x
from .render.piece_rows import ROWS_AXIS, ROWS_PARAMS, WORDS

# rows shorter than this stay on the general kernel: the edges' per-row atomics would be most of them
MIN_ROW_BYTES = 64
# rows of MIN_ROW_BYTES up to this go by runs where the adapter's answer to ``pieces_min_row`` is 64, and keep
# the general kernel where it is 128 (gpu/choose.py: MIN_ROW_BYTES was measured on Mesa 22.3 alone)
SHORT_ROW_BYTES = 128
QUESTION = "pieces_min_row"
M = 0xFFFFFFFF  # offsets and strides as two's complement u32
# not a speed choice: band and window bit offsets are u32 / i32 in the kernel (a correctness bound)
LIMIT_BITS = 1 << 31
ENABLED = True  # tests turn it off to compare with the general kernel
FILLS = True  # fills and triangles by runs (off: the general kernel, as before; benchmarks compare the two)


def usable(band_bytes: int, window_bytes: int) -> bool:
    """Whether a run's buffers suit the kernel: its windows are read as whole
    vec4s (their size a multiple of 16) and bit offsets fit an i32."""
    return ENABLED and window_bytes % 16 == 0 and max(band_bytes, window_bytes) * 8 < LIMIT_BITS


# not a speed choice: |k| kept below this, the kernel adds a row index to it in i32 (beyond, all or nothing is
# kept): an i32 bound
TRI_K = 1 << 30


def short_rows(gpu: Any) -> bool:
    """Whether rows of MIN_ROW_BYTES to SHORT_ROW_BYTES run by runs on ``gpu`` (asked when one is met)."""
    return choose.answer(gpu, QUESTION) == str(MIN_ROW_BYTES)


def eligible(p: Piece, bits: int, swap: int, slots: int, short: Callable[[], bool] = lambda: True) -> bool:
    """Whether ``p`` (a part cut to a band and a window) runs by runs; ``short()``: whether a row under
    SHORT_ROW_BYTES does (asked only for one)."""
    return _shape_runs(p, bits, swap, slots) and (p.shape[-1] * bits >= SHORT_ROW_BYTES * 8 or short())


def _shape_runs(p: Piece, bits: int, swap: int, slots: int) -> bool:
    rank, v = len(p.shape), fields(p.value)
    if v.mask is not None or v.other is not None or not 1 <= rank <= slots or p.size == 0:
        return False
    if p.dst_strides[-1] != 1 or p.shape[-1] * bits < MIN_ROW_BYTES * 8 or 128 % bits:
        return False
    if v.src is None:
        return FILLS and v.tri is None
    if swap or v.src.at.strides[-1] != 1:
        return False
    # a triangle: its column the inner axis, its row an outer one (or folded), the rest filled
    return v.tri is None or (FILLS and v.otherwise and v.tri[2] == rank - 1 and v.tri[1] < rank - 1)


def flatten(p: Piece) -> Piece:
    """A fill piece with its axes of one index dropped and the axes it lays
    out contiguously merged (ConstantOfShape's or Pad's fill of the whole
    output becomes one row, long enough for the runs kernel)."""
    if not isinstance(p.value, Fill) or p.size == 0:
        return p
    axes = [(d, s) for d, s in zip(p.shape, p.dst_strides) if d != 1]
    if not axes:
        return p
    shape, strides = [axes[-1][0]], [axes[-1][1]]
    for d, s in reversed(axes[:-1]):
        if s == shape[0] * strides[0]:
            shape[0] *= d
        else:
            shape.insert(0, d)
            strides.insert(0, s)
    return replace(p, shape=tuple(shape), dst_strides=tuple(strides))


def fill_words(fill: bytes, bits: int) -> tuple[int, int, int, int]:
    """The fill's pattern as band words 4v .. 4v + 3 (its element repeated)."""
    if bits >= 32:
        raw = (fill + bytes(16))[: bits // 8]
        raw = raw * (16 // len(raw))
        return tuple(int.from_bytes(raw[k:k + 4], "little") for k in range(0, 16, 4))  # type: ignore[return-value]
    value = int.from_bytes((fill + bytes(4))[:4], "little") & ((1 << bits) - 1)
    return (sum(value << (i * bits) for i in range(32 // bits)),) * 4


def encode(p: Piece, bits: int, src_first: int, at: int, max_dim: int) -> tuple[tuple[bytes, bytes], bytes,
                                                                                 tuple[int, int]]:
    """(the two dispatches' params records, axes entries, workgroups) of part ``p``
    whose source window starts at element ``src_first``: the records are the box and its
    value flattened (core/pieces.py ``fields``)."""
    v = fields(p.value)
    *outer, length = p.shape
    rows = math.prod(outer)
    len_bits = length * bits
    wg, vecs = WORDS.schedule.wg, WORDS.schedule.per
    chunks = -(-(len_bits // 128) // vecs)  # a row holds at most len_bits // 128 whole vec4s
    words = rows * chunks
    assert words < 1 << 32, "a part of one band has fewer than 2**32 vec4s"
    gw, ge = -(-words // wg), -(-rows // wg)
    mode, k, tri_row = (0 if v.src is not None else 1), 0, M
    if v.tri is not None:
        mode = 2 if v.tri[3] else 3
        k = min(max(v.tri[0], -TRI_K), TRI_K)
        tri_row = v.tri[1] if v.tri[1] >= 0 else M
    src_base = (v.src.at.offset - src_first) & M if v.src is not None else 0
    common = {"rank": len(outer), "at": at, "bits": bits, "src_base": src_base, "dst_base": p.dst_offset & M,
              "len_bits": len_bits, "chunks": max(chunks, 1), "rows": rows, "mode": mode, "tri_k": k,
              "fill": fill_words(v.fill, bits), "tri_row": tri_row}
    record = ROWS_PARAMS.pack(count=words, groups_x=grid_x(gw, max_dim), **common)
    edges = ROWS_PARAMS.pack(count=rows, groups_x=grid_x(ge, max_dim), **common)

    src_strides = v.src.at.strides if v.src is not None else (0,) * len(p.shape)
    entries = ROWS_AXIS.layout.pack_rows({"dim": d, "src": s & M, "dst": t & M}
                                         for d, s, t in zip(outer, src_strides, p.dst_strides))
    return (record, edges), entries, (gw, ge)
