"""Pieces by runs: ``shaders/pieces_runs.wgsl`` for a piece whose innermost
axis is contiguous in its source and in the output (Concat's, Split's and
Pad's interior pieces).

gpu/pieces.py's ``_Run`` asks :func:`eligible` for each part of a band and
encodes an eligible one with :func:`encode` in the same compute pass, on the
same buffers and bind group layout as the general kernel: two dispatches,
``words`` (whole 16-byte blocks of the output inside a row, plain vec4 stores,
the source joined by a funnel shift where its alignment differs) and
``edges`` (each row's other words, on its own bits, with atomics). Every
other part -- fills, masks and selects, triangles, stride-0 or reversed inner
axes (Pad's edge, reflect and wrap borders), Fortran-order or big-endian
sources, rows shorter than MIN_ROW_BYTES -- keeps shaders/pieces.wgsl.
"""

from __future__ import annotations

import struct
from typing import Any

from ..core.pieces import Piece
from .buffers import grid
from .kernels import shader_const

SHADER = "pieces_runs.wgsl"
# rows shorter than this stay on the general kernel: the edges' per-row atomics would be most of them
MIN_ROW_BYTES = 64
LIMIT_BITS = 1 << 31  # band and window bit offsets are u32 / i32 in the kernel
ENABLED = True  # tests turn it off to compare with the general kernel


def usable(band_bytes: int, window_bytes: int) -> bool:
    """Whether a run's buffers suit the kernel: its windows are read as whole
    vec4s (their size a multiple of 16) and bit offsets fit an i32."""
    return ENABLED and window_bytes % 16 == 0 and max(band_bytes, window_bytes) * 8 < LIMIT_BITS


def eligible(p: Piece, bits: int, swap: int, slots: int) -> bool:
    """Whether ``p`` (a part cut to a band and a window) runs by runs."""
    return (
        p.src is not None and p.mask is None and p.other is None and p.tri is None and not swap
        and 1 <= len(p.shape) <= slots and p.size > 0
        and p.src_strides[-1] == 1 and p.dst_strides[-1] == 1
        and p.shape[-1] * bits >= MIN_ROW_BYTES * 8
    )


def pipelines(gpu: Any, layout_entries: list[dict]) -> tuple[Any, Any]:
    """The ``words`` and ``edges`` pipelines, on a layout equal to the pieces kernel's."""
    return (gpu.pipeline_with_layout(SHADER, layout_entries, "words")[0],
            gpu.pipeline_with_layout(SHADER, layout_entries, "edges")[0])


def encode(p: Piece, bits: int, src_first: int, at: int, max_dim: int) -> tuple[bytes, bytes, list[tuple[int, int]]]:
    """(params record, axes entries, the two dispatches' grids) of part ``p``
    whose source window starts at element ``src_first``."""
    *outer, length = p.shape
    rows = 1
    for d in outer:
        rows *= d
    len_bits = length * bits
    wg = shader_const(SHADER, "WG")
    vecs = shader_const(SHADER, "VECS")
    chunks = -(-(len_bits // 128) // vecs)  # a row holds at most len_bits // 128 whole vec4s
    words = rows * chunks
    assert words < 1 << 32, "a part of one band has fewer than 2**32 vec4s"
    gw = grid(-(-words // wg), max_dim)
    ge = grid(-(-rows // wg), max_dim)
    record = struct.pack(
        "<12I", words, gw[0], len(outer), at, bits, (p.src_offset - src_first) & 0xFFFFFFFF,
        p.dst_offset & 0xFFFFFFFF, len_bits, max(chunks, 1), rows, 0, 0)
    edges = struct.pack(
        "<12I", rows, ge[0], len(outer), at, bits, (p.src_offset - src_first) & 0xFFFFFFFF,
        p.dst_offset & 0xFFFFFFFF, len_bits, max(chunks, 1), rows, 0, 0)
    entries = b"".join(struct.pack("<4I", d, s & 0xFFFFFFFF, t & 0xFFFFFFFF, 0)
                       for d, s, t in zip(outer, p.src_strides, p.dst_strides))
    return record + edges, entries, [gw, ge]


def dispatch(compute: Any, pipes: tuple[Any, Any], bind_group: Any, offsets: tuple[int, int],
             grids: list[tuple[int, int]]) -> None:
    """The part's two dispatches (``words`` skipped when its rows hold no whole vec4)."""
    if grids[0][0]:
        compute.set_pipeline(pipes[0])
        compute.set_bind_group(0, bind_group, [offsets[0]])
        compute.dispatch_workgroups(grids[0][0], grids[0][1], 1)
    compute.set_pipeline(pipes[1])
    compute.set_bind_group(0, bind_group, [offsets[1]])
    compute.dispatch_workgroups(grids[1][0], grids[1][1], 1)


