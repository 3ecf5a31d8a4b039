"""ScatterElements with a reduction, a line of updates (or a few adjacent
lines, for 8- and 16-bit elements) per invocation: shaders/scatter_lines.wgsl.

gpu/scatter.py's ``_by_lines`` chooses it over scatter_apply.wgsl's
``lines`` (every width, atomics on every element, the arithmetic chosen per
update): the same lines in the same index order, so the same bits, with one
kernel per arithmetic and width (its constants OP and BITS, folded out of the
loop; ``VARIANTS`` by name) and plain loads and stores (each word is written
by one invocation alone: ``group``).
"""

from __future__ import annotations

from typing import Any

from .device import Gpu
from .indexed_buffers import Buffers
from .kernels import shader_const
from .program import Program, grid_x
from .layout import pack

LINES = "scatter_lines.wgsl"
OFFSETS, CHECKED, RAW = 0, 1, 2  # what `targets` holds: data elements, checked indices, the raw int64 indices
KINDS = ("read-only-storage", "uniform", "read-only-storage", "storage", "storage", "read-only-storage")
# the kernel's variants by name: (its arithmetic, a constant of scatter_lines.wgsl; the element width)
VARIANTS = {
    "fadd": ("FADD", 32), "fmul": ("FMUL", 32), "iadd": ("IADD", 32), "imul": ("IMUL", 32),
    "fmax": ("FMAX", 32), "fmin": ("FMIN", 32), "smax": ("SMAX", 32), "smin": ("SMIN", 32),
    "umax": ("UMAX", 32), "umin": ("UMIN", 32),
    "iadd64": ("IADD", 64), "imul64": ("IMUL", 64), "smax64": ("SMAX", 64), "smin64": ("SMIN", 64),
    "umax64": ("UMAX", 64), "umin64": ("UMIN", 64), "fmax64": ("FMAX", 64), "fmin64": ("FMIN", 64),
    "iadd16": ("IADD", 16), "imul16": ("IMUL", 16), "smax16": ("SMAX", 16), "smin16": ("SMIN", 16),
    "umax16": ("UMAX", 16), "umin16": ("UMIN", 16),
    "iadd8": ("IADD", 8), "imul8": ("IMUL", 8), "smax8": ("SMAX", 8), "smin8": ("SMIN", 8),
    "umax8": ("UMAX", 8), "umin8": ("UMIN", 8),
    "badd": ("BADD", 8), "bmul": ("BMUL", 8),
    "hadd": ("HADD", 16), "hmul": ("HMUL", 16), "hmax": ("HMAX", 16), "hmin": ("HMIN", 16),
    "bfadd": ("BFADD", 16), "bfmul": ("BFMUL", 16), "bfmax": ("BFMAX", 16), "bfmin": ("BFMIN", 16),
}


def constants(name: str) -> dict[str, int]:
    """The shader's constants for the variant ``name`` (a key of VARIANTS)."""
    op, bits = VARIANTS[name]
    return {"OP": shader_const(LINES, op), "BITS": bits}


def entry(bits: int, kind: str, cls: int, numpy_rule: bool) -> str | None:
    """The kernel's variant (a key of VARIANTS) for a reduction ``kind`` on elements of ``bits`` of
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
    otherwise: scatter_apply.wgsl's compare-exchange)."""
    per = 32 // bits if bits < 32 else 1
    inner = line[1]
    if per == 1:
        return 1
    if not dlen:
        return None
    if inner == 1 and dlen % per == 0:
        return 1
    return per if inner % per == 0 else None


def record(gpu: Gpu, bufs: Buffers, encoder: Any, name: str, buffers: tuple[Any, Any, Any, Any], count: int,
           line: tuple[int, int], lines: int, max_dim: int, how: tuple[int, int, int, int, int, int]) -> None:
    """Record on ``encoder`` the variant ``name`` over ``count`` lines of
    ``line`` (updates per line, their stride), ``lines`` an invocation
    (``group``). ``buffers``: (targets,
    updates, data, status); ``how``: (mode: OFFSETS, CHECKED or RAW; the
    data's axis length (0 with OFFSETS); 1 for big-endian raw indices;
    their check mode; the host's default NaN; nan_first)."""
    targets, upd, out, status = buffers
    mode, dlen, big, cmode, default_nan, nan_first = how
    length, inner = line
    invocations = count // lines
    groups = -(-invocations // shader_const(LINES, "WG"))
    params = bufs.params("word line params", pack(LINES, count=invocations, groups_x=grid_x(groups, max_dim), mode=mode,
                                           default_nan=default_nan, nan_first=nan_first, line=length, inner=inner,
                                           dlen=dlen, iswap=big, cmode=cmode, group=lines))

    kernel = Program(LINES, KINDS, constants(name)).on(gpu)
    bufs.counts["word lines"] = 1  # tests look
    kernel.dispatch(encoder, groups, max_dim, kernel.bind([targets, params, upd, out, status, targets]))
