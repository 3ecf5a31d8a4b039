"""ScatterElements with a reduction on 32- and 64-bit elements (float32,
int32, uint32, int64, uint64, float64), a line of updates per invocation:
shaders/scatter_lines.wgsl.

gpu/scatter.py's ``_by_lines`` chooses it over scatter_apply.wgsl's
``lines`` (every width, atomics on every element, the arithmetic chosen per
update): the same lines in the same index order, so the same bits, with one
entry per arithmetic and width (folded out of the loop) and plain loads and
stores (an element of whole words is written by its line alone).
"""

from __future__ import annotations

import struct
from typing import Any

from .device import Gpu
from .indexed_buffers import _Buffers, _bind, _dispatch, _grid_x, _pipeline, U
from .kernels import shader_const

LINES = "scatter_lines.wgsl"
OFFSETS, CHECKED, RAW = 0, 1, 2  # what `targets` holds: data elements, checked indices, the raw int64 indices
KINDS = ("read-only-storage", "uniform", "read-only-storage", "storage", "storage", "read-only-storage")


def entry(bits: int, kind: str, cls: int, numpy_rule: bool) -> str | None:
    """The kernel's entry for a reduction ``kind`` on elements of ``bits`` of
    arithmetic class ``cls`` (scatter_apply.wgsl's: 0 unsigned, 1 signed, 2
    float), or None: another width or class, reduction none, float64 add or
    mul (no f64 in WGSL), or max/min by np.maximum's rule (ScatterND's; the
    kernel has Python's max())."""
    if bits not in (32, 64) or cls > 2 or kind not in ("add", "mul", "max", "min") or (
            numpy_rule and kind in ("max", "min")):
        return None
    wide = "64" if bits == 64 else ""
    if kind in ("add", "mul"):
        return None if cls == 2 and wide else "lines_" + ("f" if cls == 2 else "i") + kind + wide
    return "lines_" + "usf"[cls] + kind + wide


def record(gpu: Gpu, bufs: _Buffers, encoder: Any, name: str, buffers: tuple[Any, Any, Any, Any], count: int,
           line: tuple[int, int], max_dim: int, how: tuple[int, int, int, int, int, int]) -> None:
    """Record on ``encoder`` the entry ``name`` over ``count`` lines of
    ``line`` (updates per line, their stride). ``buffers``: (targets,
    updates, data, status); ``how``: (mode: OFFSETS, CHECKED or RAW; the
    data's axis length (0 with OFFSETS); 1 for big-endian raw indices;
    their check mode; the host's default NaN; nan_first)."""
    targets, upd, out, status = buffers
    mode, dlen, big, cmode, default_nan, nan_first = how
    length, inner = line
    groups = -(-count // shader_const(LINES, "WG"))
    params = bufs.new("word line params", 48, U.UNIFORM | U.COPY_DST)
    gpu.queue.write_buffer(params, 0, struct.pack("<12I", count, _grid_x(groups, max_dim), mode, default_nan,
                                                  nan_first, length, inner, dlen, big, cmode, 0, 0))
    pipeline, layout = _pipeline(gpu, LINES, KINDS, name)
    bufs.counts["word lines"] = 1  # tests look
    _dispatch(gpu, encoder, pipeline, _bind(gpu, layout, [targets, params, upd, out, status, targets]), groups,
              max_dim)
