"""ScatterElements with a reduction, a line of updates (or a few adjacent
lines, for 8- and 16-bit elements) per invocation: the kernels
gpu/render/scatter_lines.py renders, one per arithmetic and width (``Lines``).

gpu/scatter.py's ``_by_lines`` runs them: the lines in index order, so the
same bits as the rounds, with the arithmetic folded out of the loop and plain
loads and stores where each word is written by one invocation alone
(``group``); 8- and 16-bit lines that share words otherwise take the
compare-exchange kernel (``shared``).
"""

from __future__ import annotations

from typing import Any

from .device import Gpu
from .indexed_buffers import Buffers
from .program import Program, grid_x
from .render.scatter_lines import PARAMS, Lines

OFFSETS, CHECKED, RAW = 0, 1, 2  # what `targets` holds: data elements, checked indices, the raw int64 indices


def entry(bits: int, kind: str, cls: int, numpy_rule: bool) -> str | None:
    """The kernel's variant (one of VARIANTS) for a reduction ``kind`` on elements of ``bits`` of
    arithmetic class ``cls`` (scatter_apply.wgsl's: 0 unsigned, 1 signed, 2
    float, 3 bool, 4 bfloat16), or None: reduction none, float64 add or mul
    (no f64 in WGSL), or max/min by np.maximum's rule (ScatterND's; the
    kernel has Python's max())."""
    if kind not in ("add", "mul", "max", "min") or (numpy_rule and kind in ("max", "min")):
        return None
    adds = kind in ("add", "mul")
    if cls == 3:  # bool: add is or, mul is and; max and min those of 0 and 1
        return "b" + kind if adds else "u" + kind + "8"
    if cls == 4 or (cls == 2 and bits == 16):
        return ("bf" if cls == 4 else "h") + kind
    if cls == 2:
        return None if bits != 32 and (bits != 64 or adds) else "f" + kind + ("64" if bits == 64 else "")
    return ("i" if adds else "us"[cls]) + kind + ("" if bits == 32 else str(bits))


def group(bits: int, line: tuple[int, int], dlen: int) -> int | None:
    """Lines an invocation takes so that it alone writes their words: 1 for
    32- and 64-bit elements, and for narrower ones whose lines are whole
    words (the axis last, its length ``dlen`` a multiple of a word's
    elements); a word's elements when ``inner`` (the stride along the axis)
    is a multiple of them (that many adjacent lines share each word); else
    None (no data line length known, ``dlen`` 0, or lines that share words
    otherwise: the ``shared`` kernel, one line an invocation)."""
    per = 32 // bits if bits < 32 else 1
    inner = line[1]
    if per == 1:
        return 1
    if not dlen:
        return None
    if inner == 1 and dlen % per == 0:
        return 1
    return per if inner % per == 0 else None


def record(gpu: Gpu, bufs: Buffers, encoder: Any, kernel: Lines, buffers: tuple[Any, Any, Any, Any], count: int,
           line: tuple[int, int], lines: int, max_dim: int, how: tuple[int, int, int, int, int, int]) -> None:
    """Record on ``encoder`` ``kernel`` over ``count`` lines of ``line``
    (updates per line, their stride), ``lines`` an invocation (``group``).
    ``buffers``: (targets, updates, data, status); ``how``: (mode: OFFSETS,
    CHECKED or RAW; the data's axis length (0 with OFFSETS); 1 for
    big-endian raw indices; their check mode; the host's default NaN;
    nan_first)."""
    targets, upd, out, status = buffers
    mode, dlen, big, cmode, default_nan, nan_first = how
    length, inner = line
    invocations = count // lines
    groups = -(-invocations // kernel.schedule.wg)
    params = bufs.params("line params", PARAMS.pack(
        count=invocations, groups_x=grid_x(groups, max_dim), mode=mode, default_nan=default_nan,
        nan_first=nan_first, line=length, inner=inner, dlen=dlen, iswap=big, cmode=cmode, group=lines))
    program = Program(kernel.label, kernel.kinds, code=kernel.wgsl()).on(gpu)
    bufs.counts["shared lines" if kernel.shared else "word lines"] = 1  # tests look
    program.dispatch(encoder, groups, max_dim, program.bind([targets, params, upd, out, status, targets]))
