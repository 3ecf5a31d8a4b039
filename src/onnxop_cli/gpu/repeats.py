"""Views that repeat their source (Expand's broadcast axes, Tile's copies:
an axis of stride 0) with rows contiguous in it, as one piece by runs.

The gather kernel (gpu/gather.py) computes every output element's source
address; such a view is rows of whole source rows, which
the pieces kernels by runs (gpu/render/piece_rows.py) copy as vec4 words (gpu/runs.py), each row
read once per repeat. Measured (benchmarks/ops_speed.py, Mesa 22.3, 2048^2
float32): Expand of a row 0.33-0.43x the gather kernel's transpose, Tile
2 x 2 0.20-0.57x on the gather kernel (see docs/operators.md#speed for the
figures by runs). Views without a stride-0 axis (Transpose, Slice, ...)
keep the gather kernel.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..core.pieces import Piece
from ..core.region import Access, c_strides, load
from . import runs
from .pieces import SLOTS, Source, run_pieces

ENABLED = True  # benchmarks and tests turn it off to compare with the gather kernel


def mover(gpu: Any, data: Any, view: Access, bits: int, swap: int) -> Optional[Callable[[Any], int]]:
    """A sink -> bytes mover by runs for ``view`` of ``data``, or None (the gather kernel's) where the
    view is not a repeat with contiguous rows."""
    if not ENABLED or swap or view.size == 0 or not 2 <= len(view.shape) <= SLOTS:
        return None
    if 0 not in view.strides[:-1] or view.strides[-1] != 1:
        return None
    p = Piece(tuple(view.shape), c_strides(tuple(view.shape)), 0, load(0, view.shape, view.strides, view.offset))
    if not runs.eligible(p, bits, swap, SLOTS, lambda: runs.short_rows(gpu)):
        return None
    return lambda sink: run_pieces(gpu, [Source(data)], sink, pieces=[p], count=view.size, bits=bits)
