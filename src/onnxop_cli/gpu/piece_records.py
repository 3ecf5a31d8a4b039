"""Which kernel a part (core/pieces.py's ``Piece``, cut to a band and a window) of gpu/pieces.py's run takes, and
its Params records and axes entries: ``eligible`` parts go by runs, ``runs`` their records on the runs kernels' two
dispatches (words, then edges); the others ``general`` on the general kernel. The records are pure arithmetic,
the box and its value flattened (core/pieces.py ``fields``), packed by gpu/render/pieces.py's layouts."""

from __future__ import annotations

import math
from typing import Any, Optional

from ..core.pieces import Piece, fields
from ..core.region import Load
from . import choose
from .program import grid_x
from .render.pieces import AXIS, OTHER, PARAMS, ROWS_AXIS, ROWS_PARAMS, WORDS

SLOTS = 16  # axes entries per piece (ranks up to 16); a select piece's other strides follow them
M = 0xFFFFFFFF  # strides as two's complement u32 words
# not a speed choice: |k| kept below this, the kernel adds a row index to it in i32 (beyond, all or nothing is
# kept): an i32 bound
TRI_K = 1 << 30

# rows shorter than this stay on the general kernel: the edges' per-row atomics would be most of them
MIN_ROW_BYTES = 64
# rows of MIN_ROW_BYTES up to this go by runs where the adapter's answer to ``pieces_min_row`` is 64, and keep
# the general kernel where it is 128 (gpu/choose.py: MIN_ROW_BYTES was measured on Mesa 22.3 alone)
SHORT_ROW_BYTES = 128
QUESTION = "pieces_min_row"
# not a speed choice: band and window bit offsets are u32 / i32 in the kernel (a correctness bound)
LIMIT_BITS = 1 << 31
BY_RUNS = True  # tests turn it off to compare with the general kernel
FILLS = True  # fills and triangles by runs (off: the general kernel, as before; benchmarks compare the two)


def usable(band_bytes: int, window_bytes: int) -> bool:
    """Whether a run's buffers suit the kernel: its windows are read as whole
    vec4s (their size a multiple of 16) and bit offsets fit an i32."""
    return BY_RUNS and window_bytes % 16 == 0 and max(band_bytes, window_bytes) * 8 < LIMIT_BITS


def eligible(p: Piece, bits: int, swap: int, gpu: Any) -> bool:
    """Whether ``p`` (a part cut to a band and a window) runs by runs on ``gpu``: rows of MIN_ROW_BYTES to
    SHORT_ROW_BYTES where its answer to QUESTION (asked only for such a row) is MIN_ROW_BYTES."""
    return _shape_runs(p, bits, swap) and (
        p.shape[-1] * bits >= SHORT_ROW_BYTES * 8 or choose.answer(gpu, QUESTION) == str(MIN_ROW_BYTES))


def _shape_runs(p: Piece, bits: int, swap: int) -> bool:
    rank, v = len(p.shape), fields(p.value)
    if v.mask is not None or v.other is not None or not 1 <= rank <= SLOTS or p.size == 0:
        return False
    if p.dst_strides[-1] != 1 or p.shape[-1] * bits < MIN_ROW_BYTES * 8 or 128 % bits:
        return False
    if v.src is None:
        return FILLS and v.tri is None
    if swap or v.src.at.strides[-1] != 1:
        return False
    # a triangle: its column the inner axis, its row an outer one (or folded), the rest filled
    return v.tri is None or (FILLS and v.otherwise and v.tri[2] == rank - 1 and v.tri[1] < rank - 1)


def general(p: Piece, bits: int, first: list[int], swap: list[int], at: int, per_group: int,
             max_dim: int) -> tuple[tuple[bytes], bytes, tuple[int]]:
    """(params record, axes entries, workgroups) of part ``p`` on the general kernel, the axes its loads' strides."""
    v = fields(p.value)
    tri = v.tri or (0, M, M, True)
    # |col - row| < 2**31 in one dispatch: a k beyond that keeps all or nothing, as its clamp does
    k = min(max(tri[0], -(2**31)), 2**31 - 1)
    pred = 1 if v.mask is not None else (0 if v.tri is None else (2 if tri[3] else 3))
    groups = -(-p.size // per_group)
    record = PARAMS.pack(
        count=p.size, groups_x=grid_x(groups, max_dim), rank=len(p.shape), at=at, bits=bits, swap=swap[0],
        mode=0 if v.src is not None else 1, pred=pred, otherwise=1 if v.otherwise else 0,
        src_base=base(v.src, first[0]), dst_base=p.dst_offset & M, mask_base=base(v.mask, first[1]), tri_k=k & M,
        tri_row=tri[1] & M, tri_col=tri[2] & M, fill=fill_words(v.fill, bits),
        has_other=1 if v.other is not None else 0, other_base=base(v.other, first[2]), other_swap=swap[2])
    zeros = (0,) * len(p.shape)
    strides = [x.at.strides if x is not None else zeros for x in (v.src, v.mask)]
    entries = AXIS.layout.pack_rows({"dim": d, "src": s & M, "dst": t & M, "mask": m & M}
                                    for d, s, t, m in zip(p.shape, strides[0], p.dst_strides, strides[1]))
    others = OTHER.layout.pack_rows({"stride": s & M} for s in (v.other.at.strides if v.other is not None else ()))
    return (record,), entries + bytes(16 * SLOTS - len(entries)) + others, (groups,)


def base(x: Optional[Load], first: int) -> int:
    """Where a load starts in its uploaded window (0 where the piece has none of it)."""
    return (x.at.offset - first) & 0xFFFFFFFF if x is not None else 0


def fill_words(fill: bytes, bits: int) -> tuple[int, int, int, int]:
    """The fill's pattern as band words 4v .. 4v + 3 (its element repeated)."""
    if bits >= 32:
        raw = (fill + bytes(16))[: bits // 8]
        raw = raw * (16 // len(raw))
        return tuple(int.from_bytes(raw[k:k + 4], "little") for k in range(0, 16, 4))  # type: ignore[return-value]
    value = int.from_bytes((fill + bytes(4))[:4], "little") & ((1 << bits) - 1)
    return (sum(value << (i * bits) for i in range(32 // bits)),) * 4


def runs(p: Piece, bits: int, src_first: int, at: int,
         max_dim: int) -> tuple[tuple[bytes, bytes], bytes, tuple[int, int]]:
    """(the two dispatches' params records, axes entries, workgroups) of part ``p`` whose source window starts
    at element ``src_first``."""
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
    common = {"rank": len(outer), "at": at, "bits": bits, "src_base": base(v.src, src_first),
              "dst_base": p.dst_offset & M, "len_bits": len_bits, "chunks": max(chunks, 1), "rows": rows,
              "mode": mode, "tri_k": k, "fill": fill_words(v.fill, bits), "tri_row": tri_row}
    record = ROWS_PARAMS.pack(count=words, groups_x=grid_x(gw, max_dim), **common)
    edges = ROWS_PARAMS.pack(count=rows, groups_x=grid_x(ge, max_dim), **common)

    src_strides = v.src.at.strides if v.src is not None else (0,) * len(p.shape)
    entries = ROWS_AXIS.layout.pack_rows({"dim": d, "src": s & M, "dst": t & M}
                                         for d, s, t in zip(outer, src_strides, p.dst_strides))
    return (record, edges), entries, (gw, ge)
