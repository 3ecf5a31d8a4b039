"""ReverseSequence by whole-word blocks (gpu/render/reverse.py): where
the data is row-major and each (batch, time) step's inner block is a whole
number of 32-bit words, the output is copied a word at a time, each
invocation reading its batch entry's length once and stepping by adds,
instead of the element kernel's table walk and length read per element.
Plain planning here; gpu/indexed.py dispatches it for one band of one
window, its raw int64 lengths checked as they are read (nothing reaches
the sink if one is bad).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .index_table import Table, row_strides
from .indexed_buffers import run_into_result
from .render.reverse import PARAMS, REVERSE


@dataclass(frozen=True)
class Runs:
    width: int  # words per (axis 0, axis 1) block
    d0: int
    d1: int
    time0: bool  # the time axis is axis 0

    def params(self, words: int, groups_x: int, big: bool, bound: int) -> bytes:
        return PARAMS.pack(words=words, groups_x=groups_x, width=self.width, d0=self.d0, d1=self.d1,
                    time0=int(self.time0), iswap=int(big), bound=bound)


def plan(table: Table, bits: int) -> Runs | None:
    """The block plan of a ReverseSequence ``table`` (``extra["runs"]``) for
    elements of ``bits``, or None: the data not row-major, or its inner block
    not whole words."""
    if table.mode != 1 or not table.extra.get("runs") or table.size == 0 or len(table.shape) < 2:
        return None
    shape = table.shape
    if any(s != r for s, r, d in zip(table.data.strides, row_strides(shape), shape) if d > 1):
        return None
    block = math.prod(shape[2:]) * bits
    if block % 32:
        return None
    return Runs(block // 32, shape[0], shape[1], table.time_axis == 0)


def run(gpu, bufs, src, raw, status, runs: Runs, nbytes: int, big: bool, bound: int, max_dim: int,
        poison: int | None):
    """Dispatch the kernel over ``nbytes`` of output (whole words) into a
    result buffer of ``bufs``, returned; the caller reads ``status`` before
    anything reaches a sink."""
    return run_into_result(gpu, bufs, REVERSE, "runs", src=src, raw=raw, status=status, nbytes=nbytes,
                           units=nbytes // 4, per=REVERSE.schedule.words, max_dim=max_dim, poison=poison,
                           params=lambda gx: runs.params(nbytes // 4, gx, big, bound))
