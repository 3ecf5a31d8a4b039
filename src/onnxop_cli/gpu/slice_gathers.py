"""Gathers of whole slices (gpu/slices.py's plans), the kernels of
gpu/render/slices.py: GatherND's tables whose slices are whole words,
Gather's whose slices are whole 16-byte vectors.

- ``whole`` / ``windowed``: slices in vec4s, in any bands and windows (a
  window's run skips the slabs it does not hold), the indices checked as read
  or by the index check (gpu/render/indexed.py) before;
- gpu/nd_rows.py: GatherND's pairs of int64 over slices of 1-2 words, runs
  of 16 or 64 slices an invocation, large index tensors uploaded in bands;
- ``words``: the other whole-word slices, one band of one window, a tuple
  read per slice.

Moved out of gpu/indexed.py, which chooses among its kernels and calls ``run``.
"""

from __future__ import annotations

from typing import Any, Callable

from .device import Gpu
from .engines.base import BufferUsage as U
from .program import compiled, grid_x
from . import gather_windows, nd_rows, slices
from .indexed_buffers import Buffers, run_into_result, to_sink
from .render.slices import KERNELS

Sink = Callable[[memoryview], None]
NO_BAD = 0xFFFFFFFF  # as indexed.NO_BAD: a window that runs to the source's end


def uploads_own(cut: slices.Slices | None, index: Any, check: Any) -> bool:
    """Whether ``run`` uploads the raw indices itself (gpu/nd_rows.py's
    bands): the caller's fused tuple then holds no raw buffer."""
    return cut is not None and not cut.vec4() and nd_rows.uploads_own(nd_rows.plan(cut, check.mode), index.size // 2)


def run(gpu: Gpu, bufs: Buffers, windows: gather_windows.Windows, fused: tuple[Any, Any, Any, Any] | None,
        norm: Any, cut: slices.Slices, count: int, bits: int, band: int, sink: Sink, max_dim: int,
        poison: int | None, checked: Callable[[], None] | None) -> int:
    """Whole slices: in vec4s (``whole``, ``windowed``) in bands and windows, the
    indices checked as read (``fused``) or before (``norm``); in words
    (``words``) one band of one window, checked as read.
    ``checked`` raises BadIndex if the kernel found one (indexed._status);
    None when the index check (gpu/render/indexed.py) checked them before (``norm``)."""
    if cut.vec4():
        bufs.counts["slabs"] = 1
        slabs = _slabs(gpu, bufs, windows.first, cut, fused, norm, bits, max_dim)
        return gather_windows.run_bands(gpu, bufs, windows, slabs, count, bits, band, sink, poison, checked)
    raw, status, index, check = fused
    src = windows.first
    nbytes = (count * bits + 7) // 8
    words = nbytes // 4  # a whole number: every slice is
    pairs = nd_rows.plan(cut, check.mode)
    if pairs is not None:  # tuples of two int64, slices of 1-2 words: runs of 16 or 64 (gpu/nd_rows.py)
        dst = nd_rows.run(gpu, bufs, src, raw, status, pairs, words // cut.width, index, max_dim, poison)
        checked()
        return to_sink(gpu, bufs, dst, nbytes, sink)
    kernel = KERNELS["words"]
    dst = run_into_result(
        gpu, bufs, kernel, "slices", src=src, raw=raw, status=status, nbytes=nbytes, units=words,
        per=kernel.schedule.per, blob=cut.blob, max_dim=max_dim, poison=poison,
        params=lambda gx: cut.params(kernel.PARAMS, words, gx, index.big, check.mode))
    checked()
    return to_sink(gpu, bufs, dst, nbytes, sink)


SLAB_CHUNK = 64  # vectors per invocation of `windowed`: a slab's part outside is one test


def _slabs(gpu: Gpu, bufs: Buffers, src: Any, cut: slices.Slices, fused: tuple[Any, Any, Any, Any] | None,
           norm: Any, bits: int, max_dim: int) -> Callable[[Any, int, int, Any], None]:
    """The vec4 slab kernels bound to one table: the band function of gather_windows.run_bands,
    filling a band from the source (``whole``) or from one window of it (``windowed``)."""
    if fused is None:  # the index check (gpu/render/indexed.py) checked and wrapped them: the kernel reads its offsets
        raw, status, (iswap, cmode, normed) = norm, bufs.new("no status", 16, U.STORAGE), (0, 0, 1)
    else:
        raw, status, (iswap, cmode, normed) = fused[0], fused[1], (int(fused[2].big), fused[3].mode, 0)
    axes = bufs.new("axes", len(cut.blob), U.STORAGE | U.COPY_DST)
    gpu.queue.write_buffer(axes, 0, cut.blob)

    def run(dst: Any, e0: int, count: int, window: tuple[Any, int, int, bool] | None) -> None:
        vectors, first, source = count * bits // 128, e0 * bits // 128, src if window is None else window[0]
        variant, w0, wend, per = "windowed", 0, NO_BAD, SLAB_CHUNK  # bands of one buffer: the window is all of it
        if window is None and not normed:  # one band of one buffer, fused: `whole`, VECS a lane
            variant, wend, per = "whole", 0, KERNELS["whole"].schedule.per
        elif window is not None:  # a window starts on a whole vector: gather_windows.plan's are 128 elements
            w0 = window[1] * bits // 128
            wend = w0 + -(-window[2] * bits // 128)
        kernel = KERNELS[variant]
        if variant == "windowed":
            bufs.counts["windowed slab runs"] = bufs.counts.get("windowed slab runs", 0) + 1
        groups = -(-vectors // (kernel.schedule.wg * per))
        params = bufs.params("slab params", kernel.PARAMS.pack(
            words=vectors, groups_x=grid_x(groups, max_dim), width=cut.width // 4, outer=cut.outer,
            nlook=len(cut.blob) // 16 - cut.outer, iswap=iswap, cmode=cmode, normed=normed, first=first, win0=w0,
            wend=wend, chunk=per))
        program = compiled(gpu, kernel)
        encoder = gpu.device.create_command_encoder()
        program.dispatch(encoder, groups, max_dim, program.bind([source, dst, params, axes, raw, status]))
        gpu.queue.submit([encoder.finish()])

    return run
