"""Run an output's pieces (core/pieces.py, planned by ops/tensor_op.py) through gpu/render/pieces.py's kernels.

    for each band of the output (at most one binding):
        clear dst; for each piece (cut to the band, and to windows of its
        sources that fit one binding): upload the windows, one dispatch
        readback dst --sink-->

The sink sees the output in order, band by band, as with the gather kernel
(gpu/gather.py); host and GPU memory are a few buffers of at most one binding
whatever the sizes. A piece's source is any input (so Concat of 300 inputs
binds two buffers, not 300), and the window uploaded is only the part the
piece reads. Cutting is pure index arithmetic (core/pieces.py's ``cut``, ``fit``); the run's
buffers, uploads and dispatches are gpu/pieces_run.py's ``Run``. A part
whose innermost axis is contiguous in its source and in dst runs by runs
(gpu/runs.py: whole words) in the same pass.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..core.pieces import Piece, cut, extent, fit
from . import runs
from .buffers import WORD, binding_limit, env_poison, round_up
from .device import Gpu
from .pieces_run import SLOTS, Run, Sink, Source, mappable

__all__ = ["BAND", "DEFAULT_BAND", "SLOTS", "Run", "Runs", "Sink", "Source", "mappable", "one_kernel_bands",
           "run_pieces"]

DEFAULT_BAND = 64 << 20  # bytes of a window at most (and of a band, below BAND)
# Bands of at most 16 MiB, as Where's select's (gpu/elementwise.py): Pad's 64 MiB float32 output (one
# band of 64 MiB against four) ran at 2.0-2.3x the gather kernel's GB/s against 4.4-4.7x, Concat's 2.6-2.8x
# against 2.6-3.4x
# (Mesa 22.3, load 3.6-3.8, benchmarks/ops_whole_process.py kernel, 2026-12-01)
BAND = 16 << 20


class Runs:
    """The runs of one node's outputs, kept for the next output that needs
    the same buffers (Split's outputs, one run each: 8 outputs of 2 MiB
    spent a fifth of the call making and clearing the same six buffers and
    bind group 8 times). The caller holds it for one call under the engine's
    lock and releases it once (``release``); a run is reused only whole
    (same band, windows and kernels), and each band clears its dst first, so
    nothing of one output reaches the next."""

    def __init__(self) -> None:
        self.kept: dict[tuple, Run] = {}
        self.made = 0

    def get(self, key: tuple, make) -> Run:
        run = self.kept.get(key)
        if run is None:
            run = self.kept[key] = make()
            self.made += 1
        return run

    def release(self) -> None:
        for run in self.kept.values():
            run.release()
        self.kept.clear()


def run_pieces(
    gpu: Gpu,
    sources: Sequence[Optional[Source]],
    sink: Sink,
    *,
    pieces: Sequence[Piece],
    count: int,
    bits: int,
    binding_bytes: Optional[int] = None,
    max_groups_per_dim: Optional[int] = None,
    poison: Optional[int] = None,
    reuse: Optional[Runs] = None,
) -> int:
    """Stream the ``count`` output elements (``bits`` wide) that ``pieces``
    tile into ``sink``, in order; returns the bytes written. ``reuse``: the
    node's other outputs' runs (``Runs``), which then keeps this one too."""
    if count == 0:
        return 0
    cap, band_bytes = one_kernel_bands(gpu, binding_bytes, count, bits, BAND)
    band = band_bytes * 8 // bits
    # each band's parts (the pieces cut to it); windows as large as the largest part reads (plus a
    # word each side), at most one binding: a window sized for a whole piece (Pad's 64 MiB source,
    # read a 16 MiB band at a time) cost its first touch (Mesa 25: 0.16 s against 0.06 s)
    bands = [(start, min(band, count - start)) for start in range(0, count, band)]
    pieces = [runs.flatten(p) for p in pieces]  # a fill of the whole output: one long row
    cuts = [[c for p in pieces for c in cut(p, start, start + n)] for start, n in bands]
    reach = max([extent(c, bits) for parts in cuts for c in parts] + [0])
    window_bytes = min(cap, round_up(reach + 2 * WORD, 16))  # whole vec4s for gpu/runs.py
    if poison is None:
        poison = env_poison()
    masked = any(p.mask is not None for p in pieces)
    selects = any(p.other is not None for p in pieces)
    mapped = mappable(gpu, sources, sink)
    def make() -> Run:
        return Run(gpu, band_bytes, window_bytes, max_groups_per_dim, masked, selects, mapped=mapped,
                   by_runs=runs.usable(band_bytes, window_bytes))

    key = (band_bytes, window_bytes, max_groups_per_dim, masked, selects, mapped)
    run = make() if reuse is None else reuse.get(key, make)
    written = 0
    try:
        for (start, n), band_cuts in zip(bands, cuts):
            nbytes = (n * bits + 7) // 8
            parts = [q for c in band_cuts for q in fit(c, run.window_elements(bits))]
            run.band(sources, parts, bits, round_up(nbytes, 4), poison)
            run.drain(sink, nbytes)
            written += nbytes
    finally:
        if reuse is None:
            run.release()
    return written


def one_kernel_bands(gpu: Gpu, binding_bytes: Optional[int], count: int, bits: int, most: int) -> tuple[int, int]:
    """(window cap, band bytes) of a run over ``count`` elements of ``bits``
    (run_pieces; one kernel: gpu/elementwise.py's run_select, gpu/one_hot.py): windows of at most
    one binding (``binding_bytes`` forces smaller), bands of at most ``most``
    bytes and no more than the output, whole words each."""
    cap = min(binding_bytes or DEFAULT_BAND, binding_limit(gpu))
    cap = max(WORD, cap - cap % WORD)
    return cap, min(cap, most, round_up((count * bits + 7) // 8, WORD))
