"""The indexed gather (gpu/render/indexed.py) bound to one table (gpu/indexed.py's gathers, and
the re-lay and target passes of gpu/scatter.py, gpu/scatter_bands.py): the
kernel's variant for the table's case (``variant``), the rows of its table
(lib/index_table.wgsl's Axis and Lookup) and its dispatch over a band of
the output, one window of the source at a time.
"""

from __future__ import annotations

from typing import Any

from .device import Gpu
from .engines.base import BufferUsage as U
from .index_table import Check, Index, Table
from .indexed_buffers import Buffers, launch
from .render.indexed import NO_BAD, gather
from .render.indices import LOOKUP, TABLE_AXIS


def variant(table: Table, raw: Index | None = None) -> str:
    """The kernel's variant (render/indexed.py's VARIANTS) for ``table``: the
    one specialized to its case; ``raw``: the one reading and checking these
    raw indices itself. Which code the table needs, not a speed choice."""
    if table.mode == 0:
        name = ("flat", "one")[len(table.lookups)] if len(table.lookups) < 2 else "lookups"
    else:
        name = "reverse" if table.mode == 1 else "circular"
    if raw is None:
        return name
    if name in ("flat", "circular"):
        raise ValueError(f"no checking kernel for a {name} table")
    return name + ("_i64" if raw.wide else "_i32")


class Gather:
    """The indexed gather bound to one source, index buffer and table."""

    def __init__(self, gpu: Gpu, bufs: Buffers, src: Any, norm: Any, table: Table, max_dim: int,
                 fused: tuple[Any, Any, Index, Check] | None = None) -> None:
        """``fused`` (raw index buffer, status buffer, index, check): the kernel
        reads and checks the raw indices itself; ``norm`` is then unused."""
        self.bufs, self.table, self.max_dim = bufs, table, max_dim
        self.render = render = gather(variant(table, fused[2] if fused else None))
        self.src, self.norm, self.fused = src, norm, fused
        if fused is None:
            self.raw, self.status, bounds = bufs.new("no raw indices", 16, U.STORAGE), bufs.new(
                "no status", 16, U.STORAGE), (0,)
        else:
            self.raw, self.status, bounds = fused[0], fused[1], fused[3].bounds
        m = 0xFFFFFFFF  # strides as two's complement u32 words
        blob = TABLE_AXIS.layout.pack_rows({"dim": d, "dstride": s & m, "istride": i & m}
                                           for d, s, i in zip(table.shape, table.data.strides, table.index.strides))
        blob += LOOKUP.layout.pack_rows({"stride": s & m, "ioff": o, "bound": bounds[t % len(bounds)], "claim": 0}
                                        for t, (s, o) in enumerate(table.lookups))
        blob = blob or bytes(16)
        self.axes = bufs.holding("axes", blob)

    def run(self, dst: Any, e0: int, count: int, bits: int, swap: int, offsets: bool = False,
            window: tuple[Any, int, int, bool] | None = None) -> None:
        """Fill ``dst`` with elements e0 .. e0+count of the table's output;
        with ``window`` (buffer, first source element, elements, rmw) only
        those whose source lies in that window of the source."""
        t, f = self.table, self.fused
        src, win0, wcount, rmw = window or (self.src, 0, NO_BAD, False)
        words = 0 if count == 0 else (count if offsets else (count * bits + 31) // 32)
        iswap, cmode, bound = (int(f[2].big), f[3].mode, f[3].bounds[0]) if f else (0, 0, 0)
        launch(self.bufs, self.render, words, self.render.schedule.words, self.max_dim, "gather params", dict(
            words=words, e0=e0, band=count, bits=32 if offsets else bits, swap=swap, rank=len(t.shape),
            nlook=len(t.lookups), mode=t.mode, rev_axis=t.time_axis if t.mode in (1, 2) else NO_BAD,
            rev_stride=t.time_stride & 0xFFFFFFFF, modulus=max(1, t.modulus), offsets=int(offsets), win0=win0,
            wcount=wcount, rmw=int(rmw), iswap=iswap, cmode=cmode, bound=bound,
        ), [src, self.norm, dst, None, self.axes, self.raw, self.status])
